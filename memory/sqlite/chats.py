"""What the chat list and the Graph tab keep on SQLite: pins, the search across chats,
each answer's trace and the person's rating of it (``AsyncStore.set_pinned``,
``search_chats``, ``save_trace``, ``turn_trace``, ``traced_answers``, ``set_feedback``,
``feedback``). Blocking functions over a ``SqliteStore``; ``memory.sqlite.async_store``
runs them on its threads. The rules the backends share: ``memory.rules.chat_search``.
"""

from __future__ import annotations

import json
from typing import Any

from memory.errors import StoreError
from memory.rules.chat_search import chat_hits, checked_rating, feedback_query, version
from memory.sqlite.retrieval import search_messages
from memory.sqlite.store import SqliteStore
from memory.types import ChatHit, Feedback


def set_pinned(store: SqliteStore, session_id: str, pinned: bool) -> None:
    """Pin a session (its pin's time orders the pinned ones) or unpin it."""
    with store.transaction() as conn:
        cursor = conn.execute(
            "UPDATE sessions SET pinned_at = ? WHERE id = ?",
            (store.now() if pinned else None, session_id),
        )
    if cursor.rowcount == 0:
        raise StoreError(f"no session {session_id!r}")


def chat_version(store: SqliteStore, session_id: str | None) -> str:
    """The newest message's id, the session's message count, every chat's title and pin
    and the session's running turns, as one token (``memory.rules.chat_search.version``)."""
    row = store.conn.execute(
        """SELECT (SELECT MAX(id) FROM messages),
                  (SELECT COUNT(*) FROM messages WHERE session_id = ?),
                  (SELECT group_concat(chat, char(10)) FROM (
                      SELECT id || ' ' || COALESCE(pinned_at, '') || ' ' || title AS chat
                      FROM sessions ORDER BY id)),
                  (SELECT group_concat(id, ' ') FROM (
                      SELECT id FROM running_turns WHERE session_id = ? ORDER BY id))""",
        (session_id, session_id),
    ).fetchone()
    return version(row[0], row[1], row[2], row[3])


def search_chats(store: SqliteStore, query: str, limit: int = 20) -> list[ChatHit]:
    """Titles holding the query's words, then messages FTS5 ranks best (one per hit)."""
    if not query.strip():
        return []
    found = search_messages(store, query, limit=limit)
    return chat_hits(query, store.list_sessions(), found, limit)


def save_trace(store: SqliteStore, message_id: int, trace: dict[str, Any]) -> None:
    """Keep ``trace`` with the answer ``message_id`` (a second one replaces it)."""
    text = json.dumps(trace, ensure_ascii=False, default=str)
    with store.transaction() as conn:
        conn.execute(
            "INSERT OR REPLACE INTO answer_traces (message_id, trace) VALUES (?, ?)",
            (message_id, text),
        )


def turn_trace(store: SqliteStore, message_id: int) -> dict[str, Any] | None:
    """The trace kept with an answer, or None."""
    row = store.conn.execute(
        "SELECT trace FROM answer_traces WHERE message_id = ?", (message_id,)
    ).fetchone()
    return json.loads(row["trace"]) if row else None


def traced_answers(store: SqliteStore, session_id: str) -> list[int]:
    """The session's answers with a trace, oldest first."""
    rows = store.conn.execute(
        """SELECT t.message_id FROM answer_traces t JOIN messages m ON m.id = t.message_id
           WHERE m.session_id = ? ORDER BY t.message_id""",
        (session_id,),
    ).fetchall()
    return [int(row["message_id"]) for row in rows]


def set_feedback(
    store: SqliteStore, message_id: int, rating: int | None, comment: str = ""
) -> None:
    """Rate the answer ``message_id`` (or clear its rating with None)."""
    rating, comment = checked_rating(rating, comment)
    with store.transaction() as conn:
        role = conn.execute("SELECT role FROM messages WHERE id = ?", (message_id,)).fetchone()
        if role is None or role["role"] != "assistant":
            raise StoreError(f"no answer {message_id!r} to rate")
        if rating is None:
            conn.execute("DELETE FROM answer_feedback WHERE message_id = ?", (message_id,))
            return
        conn.execute(
            """INSERT OR REPLACE INTO answer_feedback (message_id, rating, comment, created_at)
               VALUES (?, ?, ?, ?)""",
            (message_id, rating, comment, store.now()),
        )


def feedback(store: SqliteStore, session_id: str | None = None) -> list[Feedback]:
    """The ratings (of ``session_id``, or every session's), newest first."""
    rows = store.conn.execute(*feedback_query(session_id, "?"))
    return [Feedback(**dict(row)) for row in rows]
