"""Postgres rows as the store's value objects, shared by memory.postgres.store and
memory.postgres.recall (timestamps formatted like ``memory.types.format_time``)."""

from __future__ import annotations

from psycopg.rows import DictRow

from memory.types import Memory, Message, Segment, Session, format_time


def message(row: DictRow) -> Message:
    """A ``messages`` row as the store's ``Message``."""
    return Message(
        id=row["id"],
        session_id=row["session_id"],
        role=row["role"],
        content=row["content"],
        created_at=format_time(row["created_at"]),
        tool_name=row["tool_name"],
        tool_call_id=row["tool_call_id"],
        meta=row["meta"] or {},
        image_path=row["image_path"],
    )


def session(row: DictRow) -> Session:
    """A ``sessions`` row (with ``active_at`` when the query adds it) as a ``Session``."""
    active_at = row.get("active_at")
    return Session(
        id=row["id"],
        title=row["title"],
        persona=row["persona"],
        created_at=format_time(row["created_at"]),
        active_at=format_time(active_at) if active_at else "",
        pinned=row.get("pinned_at") is not None,
        renamed=bool(row.get("renamed")),
    )


def memory(row: DictRow) -> Memory:
    """A ``memories`` row as a ``Memory``."""
    recalled = row["last_recalled_at"]
    return Memory(
        id=row["id"],
        category=row["category"],
        key=row["key"],
        value=row["value"],
        created_at=format_time(row["created_at"]),
        updated_at=format_time(row["updated_at"]),
        stability=row["stability"],
        difficulty=row["difficulty"],
        last_recalled_at=format_time(recalled) if recalled else None,
        recall_count=row["recall_count"],
    )


def segment(row: DictRow) -> Segment:
    """A ``segments`` row as a ``Segment``."""
    return Segment(
        id=row["id"],
        session_id=row["session_id"],
        start_message_id=row["start_message_id"],
        end_message_id=row["end_message_id"],
        start_at=format_time(row["start_at"]),
        end_at=format_time(row["end_at"]),
        summary=row["summary"],
        summary_kind=row["summary_kind"],
    )
