"""Images a user sends: an upload, or an image URL pasted into the message.

Both end as a file in the store's media folder whose path goes to ``stream_turn`` as the
user message's ``image_path`` — one pipeline. Uploads are checked by their bytes (not
their name); URLs are fetched by image_analyze's downloader, with its size, type, time
and private-address limits, and its cache.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from graph.context import Context
from nodes.build_context import tool_context
from tools.image_analyze import image_analyze
from tools.images import NotAnImage, inspect_image, write_image

IMAGE_URL = re.compile(
    r"https?://[^\s<>()\"']+?\.(?:png|jpe?g|gif|webp)(?:\?[^\s<>()\"']*)?(?=$|[\s)\"'>,;!])",
    re.IGNORECASE,
)


class AttachmentError(Exception):
    """An image that cannot be attached; the message is shown to the user."""


def image_url_in(text: str) -> str | None:
    """The first http(s) URL in ``text`` that names an image file, or None."""
    found = IMAGE_URL.search(text or "")
    return found.group(0) if found else None


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
    result = await image_analyze({"reference": url}, tool_context(ctx, session_id))
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
