"""Images a user sends: an upload, or an image URL pasted into the message.

Both end as a file in the store's media folder whose path goes to ``stream_turn`` as the
user message's ``image_path`` — one pipeline. ``save_upload`` checks an upload by its
bytes (not its name) and refuses anything else before the message is sent;
``pasted_image`` finds an image URL in the text (in time linear in the message) and
fetches it with image_analyze's downloader, limits and cache. docs/app.md.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from itertools import islice
from pathlib import Path
from urllib.parse import urlsplit

import httpx

from config.settings import Settings
from graph.context import Context
from tools.image_analyze import image_analyze
from tools.images import NotAnImage, inspect_image, media_path, write_image
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
NOT_AN_IMAGE = (
    "{name} can't be attached: only images (PNG, JPEG, GIF or WebP) can ({why}). "
    "Remove it to send your message."
)


class AttachmentError(Exception):
    """An image that cannot be attached; the message is shown to the user."""


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
    try:
        data = Path(upload).read_bytes()
    except OSError as exc:
        raise AttachmentError(f"could not read the upload: {exc.strerror or exc}") from exc
    try:
        info = inspect_image(data)
    except NotAnImage as exc:
        log.info("refused the upload %s: %s", Path(upload).name, exc)
        raise AttachmentError(NOT_AN_IMAGE.format(name=Path(upload).name, why=exc)) from exc
    path = media_path(data, media_dir, info.extension)
    if not path.is_file():
        write_image(data, path)
    return str(path)


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
