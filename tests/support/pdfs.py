"""PDFs made in memory for the attachment tests: pages with a text layer, blank pages
(a scan has no text layer), an encrypted one, and one that inflates far beyond its size."""

from __future__ import annotations

import io
import zlib

from pypdf import PdfWriter
from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject, StreamObject


def _font(writer: PdfWriter) -> DictionaryObject:
    helvetica = DictionaryObject(
        {
            NameObject("/Type"): NameObject("/Font"),
            NameObject("/Subtype"): NameObject("/Type1"),
            NameObject("/BaseFont"): NameObject("/Helvetica"),
        }
    )
    return DictionaryObject(
        {NameObject("/Font"): DictionaryObject({NameObject("/F1"): writer._add_object(helvetica)})}
    )


def _escaped(line: str) -> str:
    return line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def pdf_bytes(pages: list[str], *, password: str | None = None) -> bytes:
    """A PDF whose pages hold these lines of text (an empty string: a page with no text)."""
    writer = PdfWriter()
    for text in pages:
        page = writer.add_blank_page(612, 792)
        if text:
            page[NameObject("/Resources")] = _font(writer)
            stream = DecodedStreamObject()
            stream.set_data(f"BT /F1 12 Tf 72 720 Td ({_escaped(text)}) Tj ET".encode("latin-1"))
            page[NameObject("/Contents")] = writer._add_object(stream)
    if password is not None:
        writer.encrypt(password, algorithm="RC4-128")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def inflating_pdf(megabytes: int = 200) -> bytes:
    """One page whose content stream inflates from a few hundred KB to ``megabytes`` MB
    (a compression bomb)."""
    writer = PdfWriter()
    page = writer.add_blank_page(612, 792)
    stream = StreamObject()
    stream._data = zlib.compress(b" " * (megabytes * 1024 * 1024), 9)
    stream[NameObject("/Filter")] = NameObject("/FlateDecode")
    page[NameObject("/Contents")] = writer._add_object(stream)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()
