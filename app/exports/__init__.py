"""``companion export`` and the app's "Export my data" (issue 24, item 2): everything of one
person in one zip, laid out and versioned as docs/export.md says.

Every chat as JSON (``chat_files``: the schema ``companion import`` reads back) and as
Markdown, one file each; the saved memories; the segments; the images the chats
reference (from the person's media folder only); the settings without secrets (no key,
password or token; a URL's credentials dropped). The zip is written to a new file: an
existing path is refused, never overwritten; a failure midway removes what was written.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import re
import zipfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from app.exports.chat_files import chat_json, chat_markdown, file_stem
from memory import AsyncStore, Message

log = logging.getLogger("companion.export")

FORMAT = "companion-export"
VERSION = 1
MANIFEST = "companion-export.json"
ALL_SEGMENTS = 2**31 - 1  # recent_segments' limit: every one
SECRET = re.compile(r"key|password|secret|token|hash", re.IGNORECASE)


class ExportError(Exception):
    """The zip could not be written (a disk error): one line."""


class ExportRefused(ExportError):
    """The path given is not one to write a new zip to (it exists, or its folder does
    not): one line."""


@dataclass(frozen=True)
class ExportReport:
    """What went into the zip, and where it is."""

    chats: int
    messages: int
    memories: int
    segments: int
    images: int
    path: Path

    def line(self) -> str:
        """The report as the terminal shows it."""
        return (
            f"Exported {self.chats:,} chats with {self.messages:,} messages, "
            f"{self.memories:,} memories, {self.segments:,} segments and {self.images:,} "
            f"images to {self.path}."
        )


def without_secrets(settings: Mapping[str, object]) -> dict[str, Any]:
    """The settings a person may carry elsewhere: no key, password, token or hash, no
    credentials in a URL, no empty value."""
    kept: dict[str, Any] = {}
    for name, value in settings.items():
        if SECRET.search(name) or value is None or value == "":
            continue
        if isinstance(value, str) and "://" in value and "@" in value:
            parts = urlsplit(value)
            value = parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl()
        kept[name] = value if isinstance(value, str | int | float | bool) else str(value)
    return kept


def _image(media: Path, image_path: str) -> tuple[Path, str] | None:
    """The file of a message's image and its name in the zip, when it is in ``media``."""
    folder = media.resolve()
    path = (folder / image_path).resolve()
    if not path.is_relative_to(folder) or not path.is_file():
        return None
    return path, f"images/{path.relative_to(folder).as_posix()}"


class _Zip:
    """The zip being written, each write in a worker thread."""

    def __init__(self, out: Path) -> None:
        try:
            self.archive = zipfile.ZipFile(out, "x", zipfile.ZIP_DEFLATED)
        except FileExistsError as exc:
            raise ExportRefused(f"{out} exists: choose a new file name") from exc
        except (FileNotFoundError, NotADirectoryError) as exc:
            raise ExportRefused(f"{out.parent} is not a folder") from exc
        except OSError as exc:
            raise ExportError(f"cannot write {out}: {exc.strerror or exc}") from exc
        self.images: dict[str, str] = {}  # image path as stored -> name in the zip

    async def put(self, name: str, build: Callable[[], bytes]) -> None:
        """Write what ``build`` makes as ``name``, both in a thread: a big history's JSON is
        never encoded on the event loop."""
        await asyncio.to_thread(lambda: self.archive.writestr(name, build()))

    async def put_json(self, name: str, value: Callable[[], Any]) -> None:
        await self.put(name, lambda: json.dumps(value(), ensure_ascii=False, indent=1).encode())

    async def put_images(self, media: Path, messages: list[Message]) -> None:
        """The images ``messages`` carry, each once."""
        for message in messages:
            if not message.image_path or message.image_path in self.images:
                continue
            found = _image(media, message.image_path)
            if found is not None:
                if found[1] not in self.images.values():
                    await asyncio.to_thread(self.archive.write, found[0], found[1])
                self.images[message.image_path] = found[1]


async def _write(
    box: _Zip,
    store: AsyncStore,
    media: Path,
    settings: Mapping[str, object],
    progress: Callable[[int, int], None] | None,
) -> tuple[int, int, int, int]:
    """Everything of the person into ``box``: chats, messages, memories, segments."""
    sessions = sorted(await store.list_sessions(), key=lambda s: (s.created_at, s.id))
    messages = 0
    for number, session in enumerate(sessions, start=1):
        said = await store.messages(session.id)
        await box.put_images(media, said)
        stem = file_stem(number, session)
        note = await store.style_note(session.id)
        await box.put(f"{stem}.json", partial(chat_json, session, said, note))
        await box.put(f"{stem}.md", partial(chat_markdown, session, said, box.images))
        messages += len(said)
        if progress is not None:
            progress(number, len(sessions))
    memories = await store.ranked_memories(store.clock())
    await box.put_json("memories.json", lambda: [dataclasses.asdict(m) for m in memories])
    segments = await store.recent_segments(ALL_SEGMENTS)
    await box.put_json("segments.json", lambda: [dataclasses.asdict(s) for s in reversed(segments)])
    await box.put_json("settings.json", lambda: without_secrets(settings))
    counts = (len(sessions), messages, len(memories), len(segments))
    manifest = dict(zip(("chats", "messages", "memories", "segments"), counts, strict=True))
    exported = store.clock().strftime("%Y-%m-%d %H:%M:%S")
    head = {"format": FORMAT, "version": VERSION, "exported_at": exported, "counts": manifest}
    await box.put_json(MANIFEST, lambda: head)
    return counts


async def export_person(
    store: AsyncStore,
    media: Path,
    settings: Mapping[str, object],
    out: Path,
    progress: Callable[[int, int], None] | None = None,
) -> ExportReport:
    """Write everything of the person whose ``store`` this is (images from ``media``) to
    a new zip at ``out``; ``progress(done, total)`` after each chat. ExportRefused:
    ``out`` exists or its folder does not; ExportError: the disk failed (what was written
    is removed); StoreError from the store."""
    box = await asyncio.to_thread(_Zip, out)
    try:
        counts = await _write(box, store, media, settings, progress)
        await asyncio.to_thread(box.archive.close)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            box.archive.close()
        out.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise ExportError(f"cannot write {out}: {exc.strerror or exc}") from exc
        raise
    log.info("exported %s chats to a zip", counts[0])
    return ExportReport(*counts, images=len(set(box.images.values())), path=out)
