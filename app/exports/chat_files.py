"""One chat of a Companion export as files: its JSON (the versioned schema of
docs/export.md) and its Markdown (to read)."""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any

from memory import Message, Session

FORMAT = "companion-chat"
VERSION = 1
SPEAKERS = {"user": "You", "assistant": "Companion", "system": "System"}
SLUG_CHARS = 40  # of the title, in a chat's file name


def file_stem(number: int, session: Session) -> str:
    """``chats/00001-sourdough-starter-<id>``: in order, readable, and unique."""
    slug = re.sub(r"[^a-z0-9]+", "-", session.title.lower()).strip("-")[:SLUG_CHARS].strip("-")
    return f"chats/{number:05d}-{slug or 'chat'}-{session.id}"


def chat_json(session: Session, messages: list[Message], style_note: str | None) -> bytes:
    """The chat in the export's schema (``FORMAT``, ``VERSION``)."""
    chat: dict[str, Any] = {
        "format": FORMAT,
        "version": VERSION,
        "id": session.id,
        "title": session.title,
        "persona": session.persona,
        "created_at": session.created_at,
        "style_note": style_note,
        "messages": [
            {k: v for k, v in dataclasses.asdict(m).items() if k != "session_id"} for m in messages
        ],
    }
    return json.dumps(chat, ensure_ascii=False, indent=1, default=str).encode()


def _said(message: Message, images: dict[str, str]) -> str:
    """One message in Markdown: who and when, then the text (a tool's result quoted) and
    its image (``images``: each image path's name in the zip)."""
    who = SPEAKERS.get(message.role) or f"Tool result ({message.tool_name or message.role})"
    text = message.content
    if message.is_tool:
        text = "\n".join(f"> {line}" for line in text.splitlines())
    if message.image_path in images:
        text += f"\n\n![image](../{images[message.image_path]})"
    return f"**{who}** · {message.created_at} UTC\n\n{text}\n"


def chat_markdown(session: Session, messages: list[Message], images: dict[str, str]) -> bytes:
    """The chat to read: its title, when it started, and every message in order."""
    head = f"# {session.title}\n\nStarted {session.created_at} UTC\n"
    return "\n".join([head, *(_said(m, images) for m in messages)]).encode()
