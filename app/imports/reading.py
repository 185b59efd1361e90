"""Open an export and stream its conversations: a JSON file, or a zip holding
``conversations.json`` (ChatGPT's and Claude's exports), read without unpacking it.

The JSON is parsed as a stream (``ijson``): one conversation is in memory at a time, so
a 2 GB file is never loaded whole. The zip is refused when a member's name could point
outside a folder (``../x``, an absolute path), when it holds no ``conversations.json``,
or when that member would unpack to more than ``MAX_UNPACKED`` bytes or more than
``MAX_RATIO`` times its packed size (a zip bomb); zipfile stops reading at the size the
zip declares, so the check holds. The app that made the export is told by the shape of
its first conversation.
"""

from __future__ import annotations

import json
import re
import zipfile
from collections.abc import Callable, Generator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, Any

import ijson

import app.imports.chatgpt as chatgpt
import app.imports.claude as claude
import app.imports.companion as companion
import app.imports.openwebui as openwebui
from app.imports.common import BadExport, Parsed
from memory import Memory

MAX_UNPACKED = 8 * 1024**3  # bytes conversations.json may unpack to (exports run to GBs)
MAX_RATIO = 100  # unpacked/packed size: JSON packs 5-20x, zip bombs 1,000x and more
MEMBER = "conversations.json"


@dataclass(frozen=True)
class Format:
    """One app's export: its name in the report, how its conversations look, its parser."""

    name: str
    looks_like: Callable[[Any], bool]
    parse: Callable[[dict[str, Any]], Parsed]


FORMATS = (
    Format("ChatGPT", chatgpt.looks_like, chatgpt.parse),
    Format("Claude", claude.looks_like, claude.parse),
    Format("Open WebUI", openwebui.looks_like, openwebui.parse),
)
COMPANION = Format("Companion", companion.looks_like, companion.parse)


def _safe_name(name: str) -> bool:
    path = PurePosixPath(name.replace("\\", "/"))
    return not path.is_absolute() and ".." not in path.parts and ":" not in path.parts[0]


def _safe_names(archive: zipfile.ZipFile) -> list[zipfile.ZipInfo]:
    """The zip's members (BadExport: one whose path could point outside a folder)."""
    infos = archive.infolist()
    unsafe = next((info.filename for info in infos if not _safe_name(info.filename)), None)
    if unsafe is not None:
        raise BadExport(f"the zip has a member with an unsafe path: {unsafe!r}")
    return infos


def _bounded(member: zipfile.ZipInfo) -> zipfile.ZipInfo:
    """``member``, unless it would unpack too big (BadExport: a zip bomb)."""
    name = member.filename
    if member.file_size > MAX_UNPACKED:
        raise BadExport(
            f"{name} would unpack to {member.file_size:,} bytes, over the limit of {MAX_UNPACKED:,}"
        )
    if member.file_size > MAX_RATIO * max(member.compress_size, 1):
        raise BadExport(
            f"{name} would unpack to {member.file_size:,} bytes from "
            f"{member.compress_size:,}: more than {MAX_RATIO} times (a zip bomb?)"
        )
    return member


def _member(archive: zipfile.ZipFile) -> zipfile.ZipInfo:
    """The zip's conversations.json, checked (BadExport: unsafe, missing, a bomb)."""
    infos = _safe_names(archive)
    found = sorted(
        (i for i in infos if PurePosixPath(i.filename).name == MEMBER and not i.is_dir()),
        key=lambda info: info.filename.count("/"),
    )
    if not found:
        raise BadExport(f"the zip holds no {MEMBER}: it is not a ChatGPT or Claude export")
    return _bounded(found[0])


def _open(path: Path, stack: ExitStack) -> IO[bytes]:
    """The export's JSON as a binary stream (BadExport: missing, unreadable zip)."""
    if not path.is_file():
        raise BadExport(f"no such file: {path}")
    if not zipfile.is_zipfile(path):
        return stack.enter_context(path.open("rb"))
    try:
        archive = stack.enter_context(zipfile.ZipFile(path))
        return stack.enter_context(archive.open(_member(archive)))
    except (zipfile.BadZipFile, NotImplementedError) as exc:
        raise BadExport(f"the zip cannot be read: {exc}") from exc


def _starts_a_list(stream: IO[bytes]) -> bool:
    """True when the JSON's first character opens a list (a byte-order mark and white
    space skipped); the stream is rewound or, for a zip member, reopened by the caller."""
    head = stream.read(4096).lstrip(b"\xef\xbb\xbf \t\r\n")
    return head.startswith(b"[")


def _format_of(first: Any) -> Format:
    for candidate in FORMATS:
        if candidate.looks_like(first):
            return candidate
    raise BadExport("unknown format: the conversations are not ChatGPT's, Claude's or Open WebUI's")


def _companion_export(path: Path) -> bool:
    """True when ``path`` is a zip with Companion's export manifest at its root."""
    if not path.is_file() or not zipfile.is_zipfile(path):
        return False
    try:
        with zipfile.ZipFile(path) as archive:
            return companion.MANIFEST in archive.namelist()
    except zipfile.BadZipFile:
        return False  # _open says why


def _read_json(archive: zipfile.ZipFile, name: str) -> Any:
    """One JSON member of a Companion export, whole (BadExport: missing, a bomb, malformed)."""
    try:
        member = _bounded(archive.getinfo(name))
        return json.loads(archive.read(member))
    except KeyError as exc:
        raise BadExport(f"the export has no {name}") from exc
    except (ValueError, zipfile.BadZipFile) as exc:
        raise BadExport(f"{name} is not JSON: {exc}") from exc


def _companion_chats(path: Path) -> Generator[tuple[Format, Parsed], None, None]:
    """Every chat of a Companion export, one member at a time, in order."""
    with zipfile.ZipFile(path) as archive:
        infos = _safe_names(archive)
        companion.check_manifest(_read_json(archive, companion.MANIFEST))
        names = sorted(i.filename for i in infos if re.fullmatch(r"chats/[^/]+\.json", i.filename))
        for name in names:
            chat = _read_json(archive, name)
            if not COMPANION.looks_like(chat):
                raise BadExport(f"{name} is not a chat of a Companion export")
            yield COMPANION, COMPANION.parse(chat)


def companion_memories(path: Path) -> list[Memory]:
    """The memories of the Companion export at ``path`` (BadExport: unreadable)."""
    with zipfile.ZipFile(path) as archive:
        return companion.memories(_read_json(archive, "memories.json"))


def conversations(path: Path) -> Generator[tuple[Format, Parsed], None, None]:
    """Every conversation of the export at ``path``, parsed, with the app it came from
    (BadExport: malformed JSON, an unknown format, a bad conversation, an unsafe zip)."""
    if _companion_export(path):
        yield from _companion_chats(path)
        return
    with ExitStack() as stack:
        if not _starts_a_list(_open(path, stack)):
            raise BadExport("unknown format: the file is not a JSON list of conversations")
    with ExitStack() as stack:
        items = ijson.items(_open(path, stack), "item", use_float=True)
        found: Format | None = None
        try:
            for item in items:
                found = found or _format_of(item)
                if not found.looks_like(item):
                    raise BadExport(f"a conversation in this {found.name} export has another shape")
                yield found, found.parse(item)
        except ijson.JSONError as exc:
            said = str(exc).strip().splitlines()  # yajl draws the place on further lines
            raise BadExport(f"malformed JSON: {said[0] if said else type(exc).__name__}") from exc
        except UnicodeDecodeError as exc:
            raise BadExport(f"the file is not UTF-8 text: {exc}") from exc
