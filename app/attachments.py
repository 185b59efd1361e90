"""What a message may carry: an upload (an image, a text, Markdown or PDF file), an image
URL pasted into it, and how long it may be (``too_long``).

An image ends as a file in the store's media folder whose path goes to ``stream_turn`` as
the user message's ``image_path`` — one pipeline for uploads and pasted URLs. A text,
Markdown or PDF file goes in as text: ``take_upload`` reads a capped excerpt of it
(``MAX_EXCERPT_CHARS``; a PDF's text layer through pypdf, at most ``MAX_PDF_PAGES``
pages, counted before any page is read), kept with the user message (``Attachment.meta``)
so the replayed history and a reload both have it. Every upload is checked by its bytes
(not its name) before the message is sent, and a refusal is one sentence for the person
(``AttachmentError``). ``pasted_image`` finds an image URL in the text (in time linear
in the message) and fetches it with image_analyze's downloader, limits and cache.
docs/app.md.
"""

from __future__ import annotations

import asyncio
import io
import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

import httpx
from pypdf import PdfReader
from pypdf.errors import PyPdfError

from config.settings import Settings
from graph.context import Context
from tools.image_analyze import image_analyze
from tools.images import NotAnImage, human_size, inspect_image, media_path, write_image
from tools.net import describe_http_error, guarded_client, request_timeout, url_problem

log = logging.getLogger("companion.attachments")

IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".gif", ".webp")
# Longer tokens are not taken for URLs: a pasted link is far shorter, and the work per token
# stays small.
MAX_URL_CHARS = 2048
# Characters that end a URL in pasted text: brackets and quotes around it.
_URL_BOUNDARY = re.compile(r"[<>()\"']")
_SCHEME = re.compile(r"https?://", re.IGNORECASE)
# Sentence punctuation after a URL belongs to the sentence: "see …/cat.jpg."
TRAILING_PUNCTUATION = ".,;:!?"
# Links without an image name that are asked for their content type, per message.
MAX_PROBED_LINKS = 3
# The caps on an upload, stated in the refusals and in docs/app.md.
MAX_FILE_BYTES = 10 * 1024 * 1024
MAX_PDF_PAGES = 50
MAX_EXCERPT_CHARS = 20_000  # of a file's text, into the context with its message
# The bundled model reads 8,192 tokens at a time (providers.llama_server), its prompt and
# history included: a message, or a file's excerpt, for it is shorter.
LOCAL_MESSAGE_CHARS = 12_000
LOCAL_EXCERPT_CHARS = 4_000
READ_SECONDS = 20.0  # a file that takes longer to read is refused
TEXT_EXTENSIONS = (".txt", ".md", ".markdown")
PDF_MAGIC = b"%PDF-"
BLANK_LINES = re.compile(r"\n[ \t]*(?:\n[ \t]*){2,}")  # three or more line breaks
ACCEPTED = (
    "Only images, text, Markdown and PDF files can be attached: PNG, JPEG, WebP, GIF, "
    ".txt, .md, .pdf (up to 10 MB; a PDF up to 50 pages; the first 20,000 characters of "
    "a file's text go to Companion)."
)
NOT_ACCEPTED = "“{name}” can't be attached. " + ACCEPTED
NOT_AN_IMAGE = "“{name}” is not an image Companion can read. " + ACCEPTED
TOO_BIG = "“{name}” is {size}: files up to 10 MB can be attached."
TOO_MANY_PAGES = "“{name}” has {pages} pages: PDFs up to 50 pages can be attached."
NO_TEXT_LAYER = (
    "“{name}” has no text to read (a scan or pictures only): attach its pages as images instead."
)
ENCRYPTED = "“{name}” is password-protected: remove the password and attach it again."
DAMAGED = "“{name}” could not be read as a PDF: the file is damaged or not a PDF."
NOT_UTF8 = "“{name}” is not UTF-8 text: save it as UTF-8 and attach it again."
EMPTY = "“{name}” is empty."
TOO_SLOW = "“{name}” took too long to read (over 20 s): attach a smaller file."
UNREADABLE = "“{name}” could not be read: {why}."
TOO_LONG = (
    "That message is {length:,} characters long; the limit is {limit:,}{why}. Shorten it, "
    "send it in parts, or attach it as a .txt file (its first {excerpt:,} characters go "
    "to Companion)."
)
LOCAL_WHY = " for the small bundled model (a capable model in Settings reads more)"
SET_WHY = " (COMPANION_MAX_MESSAGE_CHARS)"


class AttachmentError(Exception):
    """An upload that cannot be attached; the message is shown to the user as it is."""


@dataclass(frozen=True)
class Attachment:
    """An upload that can go with a message: an image saved in the media folder, or the
    capped text of a text, Markdown or PDF file."""

    name: str  # the file's name as the person chose it
    kind: Literal["image", "text", "pdf"]
    image_path: str | None = None  # an image's copy in the media folder
    excerpt: str = ""  # a file's text, at most MAX_EXCERPT_CHARS
    cut: bool = False  # the file's text was longer than the excerpt
    pages: int = 0  # a PDF's page count

    def meta(self) -> dict[str, Any]:
        """What the user message keeps of it (``Message.meta``; an image's path is the
        message's ``image_path``)."""
        kept: dict[str, Any] = {"name": self.name, "kind": self.kind}
        if self.kind != "image":
            kept.update(excerpt=self.excerpt, cut=self.cut)
        if self.kind == "pdf":
            kept["pages"] = self.pages
        return {"attachment": kept}


def image_url_in(text: str) -> str | None:
    """The first http(s) URL in ``text`` that names an image file, or None."""
    return next((url for url in urls_in(text) if _has_image_extension(url)), None)


def urls_in(text: str) -> Iterator[str]:
    """The http(s) URLs in ``text``, in order, without the punctuation that ends a sentence."""
    for token in (text or "").split():
        if len(token) > MAX_URL_CHARS:
            continue
        for piece in _URL_BOUNDARY.split(token):
            start = _SCHEME.search(piece)
            if start is None:
                continue
            url = piece[start.start() :].rstrip(TRAILING_PUNCTUATION)
            try:
                netloc = urlsplit(url).netloc
            except ValueError:  # e.g. an unclosed IPv6 bracket
                continue
            if netloc:
                yield url


def _has_image_extension(url: str) -> bool:
    return urlsplit(url).path.lower().endswith(IMAGE_EXTENSIONS)


async def serves_image(url: str, settings: Settings) -> bool:
    """Whether ``url`` answers with an image (by its content type), through the guarded
    client: for a pasted link whose name does not say. Only the headers are read."""
    if url_problem(url):
        return False
    try:
        async with (
            guarded_client(
                settings, timeout=request_timeout(settings), headers={"Accept": "image/*"}
            ) as client,
            client.stream("GET", url) as response,
        ):
            kind = response.headers.get("content-type", "")
            return response.status_code == 200 and kind.lower().startswith("image/")
    except httpx.HTTPError as exc:
        # A link that cannot be read is left in the text as a link, not an attachment.
        log.info("not attaching %s: %s", url, describe_http_error(exc, "the link"))
        return False


def save_upload(upload: str | Path, media_dir: Path) -> str:
    """Copy an uploaded image into the media folder (named by its content, keyed by the
    person's secret); its path."""
    name = Path(upload).name
    data = _read(Path(upload))
    return _saved_image(data, name, media_dir)


def _read(upload: Path) -> bytes:
    """An upload's bytes, refused over MAX_FILE_BYTES before they are read."""
    try:
        size = upload.stat().st_size
        if size > MAX_FILE_BYTES:
            raise AttachmentError(TOO_BIG.format(name=upload.name, size=human_size(size)))
        return upload.read_bytes()
    except OSError as exc:
        log.info("could not read the upload %s: %s", upload.name, exc)
        raise AttachmentError(
            UNREADABLE.format(name=upload.name, why=exc.strerror or "no such file")
        ) from exc


def _saved_image(data: bytes, name: str, media_dir: Path) -> str:
    try:
        info = inspect_image(data)
    except NotAnImage as exc:
        log.info("refused the upload %s: %s", name, exc)
        raise AttachmentError(NOT_AN_IMAGE.format(name=name)) from exc
    path = media_path(data, media_dir, info.extension)
    if not path.is_file():
        write_image(data, path)
    return str(path)


def read_upload(
    upload: str | Path, media_dir: Path, max_chars: int = MAX_EXCERPT_CHARS
) -> Attachment:
    """What an upload attaches, told by its bytes: an image (saved), a PDF or a text file
    (at most ``max_chars`` of its text); anything else raises AttachmentError. Blocking:
    see take_upload."""
    path = Path(upload)
    name = path.name
    data = _read(path)
    if data.lstrip()[:5] == PDF_MAGIC:
        return pdf_attachment(data, name, max_chars)
    if name.lower().endswith(TEXT_EXTENSIONS):
        return text_attachment(data, name, max_chars)
    if name.lower().endswith(IMAGE_EXTENSIONS) or _looks_like_image(data):
        return Attachment(name, "image", image_path=_saved_image(data, name, media_dir))
    log.info("refused the upload %s: not an accepted kind of file", name)
    raise AttachmentError(NOT_ACCEPTED.format(name=name))


async def take_upload(upload: str | Path, media_dir: Path, settings: Settings) -> Attachment:
    """``read_upload`` in a worker thread, refused after READ_SECONDS: reading a PDF is
    work in proportion to the file, kept off the event loop. The bundled model gets a
    shorter excerpt (``LOCAL_EXCERPT_CHARS``)."""
    max_chars = LOCAL_EXCERPT_CHARS if settings.is_local else MAX_EXCERPT_CHARS
    try:
        return await asyncio.wait_for(
            asyncio.to_thread(read_upload, upload, media_dir, max_chars), READ_SECONDS
        )
    except TimeoutError as exc:
        log.warning("gave up reading the upload %s after %s s", Path(upload).name, READ_SECONDS)
        raise AttachmentError(TOO_SLOW.format(name=Path(upload).name)) from exc


def _looks_like_image(data: bytes) -> bool:
    try:
        inspect_image(data)
    except NotAnImage:
        return False
    return True


def excerpt(text: str, max_chars: int = MAX_EXCERPT_CHARS) -> tuple[str, bool]:
    """A file's text as it goes to the model: at most ``max_chars`` (and whether it was
    cut), without NUL characters and runs of blank lines."""
    text = BLANK_LINES.sub("\n\n", text.replace("\x00", "")).strip()
    if len(text) <= max_chars:
        return text, False
    return text[:max_chars], True


def text_attachment(data: bytes, name: str, max_chars: int = MAX_EXCERPT_CHARS) -> Attachment:
    """A .txt or .md file's capped text; refused when it is not UTF-8 text or is empty."""
    if b"\x00" in data:
        raise AttachmentError(NOT_UTF8.format(name=name))
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise AttachmentError(NOT_UTF8.format(name=name)) from exc
    kept, cut = excerpt(text, max_chars)
    if not kept:
        raise AttachmentError(EMPTY.format(name=name))
    return Attachment(name, "text", excerpt=kept, cut=cut)


def pdf_attachment(data: bytes, name: str, max_chars: int = MAX_EXCERPT_CHARS) -> Attachment:
    """A PDF's text layer, capped: its pages are counted first (over MAX_PDF_PAGES it is
    refused before one is read), then read one by one until ``max_chars`` are taken.
    pypdf bounds what one stream may inflate to (a compression bomb is an error)."""
    try:
        reader = PdfReader(io.BytesIO(data), strict=False)
        if reader.is_encrypted:
            raise AttachmentError(ENCRYPTED.format(name=name))
        pages = len(reader.pages)
        if pages > MAX_PDF_PAGES:
            raise AttachmentError(TOO_MANY_PAGES.format(name=name, pages=f"{pages:,}"))
        texts: list[str] = []
        taken = 0
        for page in reader.pages:
            if taken > max_chars:
                break
            text = page.extract_text() or ""
            texts.append(text)
            taken += len(text)
    except AttachmentError:
        raise
    except (PyPdfError, ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
        # pypdf raises more than its own errors on a damaged file.
        log.info("could not read the PDF %s: %s: %s", name, type(exc).__name__, exc)
        raise AttachmentError(DAMAGED.format(name=name)) from exc
    kept, cut = excerpt("\n\n".join(texts), max_chars)
    if not kept:
        raise AttachmentError(NO_TEXT_LAYER.format(name=name))
    return Attachment(name, "pdf", excerpt=kept, cut=cut or taken > max_chars, pages=pages)


async def fetch_image_url(url: str, ctx: Context, session_id: str) -> str:
    """Download a pasted image URL into the media folder (image_analyze's limits); its path."""
    result = await image_analyze({"reference": url}, ctx.tool_context(session_id))
    if "error" in result:
        raise AttachmentError(f"could not load the image at {url}: {result['error']}")
    return str(result["image_path"])


async def pasted_image(ctx: Context, session_id: str, text: str) -> str | None:
    """The image a message's text links to, saved in the media folder: the first URL
    named like an image, else the first of a few links that serves one; else None."""
    url = image_url_in(text)
    if url is not None:
        return await fetch_image_url(url, ctx, session_id)
    for link in islice(urls_in(text), MAX_PROBED_LINKS):
        if await serves_image(link, ctx.settings):
            return await fetch_image_url(link, ctx, session_id)
    return None


def too_long(text: str, settings: Settings) -> str | None:
    """Why a message cannot be sent as it is (longer than the limit the model in use
    takes: ``max_message_chars``, less for the bundled model), or None. The message stays
    in the composer."""
    limit, why = settings.max_message_chars, SET_WHY
    if settings.is_local and limit > LOCAL_MESSAGE_CHARS:
        limit, why = LOCAL_MESSAGE_CHARS, LOCAL_WHY
    if len(text) <= limit:
        return None
    excerpt_chars = LOCAL_EXCERPT_CHARS if settings.is_local else MAX_EXCERPT_CHARS
    return TOO_LONG.format(length=len(text), limit=limit, why=why, excerpt=excerpt_chars)
