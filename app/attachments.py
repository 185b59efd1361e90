"""Images a user sends: an upload, or an image URL pasted into the message.

Both end as a file in the store's media folder whose path goes to ``stream_turn`` as the
user message's ``image_path`` — one pipeline. Uploads are checked by their bytes (not
their name); URLs are fetched by image_analyze's downloader, with its size, type, time
and private-address limits, and its cache.

Finding a pasted URL takes time linear in the message: the text is split on whitespace,
tokens longer than any URL we would fetch are skipped, and each token is read with string
operations only (a backtracking pattern over a long run of ``http://`` took seconds).
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from urllib.parse import urlsplit

from graph.context import Context
from tools.image_analyze import image_analyze
from tools.images import NotAnImage, inspect_image, write_image

IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".gif", ".webp")
# Longer tokens are not taken for URLs: a pasted link is far shorter, and the work per token
# stays small.
MAX_URL_CHARS = 2048
# Characters that end a URL in pasted text: brackets and quotes around it.
_URL_BOUNDARY = re.compile(r"[<>()\"']")
_SCHEME = re.compile(r"https?://", re.IGNORECASE)
# Sentence punctuation after a URL belongs to the sentence: "see …/cat.jpg."
TRAILING_PUNCTUATION = ".,;:!?"


class AttachmentError(Exception):
    """An image that cannot be attached; the message is shown to the user."""


def image_url_in(text: str) -> str | None:
    """The first http(s) URL in ``text`` that names an image file, or None."""
    for token in (text or "").split():
        if len(token) <= MAX_URL_CHARS:
            url = _image_url_in_token(token)
            if url is not None:
                return url
    return None


def _image_url_in_token(token: str) -> str | None:
    for piece in _URL_BOUNDARY.split(token):
        start = _SCHEME.search(piece)
        if start is None:
            continue
        url = piece[start.start() :].rstrip(TRAILING_PUNCTUATION)
        try:
            parts = urlsplit(url)
        except ValueError:  # e.g. an unclosed IPv6 bracket
            continue
        if parts.netloc and parts.path.lower().endswith(IMAGE_EXTENSIONS):
            return url
    return None


def save_upload(upload: str | Path, media_dir: Path) -> str:
    """Copy an uploaded image into the media folder (named by its content); its path."""
    try:
        data = Path(upload).read_bytes()
    except OSError as exc:
        raise AttachmentError(f"could not read the upload: {exc.strerror or exc}") from exc
    try:
        info = inspect_image(data)
    except NotAnImage as exc:
        raise AttachmentError(f"that file is not an image I can use: {exc}") from exc
    path = media_dir / f"{hashlib.sha256(data).hexdigest()}.{info.extension}"
    if not path.is_file():
        write_image(data, path)
    return str(path)


async def fetch_image_url(url: str, ctx: Context, session_id: str) -> str:
    """Download a pasted image URL into the media folder (image_analyze's limits); its path."""
    result = await image_analyze({"reference": url}, ctx.tool_context(session_id))
    if "error" in result:
        raise AttachmentError(f"could not load the image at {url}: {result['error']}")
    return str(result["image_path"])


async def attach(ctx: Context, session_id: str, text: str, files: list[str]) -> str | None:
    """The image path for this message: the first upload, else a pasted image URL, else None."""
    if files:
        return save_upload(files[0], ctx.store.media_dir)
    url = image_url_in(text)
    if url is None:
        return None
    return await fetch_image_url(url, ctx, session_id)
