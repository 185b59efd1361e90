"""What the parsers of every app share: a parsed conversation with what it left out, the
error of a bad export, times, and the walk up a message tree."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from memory import ImportedChat, ImportedMessage

Speaker = Literal["user", "assistant"]  # the only roles imported text takes
UNTITLED = "Imported chat"  # a chat with neither a title nor a message
TITLE_CHARS = 60  # an untitled chat is named by its first line, clipped to this
SUBSECOND = 10**11  # an epoch time above this is in ms, µs or ns (in seconds: past year 5138)


class BadExport(Exception):
    """The file cannot be imported (malformed, unsafe, or not an export): one line."""


@dataclass(frozen=True)
class Parsed:
    """One conversation read from an export, and the items it left out by reason."""

    chat: ImportedChat
    skipped: Counter[str] = field(default_factory=Counter)


def epoch(value: Any) -> datetime | None:
    """An epoch time (seconds, or milli-, micro- or nanoseconds when that large) as a UTC
    moment; None for a missing or unreadable one."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    seconds = value
    while seconds > SUBSECOND:
        seconds /= 1000
    try:
        return datetime.fromtimestamp(seconds, UTC)
    except (OverflowError, OSError, ValueError):
        return None


def iso(value: Any) -> datetime | None:
    """An ISO 8601 time ("2024-03-01T10:15:30.123Z") as a UTC moment; None when unreadable."""
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def title_of(value: Any) -> str:
    """The conversation's title ("" when it has none)."""
    return value.strip() if isinstance(value, str) else ""


def _clipped(line: str) -> str:
    """``line`` cut at a word to fit ``TITLE_CHARS`` with its ellipsis."""
    cut = line[: TITLE_CHARS - 1]
    return (cut.rsplit(" ", 1)[0] if " " in cut else cut).rstrip() + "…"


def finished(
    source: str,
    source_id: str,
    title: str,
    created: datetime | None,
    messages: list[ImportedMessage],
    skipped: Counter[str],
) -> Parsed:
    """The parsed conversation: an untitled one is named by its first line (clipped at a word
    to ``TITLE_CHARS``), and it starts at its own time or else its first message's
    (BadExport: it has neither)."""
    if not title and messages:
        line = messages[0].content.strip().splitlines()[0]
        title = line if len(line) <= TITLE_CHARS else _clipped(line)
    title = title or UNTITLED
    start = created or (messages[0].created_at if messages else None)
    if start is None:
        raise BadExport(f"conversation {source_id} ({title}): it has no time")
    return Parsed(ImportedChat(source, source_id, title, start, tuple(messages)), skipped)


def text_id(value: Any, what: str) -> str:
    """The source's id of a conversation (BadExport: it has none)."""
    if isinstance(value, str | int) and not isinstance(value, bool) and str(value):
        return str(value)
    raise BadExport(f"a conversation has no {what}")


def branch(leaf: str, parent_of: Callable[[str], str | None], label: str) -> list[str]:
    """The ids from the tree's root down to ``leaf``, following ``parent_of`` (None at
    the root). BadExport when the walk comes back to a node: the tree has a cycle."""
    path: list[str] = []
    seen: set[str] = set()
    node: str | None = leaf
    while node is not None:
        if node in seen:
            raise BadExport(f"conversation {label}: its message tree has a cycle")
        seen.add(node)
        path.append(node)
        node = parent_of(node)
    path.reverse()
    return path


def parents(nodes: dict[str, Any], key: str, label: str) -> Callable[[str], str | None]:
    """``branch``'s ``parent_of`` over a tree kept as a dict of nodes by id, each naming
    its parent's id under ``key`` (BadExport: a node the tree does not hold)."""

    def parent_of(node_id: str) -> str | None:
        node = nodes.get(node_id)
        if not isinstance(node, dict):
            raise BadExport(f"conversation {label}: node {node_id!r} is missing from its tree")
        parent = node.get(key)
        return parent if isinstance(parent, str) else None

    return parent_of
