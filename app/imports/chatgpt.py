"""ChatGPT's data export (its conversations.json, alone or in the export's zip).

A conversation's ``mapping`` is a tree of nodes (``parent``, ``children``), each with an
optional ``message``: ``author.role``, ``create_time`` (epoch seconds), ``content``
(``content_type`` and ``parts``, or ``text`` for code), ``metadata`` and ``recipient``.
Editing a message or regenerating an answer starts a branch; ``current_node`` is the
leaf the person last saw, so only the path from the root to it is kept.

Kept: the person's and the assistant's text, code (as a fenced block) and the text parts
of multimodal messages. Left out, and counted in the report: system messages, nodes
hidden from the conversation, tool and browsing output (role ``tool``: what a tool
returned, never the person's words; kept out of recall rather than stored as tool
results, since no Companion tool made them), assistant messages addressed to a tool
other than the code interpreter (browsing queries, plugin calls), images, and other
content types (the model's hidden reasoning, browsing displays, custom instructions).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from app.imports.common import (
    BadExport,
    Parsed,
    Speaker,
    branch,
    epoch,
    finished,
    parents,
    text_id,
    title_of,
)
from memory import ImportedMessage

SOURCE = "chatgpt"
ROLES: dict[str, Speaker] = {"user": "user", "assistant": "assistant"}
CODE_RUNNERS = ("all", "python")  # recipients whose messages are words or code to keep


def looks_like(item: Any) -> bool:
    """True when a conversation has ChatGPT's shape."""
    return isinstance(item, dict) and isinstance(item.get("mapping"), dict)


def _leaf(conversation: dict[str, Any], mapping: dict[str, Any]) -> str | None:
    """``current_node``, or (an export without one) the last node with no children."""
    current = conversation.get("current_node")
    if isinstance(current, str) and current in mapping:
        return current
    leaves = [key for key, node in mapping.items() if not (node or {}).get("children")]
    return leaves[-1] if leaves else None


def _parts_text(parts: Any, skipped: Counter[str]) -> str:
    """The text parts of a message, joined; anything else (an image) is counted."""
    texts: list[str] = []
    for part in parts if isinstance(parts, list) else []:
        if isinstance(part, str):
            texts.append(part)
        else:
            skipped["image or file"] += 1
    return "\n".join(text for text in texts if text.strip())


def _text(message: dict[str, Any], skipped: Counter[str]) -> str | None:
    """What a message says, or None when it is not words to keep (counted)."""
    content = message.get("content") or {}
    kind = content.get("content_type")
    if message.get("recipient", "all") not in CODE_RUNNERS:
        skipped["message to a tool"] += 1  # a browsing query, a plugin call
        return None
    if kind == "code":
        code = content.get("text") or ""
        language = content.get("language") or ""
        if language == "unknown":
            language = ""
        return f"```{language}\n{code}\n```" if code.strip() else ""
    if kind in ("text", "multimodal_text"):
        return _parts_text(content.get("parts"), skipped)
    skipped[f"content type {kind}"] += 1
    return None


def _message(message: dict[str, Any], skipped: Counter[str]) -> tuple[Speaker, str] | None:
    """(role, text) of a message to keep, or None (counted in ``skipped``)."""
    role = (message.get("author") or {}).get("role")
    if role == "system":
        skipped["system message"] += 1
        return None
    if (message.get("metadata") or {}).get("is_visually_hidden_from_conversation"):
        skipped["hidden message"] += 1
        return None
    if role not in ROLES:
        skipped["tool output"] += 1
        return None
    text = _text(message, skipped)
    if text is None:
        return None
    if not text.strip():
        skipped["empty message"] += 1
        return None
    return ROLES[role], text


def parse(conversation: dict[str, Any]) -> Parsed:
    """One ChatGPT conversation: the path to ``current_node`` (BadExport: no id, a cycle
    or a broken tree)."""
    source_id = text_id(conversation.get("conversation_id") or conversation.get("id"), "id")
    title = title_of(conversation.get("title"))
    label = f"{source_id} ({title})"
    mapping = conversation["mapping"]
    created = epoch(conversation.get("create_time"))
    skipped: Counter[str] = Counter()
    messages: list[ImportedMessage] = []
    leaf = _leaf(conversation, mapping)
    when = created  # a message without a time takes the one before it
    for node_id in branch(leaf, parents(mapping, "parent", label), label) if leaf else []:
        message = (mapping[node_id] or {}).get("message")
        if not isinstance(message, dict):
            continue  # the tree's root holds no message
        when = epoch(message.get("create_time")) or when
        kept = _message(message, skipped)
        if kept is not None:
            if when is None:
                raise BadExport(f"conversation {label}: a message has no time")
            messages.append(ImportedMessage(kept[0], kept[1], when))
    return finished(SOURCE, source_id, title, created, messages, skipped)
