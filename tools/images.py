"""Image bytes checked for what they are: the format is read from the bytes, never trusted
from a file extension or a Content-Type header, and the size is capped.
"""

from __future__ import annotations

import io
import warnings
from dataclasses import dataclass
from pathlib import Path

from PIL import Image, UnidentifiedImageError

MAX_IMAGE_BYTES = 10 * 1024 * 1024
MIME_BY_FORMAT = {
    "PNG": "image/png",
    "JPEG": "image/jpeg",
    "GIF": "image/gif",
    "WEBP": "image/webp",
}
EXTENSION_BY_MIME = {
    "image/png": "png",
    "image/jpeg": "jpg",
    "image/gif": "gif",
    "image/webp": "webp",
}


class NotAnImage(ValueError):
    """Bytes that are not a supported image (or too large to accept)."""


@dataclass(frozen=True)
class ImageInfo:
    """What the bytes of an accepted image are."""

    mime: str
    width: int
    height: int

    @property
    def extension(self) -> str:
        """The file extension to save it under."""
        return EXTENSION_BY_MIME[self.mime]


def inspect_image(data: bytes) -> ImageInfo:
    """Identify PNG/JPEG/GIF/WebP bytes, or raise NotAnImage saying why not."""
    if len(data) > MAX_IMAGE_BYTES:
        raise NotAnImage(f"image is larger than {MAX_IMAGE_BYTES // (1024 * 1024)} MB")
    if not data:
        raise NotAnImage("no bytes received")
    with warnings.catch_warnings():
        # An image whose pixel count is absurd for its size is refused, not decoded.
        warnings.simplefilter("error", Image.DecompressionBombWarning)
        try:
            with Image.open(io.BytesIO(data)) as image:
                image_format = image.format or ""
                width, height = image.size
                image.verify()
        except (
            UnidentifiedImageError,
            Image.DecompressionBombError,
            Image.DecompressionBombWarning,
            OSError,
            SyntaxError,
            ValueError,
        ) as exc:
            raise NotAnImage(f"not a readable image ({type(exc).__name__})") from exc
    mime = MIME_BY_FORMAT.get(image_format)
    if mime is None:
        raise NotAnImage(f"unsupported image format {image_format or 'unknown'}")
    return ImageInfo(mime, width, height)


def human_size(size: int) -> str:
    """Bytes as a short human string: 812 B, 12 KB, 1.4 MB."""
    if size < 1024:
        return f"{size} B"
    if size < 1024 * 1024:
        return f"{round(size / 1024)} KB"
    return f"{size / (1024 * 1024):.1f} MB"


def write_image(data: bytes, path: Path) -> Path:
    """Write image bytes atomically (a reader never sees half a file); returns the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.part")
    partial.write_bytes(data)
    partial.replace(path)
    return path
