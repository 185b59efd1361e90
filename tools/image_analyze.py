"""image_analyze: load the image the user means so a vision model can look at it.

The image is the session's latest by default, or a ``reference``: a markdown image, a
local path (inside the media folder or the allowed image folder once resolved; outside,
the same answer as a missing file) or an http(s) URL fetched through
``tools.net.guarded_client`` under size, type and time limits. Downloads are kept under
media/ (``tools.images.media_path``), and a URL already fetched in this process is not
fetched again while its file exists. See docs/tools.md.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import re
from collections import OrderedDict
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import httpx

from tools.base import ToolContext, ToolSpec
from tools.images import (
    MAX_IMAGE_BYTES,
    NotAnImage,
    human_size,
    inspect_image,
    media_path,
    write_image,
)
from tools.net import (
    TooLarge,
    describe_http_error,
    guarded_client,
    read_limited,
    request_timeout,
    time_budget,
    url_problem,
)

log = logging.getLogger("companion.image")

DOWNLOAD_SECONDS = 20.0  # the whole download, redirects included
URL_CACHE_SIZE = 256
# A reference is a URL or a path, perhaps inside a markdown image: longer is not one, and
# the markdown pattern's work stays bounded.
MAX_REFERENCE_CHARS = 4096

USE_WHEN = "Load an image so you can look at it, when the user asks about a photo or picture."
DESCRIPTION = (
    "`reference` (optional): which image — omit it for the latest image in this "
    'conversation, or give a markdown image "![photo](https://example.com/cat.jpg)", an '
    "http(s) URL, or a file path from the conversation."
)
PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "reference": {
            "type": "string",
            "description": "Markdown image, URL or file path; omit for the latest image.",
        }
    },
    "additionalProperties": False,
}

NO_IMAGE = "there is no image in this conversation yet; give a reference (URL or file path)"
# One answer for a missing file and a forbidden one alike: the difference would tell
# whether a path exists anywhere on the machine.
NOT_AVAILABLE = "not available: no image at {path} in the media folder or the allowed image folder"
TOO_LONG = f"the reference is too long (more than {MAX_REFERENCE_CHARS} characters)"
# Every repetition is bounded and the long ones possessive (never backtracked into), so
# each start position costs a bounded amount of work.
_MARKDOWN_IMAGE = re.compile(
    r"!\[[^\]]{0,500}\]\(\s{0,20}(?:<([^>]{1,4096}+)>|([^)\s]{1,4096}+))"
    r"(?:\s{1,20}[\"'][^)]{0,500}[\"'])?\s{0,20}\)"
)
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://")

# URL -> file already downloaded, per process (checked to still exist before reuse).
_URL_CACHE: OrderedDict[tuple[Path, str], Path] = OrderedDict()


class ImageLoadError(Exception):
    """A failure whose message is the tool's error text."""


def extract_target(reference: str) -> str:
    """The URL or path inside a markdown image, or the reference itself."""
    found = _MARKDOWN_IMAGE.search(reference)
    if found is None:
        return reference.strip()
    return (found.group(1) or found.group(2)).strip()


def _allowed_roots(ctx: ToolContext) -> list[Path]:
    roots = [ctx.settings.media_dir.resolve()]
    if ctx.settings.allowed_image_dir is not None:
        roots.append(ctx.settings.allowed_image_dir.expanduser().resolve())
    return roots


def _load_local(target: str, ctx: ToolContext) -> tuple[bytes, Path]:
    if target.startswith("file://"):
        target = unquote(urlsplit(target).path)
    path = Path(target).expanduser()
    if not path.is_absolute():
        path = ctx.settings.media_dir / path
    try:
        resolved = path.resolve(strict=True)
    except (OSError, RuntimeError) as exc:
        raise ImageLoadError(NOT_AVAILABLE.format(path=target)) from exc
    inside = any(resolved.is_relative_to(root) for root in _allowed_roots(ctx))
    if not inside or not resolved.is_file():
        raise ImageLoadError(NOT_AVAILABLE.format(path=target))
    if resolved.stat().st_size > MAX_IMAGE_BYTES:
        raise ImageLoadError(f"the image is larger than {human_size(MAX_IMAGE_BYTES)}")
    return resolved.read_bytes(), resolved


async def _fetch(url: str, ctx: ToolContext) -> bytes:
    """Download under the limits; the guarded client checks the address of every hop."""
    problem = url_problem(url)
    if problem:
        raise ImageLoadError(problem)
    async with (
        guarded_client(
            ctx.settings, timeout=request_timeout(ctx.settings), headers={"Accept": "image/*"}
        ) as client,
        client.stream("GET", url) as response,
    ):
        if response.status_code != 200:
            raise ImageLoadError(f"the image URL answered HTTP {response.status_code}")
        return await read_limited(response, MAX_IMAGE_BYTES)


async def _load_url(url: str, ctx: ToolContext) -> tuple[bytes, Path, bool]:
    """Bytes, saved path and whether they came from the cache."""
    media_dir = ctx.settings.media_dir
    cached = _URL_CACHE.get((media_dir, url))
    if cached is not None and cached.is_file():
        _URL_CACHE.move_to_end((media_dir, url))
        return cached.read_bytes(), cached, True
    try:
        async with asyncio.timeout(time_budget(ctx.settings, DOWNLOAD_SECONDS)):
            data = await _fetch(url, ctx)
    except TimeoutError as exc:
        raise ImageLoadError("the image URL did not answer in time") from exc
    except TooLarge as exc:
        raise ImageLoadError(f"the image is larger than {human_size(MAX_IMAGE_BYTES)}") from exc
    except httpx.HTTPError as exc:
        raise ImageLoadError(describe_http_error(exc, "the image URL")) from exc
    info = inspect_image(data)
    path = media_path(data, media_dir, info.extension)
    if not path.is_file():
        write_image(data, path)
    _URL_CACHE[(media_dir, url)] = path
    while len(_URL_CACHE) > URL_CACHE_SIZE:
        _URL_CACHE.popitem(last=False)
    return data, path, False


async def image_analyze(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    """The referenced (or latest) image as base64 with its MIME type and where it lives."""
    reference = str(args.get("reference") or "").strip()
    if len(reference) > MAX_REFERENCE_CHARS:
        return {"error": TOO_LONG}
    source = "reference"
    if not reference:
        latest = await ctx.store.latest_image(ctx.session_id) if ctx.session_id else None
        if latest is None or not latest.image_path:
            return {"error": NO_IMAGE}
        reference, source = latest.image_path, "latest"
    target = extract_target(reference)
    result: dict[str, Any] = {}
    try:
        if _SCHEME.match(target) and not target.startswith("file://"):
            data, path, from_cache = await _load_url(target, ctx)
            result.update(url=target, cached=from_cache)
        else:
            data, path = _load_local(target, ctx)
        info = inspect_image(data)
    except ImageLoadError as exc:
        log.exception("image_analyze could not load %s", target)
        return {"error": str(exc)}
    except NotAnImage as exc:
        log.exception("image_analyze: %s is not an image", target)
        return {"error": f"that is not an image I can load: {exc}"}
    return {
        "image_base64": base64.b64encode(data).decode("ascii"),
        "mime": info.mime,
        "image_path": str(path),
        "source": source,
        "size_bytes": len(data),
        "width": info.width,
        "height": info.height,
        **result,
    }


async def available(ctx: ToolContext) -> bool:
    """Offered when a vision model is configured and the session has an image."""
    if not ctx.vision_available or ctx.session_id is None:
        return False
    return await ctx.store.latest_image(ctx.session_id) is not None


def sent(args: dict[str, Any]) -> str | None:
    """The URL a call would fetch (the model wrote it), or None: a local image, or a
    reference too long to be tried."""
    reference = str(args.get("reference") or "").strip()
    if len(reference) > MAX_REFERENCE_CHARS:
        return None
    target = extract_target(reference)
    return target if _SCHEME.match(target) and not target.startswith("file://") else None


def format_loaded(result: dict[str, Any]) -> str:
    """What the model reads (the image itself is attached separately, not as text)."""
    size = human_size(int(result.get("size_bytes", 0)))
    return f"Image loaded ({result['mime']}, {size}) — it is attached below for you to look at."


TOOLS = [
    ToolSpec(
        name="image_analyze",
        use_when=USE_WHEN,
        description=DESCRIPTION,
        parameters=PARAMETERS,
        run=image_analyze,
        role="image_tool",
        command="image_analyze",
        available=available,
        format=format_loaded,
        examples=("/image_analyze", "/image_analyze https://example.com/cat.jpg"),
        untrusted=True,
        outbound=sent,
    )
]
