"""Claude's data export (its conversations.json, alone or in the export's zip).

Each conversation has ``uuid``, ``name``, ``created_at`` (ISO 8601) and ``chat_messages``
in order, each with ``sender`` (``human`` or ``assistant``), ``created_at``, ``text`` and
``content`` (blocks: ``text``, and ``tool_use``/``tool_result``/``thinking``).

Kept: the text blocks of each message (its ``text`` when it has no blocks). Left out, and
counted in the report: tool calls and their results (a tool's output is not the person's
words), the model's thinking, attachments and files (their names only are in the export
with, at most, text extracted from them), and messages of any other sender.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from app.imports.common import BadExport, Parsed, Speaker, finished, iso, text_id, title_of
from memory import ImportedMessage

SOURCE = "claude"
SENDERS: dict[str, Speaker] = {"human": "user", "assistant": "assistant"}


def looks_like(item: Any) -> bool:
    """True when a conversation has Claude's shape."""
    return isinstance(item, dict) and isinstance(item.get("chat_messages"), list)


def _text(message: dict[str, Any], skipped: Counter[str]) -> str:
    """The message's text blocks joined (its ``text`` when it has no blocks)."""
    blocks = message.get("content")
    if not isinstance(blocks, list) or not blocks:
        text = message.get("text")
        return text if isinstance(text, str) else ""
    texts: list[str] = []
    for block in blocks:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        else:
            skipped[f"{kind or 'unknown'} block"] += 1
    return "\n\n".join(text for text in texts if text.strip())


def parse(conversation: dict[str, Any]) -> Parsed:
    """One Claude conversation, its messages in the export's order (BadExport: no id,
    no time)."""
    source_id = text_id(conversation.get("uuid"), "uuid")
    title = title_of(conversation.get("name"))
    label = f"{source_id} ({title})"
    skipped: Counter[str] = Counter()
    messages: list[ImportedMessage] = []
    when = iso(conversation.get("created_at"))
    for message in conversation["chat_messages"]:
        if not isinstance(message, dict) or message.get("sender") not in SENDERS:
            skipped["message of another sender"] += 1
            continue
        attached = len(message.get("attachments") or []) + len(message.get("files") or [])
        if attached:
            skipped["attachment or file"] += attached
        text = _text(message, skipped)
        when = iso(message.get("created_at")) or when
        if not text.strip():
            skipped["empty message"] += 1
            continue
        if when is None:
            raise BadExport(f"conversation {label}: a message has no time")
        messages.append(ImportedMessage(SENDERS[message["sender"]], text, when))
    return finished(
        SOURCE, source_id, title, iso(conversation.get("created_at")), messages, skipped
    )
