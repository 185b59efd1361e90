"""Image bytes checked for what they are, and kept where only their person finds them.

The format is read from the bytes, never trusted from a file extension or a Content-Type
header, and the size is capped. A kept image is named by a keyed hash of its bytes
(``media_path``): HMAC-SHA-256 under a secret of the person's own (``media.salt`` beside
their media folder, 0600, made on first use), so the same picture is stored once per
person, and someone who has the picture cannot compute where another person keeps it.
Images are written 0600 into a 0700 folder.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import io
import os
import secrets
import warnings
from dataclasses import dataclass
from pathlib import Path

from PIL import Image, UnidentifiedImageError

from memory.rules.files import owner_only_folder

MAX_IMAGE_BYTES = 10 * 1024 * 1024
FILE_MODE = 0o600  # owner only
SALT_FILE = "media.salt"  # beside media/, never in it: the media folder is served
SALT_BYTES = 32
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


def _write_private(path: Path, data: bytes) -> None:
    """Create ``path`` (it must not exist) readable by its owner alone, holding ``data``."""
    with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE), "wb") as f:
        f.write(data)


def write_image(data: bytes, path: Path) -> Path:
    """Write image bytes atomically (a reader never sees half a file), owner-only; returns
    the path."""
    owner_only_folder(path.parent)
    partial = path.with_name(f".{path.name}.{secrets.token_hex(4)}.part")
    _write_private(partial, data)
    partial.replace(path)
    return path


def media_salt(media_dir: Path) -> bytes:
    """The secret of the person whose images ``media_dir`` holds, made on first use.

    A new salt is written to a file of its own and linked into place, so two processes
    making it at once agree on one, and a reader never sees it half written.
    """
    path = media_dir.parent / SALT_FILE
    if not path.exists():
        owner_only_folder(media_dir)
        fresh = path.with_name(f".{SALT_FILE}.{secrets.token_hex(4)}")
        _write_private(fresh, secrets.token_bytes(SALT_BYTES))
        with contextlib.suppress(FileExistsError):  # another process made it first
            os.link(fresh, path)
        fresh.unlink()
    return path.read_bytes()


def media_path(data: bytes, media_dir: Path, extension: str) -> Path:
    """Where image bytes are kept in a person's ``media_dir`` (see the module's note)."""
    digest = hmac.new(media_salt(media_dir), data, hashlib.sha256).hexdigest()
    return media_dir / f"{digest}.{extension}"
