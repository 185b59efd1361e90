"""Companion's own export (``companion export``: docs/export.md), read back: a zip with
``companion-export.json`` at its root, one ``chats/*.json`` per chat and
``memories.json``.

Each chat comes back as it was exported: its title, its start, and every message of the
person and the assistant with its own time, in order (keyed by its id in the Companion
it came from, so a second import adds nothing). As for the other apps, nothing imported
becomes a system message or a tool result: tool results, system messages and the links
to images (the image files are in the zip, under ``images/``) are left out and counted.
Memories come back whole (id, times, strength), each once.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from typing import Any

from app.imports.common import BadExport, Parsed, Speaker, finished, text_id, title_of
from memory import ImportedMessage, Memory, parse_time

SOURCE = "companion"
MANIFEST = "companion-export.json"
FORMAT, CHAT_FORMAT = "companion-export", "companion-chat"
VERSIONS = (1,)  # the export schema versions this reads
ROLES: dict[str, Speaker] = {"user": "user", "assistant": "assistant"}
MEMORY_FIELDS = (
    "id",
    "category",
    "key",
    "value",
    "created_at",
    "updated_at",
    "stability",
    "difficulty",
    "last_recalled_at",
    "recall_count",
)


def _time(value: Any, label: str) -> datetime:
    """A stored time ("2024-05-01 09:30:15", UTC) (BadExport: anything else)."""
    try:
        return parse_time(value)
    except (TypeError, ValueError) as exc:
        raise BadExport(f"{label}: {value!r} is not a time") from exc


def check_manifest(manifest: Any) -> None:
    """BadExport unless ``manifest`` is a Companion export of a version this reads."""
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise BadExport(f"{MANIFEST} does not name the {FORMAT} format")
    if manifest.get("version") not in VERSIONS:
        raise BadExport(f"{FORMAT} version {manifest.get('version')!r} is not one this reads")


def looks_like(item: Any) -> bool:
    """True when a chat has the export's shape."""
    return isinstance(item, dict) and item.get("format") == CHAT_FORMAT


def _message(message: Any, label: str, skipped: Counter[str]) -> ImportedMessage | None:
    """A message to keep, or None (counted in ``skipped``)."""
    if not isinstance(message, dict) or not isinstance(message.get("content"), str):
        raise BadExport(f"chat {label}: a message has no text")
    role = message.get("role")
    if message.get("image_path"):
        skipped["link to an image"] += 1
    if role not in ROLES:
        skipped["system message" if role == "system" else "tool result"] += 1
        return None
    if not message["content"].strip():
        skipped["empty message"] += 1
        return None
    return ImportedMessage(ROLES[role], message["content"], _time(message.get("created_at"), label))


def parse(chat: dict[str, Any]) -> Parsed:
    """One exported chat (BadExport: another version, no id, a bad time or message)."""
    if chat.get("version") not in VERSIONS:
        raise BadExport(f"a chat of version {chat.get('version')!r}: not one this reads")
    source_id = text_id(chat.get("id"), "id")
    title = title_of(chat.get("title"))
    label = f"{source_id} ({title})"
    messages = chat.get("messages")
    if not isinstance(messages, list):
        raise BadExport(f"chat {label}: it has no list of messages")
    skipped: Counter[str] = Counter()
    kept = [m for m in (_message(m, label, skipped) for m in messages) if m is not None]
    created = _time(chat.get("created_at"), label)
    return finished(SOURCE, source_id, title, created, kept, skipped)


def _memory(item: Any) -> Memory:
    """One memory of ``memories.json`` (BadExport: a field missing or of the wrong kind)."""
    if not isinstance(item, dict) or not all(name in item for name in MEMORY_FIELDS):
        raise BadExport("memories.json holds an item that is not a memory")
    label = f"memory {item['key']!r}"
    if not all(isinstance(item[name], str) for name in ("id", "category", "key", "value")):
        raise BadExport(f"{label}: its id, category, key and value must be text")
    for name in ("created_at", "updated_at"):
        _time(item[name], label)
    if item["last_recalled_at"] is not None:
        _time(item["last_recalled_at"], label)
    try:
        stability, difficulty = float(item["stability"]), float(item["difficulty"])
        count = int(item["recall_count"])
    except (TypeError, ValueError) as exc:
        raise BadExport(f"{label}: its strength is not a number") from exc
    return Memory(
        item["id"],
        item["category"],
        item["key"],
        item["value"],
        item["created_at"],
        item["updated_at"],
        stability,
        difficulty,
        item["last_recalled_at"],
        count,
    )


def memories(items: Any) -> list[Memory]:
    """``memories.json``'s memories (BadExport: not a list of memories)."""
    if not isinstance(items, list):
        raise BadExport("memories.json is not a list")
    return [_memory(item) for item in items]
