"""Open WebUI's chat export (Settings → Chats → Export, or a chat's own download): a JSON
list of chats as its backend keeps them (``ChatModel``: ``id``, ``title``, ``chat``,
``created_at`` and ``updated_at`` in epoch seconds).

``chat.history.messages`` maps each message's id to the message (``parentId``,
``childrenIds``, ``role``, ``content`` text, ``timestamp`` in epoch seconds);
``chat.history.currentId`` is the message the person last saw, so, as for ChatGPT, only
the path from the root to it is kept (a regenerated answer or an edited message is a
sibling branch). Messages of other roles (system) are left out and counted.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import app.imports.common as common
from app.imports.common import BadExport, Parsed, Speaker
from memory import ImportedMessage

SOURCE = "openwebui"
ROLES: dict[str, Speaker] = {"user": "user", "assistant": "assistant"}


def _history(item: Any) -> dict[str, Any] | None:
    chat = item.get("chat") if isinstance(item, dict) else None
    history = chat.get("history") if isinstance(chat, dict) else None
    return history if isinstance(history, dict) else None


def looks_like(item: Any) -> bool:
    """True when a conversation has Open WebUI's shape."""
    history = _history(item)
    return history is not None and isinstance(history.get("messages"), dict)


def _leaf(current: Any, listed: Any, tree: dict[str, Any]) -> str | None:
    """The message the person last saw: ``currentId``, or (an export without it) the
    last of ``chat.messages``, the branch the app showed."""
    if isinstance(current, str) and current in tree:
        return current
    last = listed[-1] if isinstance(listed, list) and listed else None
    found = last.get("id") if isinstance(last, dict) else None
    return found if isinstance(found, str) and found in tree else None


def parse(item: dict[str, Any]) -> Parsed:
    """One Open WebUI chat: the path to ``currentId`` (BadExport: no id, a cycle, a broken
    tree, no time)."""
    source_id = common.text_id(item.get("id"), "id")
    title = common.title_of(item.get("title") or item["chat"].get("title"))
    label = f"{source_id} ({title})"
    history = _history(item) or {}
    tree: dict[str, Any] = history["messages"]
    leaf = _leaf(history.get("currentId"), item["chat"].get("messages"), tree)
    created = common.epoch(item.get("created_at")) or common.epoch(item["chat"].get("timestamp"))
    skipped: Counter[str] = Counter()
    messages: list[ImportedMessage] = []
    when = created
    for message_id in (
        common.branch(leaf, common.parents(tree, "parentId", label), label) if leaf else []
    ):
        message = tree[message_id]
        when = common.epoch(message.get("timestamp")) or when
        content = message.get("content")
        if message.get("role") not in ROLES:
            skipped[f"{message.get('role')} message"] += 1
        elif not isinstance(content, str) or not content.strip():
            skipped["empty message"] += 1
        elif when is None:
            raise BadExport(f"conversation {label}: a message has no time")
        else:
            messages.append(ImportedMessage(ROLES[message["role"]], content, when))
    return common.finished(SOURCE, source_id, title, created, messages, skipped)
