"""Raw message search on SQLite: BM25 over the newest messages, or a question's time window.

User and assistant messages only; the query is ``memory.rules.search.query_terms`` quoted
for FTS5 (never a syntax error); every query is bounded by message id before FTS5 is
asked, so its cost follows the recent slice, not the database. Design: docs/storage.md.
"""

from __future__ import annotations

from datetime import datetime

from memory.rules.search import MAX_ID, SCOPE, TOP, query_terms
from memory.rules.temporal import TemporalCue
from memory.sqlite.store import SqliteStore, _message
from memory.types import Message, format_time

_ROLES_SQL = "m.role IN ('user', 'assistant')"


def fts_query(text: str) -> str | None:
    """A safe FTS5 query from free text: ``query_terms`` quoted, OR-joined; None if empty."""
    terms = [f'"{root}"*' if prefix else f'"{root}"' for root, prefix in query_terms(text)]
    return " OR ".join(terms) or None


def latest_user_message_id(store: SqliteStore, session_id: str) -> int | None:
    """Id of the session's newest user message (the question being answered now)."""
    row = store.conn.execute(
        "SELECT MAX(id) FROM messages WHERE session_id = ? AND role = 'user'", (session_id,)
    ).fetchone()
    return row[0]


def _scope_floor(store: SqliteStore, session_id: str | None, before_id: int, scope: int) -> int:
    """Smallest id among the last ``scope`` messages before ``before_id``."""
    if session_id is None:
        row = store.conn.execute(
            "SELECT id FROM messages WHERE id < ? ORDER BY id DESC LIMIT 1 OFFSET ?",
            (before_id, scope - 1),
        ).fetchone()
    else:
        row = store.conn.execute(
            """SELECT id FROM messages WHERE session_id = ? AND id < ?
               ORDER BY id DESC LIMIT 1 OFFSET ?""",
            (session_id, before_id, scope - 1),
        ).fetchone()
    return int(row[0]) if row else 0


def _window_ids(
    store: SqliteStore, session_id: str | None, start: datetime, end: datetime
) -> tuple[int, int] | None:
    """The id range of the messages inside a time window (None when it is empty)."""
    if session_id is None:
        row = store.conn.execute(
            "SELECT MIN(id), MAX(id) FROM messages WHERE created_at >= ? AND created_at < ?",
            (format_time(start), format_time(end)),
        ).fetchone()
    else:
        row = store.conn.execute(
            """SELECT MIN(id), MAX(id) FROM messages
               WHERE session_id = ? AND created_at >= ? AND created_at < ?""",
            (session_id, format_time(start), format_time(end)),
        ).fetchone()
    return (int(row[0]), int(row[1])) if row and row[0] is not None else None


def search_messages(
    store: SqliteStore,
    query: str,
    *,
    session_id: str | None = None,
    prefer: str | None = None,
    cue: TemporalCue | None = None,
    before_id: int | None = None,
    scope: int = SCOPE,
    limit: int = TOP,
) -> list[Message]:
    """User/assistant messages matching ``query``, best first (newest first for a
    "recent" cue); messages of the cue's window, or the newest, when no keyword matches.

    ``session_id`` None searches every session; ``prefer`` names the session whose
    messages win ties of relevance (the current one); ``before_id`` leaves out the
    question being answered (and anything after it).
    """
    upper = before_id if before_id is not None else MAX_ID
    window = (cue.start, cue.end) if cue and cue.start and cue.end else None
    if window:
        ids = _window_ids(store, session_id, *window)
        if ids is None:
            return []
        low, high = ids[0], min(ids[1], upper - 1)
    else:
        low, high = _scope_floor(store, session_id, upper, scope), upper - 1
    if high < low:
        return []
    match = fts_query(query)
    if match:
        hits = _keyword(store, match, session_id, prefer, low, high, window, cue, limit)
        if hits:
            return hits
    if window or (cue and cue.recent):
        return _newest(store, session_id, low, high, window, limit)
    return []


def _keyword(
    store: SqliteStore,
    match: str,
    session_id: str | None,
    prefer: str | None,
    low: int,
    high: int,
    window: tuple[datetime, datetime] | None,
    cue: TemporalCue | None,
    limit: int,
) -> list[Message]:
    sql = (
        "SELECT m.* FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid "
        f"WHERE messages_fts MATCH ? AND messages_fts.rowid BETWEEN ? AND ? AND {_ROLES_SQL}"
    )
    params: list[object] = [match, low, high]
    if session_id is not None:
        sql += " AND m.session_id = ?"
        params.append(session_id)
    if window:
        sql += " AND m.created_at >= ? AND m.created_at < ?"
        params += [format_time(window[0]), format_time(window[1])]
    # A "recent" cue ("last time I…") wants the newest occurrence, not the best-worded one.
    # Ordering by the FTS rowid keeps FTS5 as the outer loop (one index scan); ordering by
    # m.id would make SQLite probe FTS5 once per message, 40x slower at 1M messages.
    if cue and cue.recent:
        sql += " ORDER BY messages_fts.rowid DESC"
    else:
        # Equal scores: the preferred session first, then the newer message.
        sql += " ORDER BY bm25(messages_fts), m.session_id IS ? DESC, messages_fts.rowid DESC"
        params.append(prefer)
    sql += " LIMIT ?"
    params.append(limit)
    return [_message(row) for row in store.conn.execute(sql, params).fetchall()]


def _newest(
    store: SqliteStore,
    session_id: str | None,
    low: int,
    high: int,
    window: tuple[datetime, datetime] | None,
    limit: int,
) -> list[Message]:
    """The newest ``limit`` user/assistant messages in range, oldest first."""
    sql = f"SELECT m.* FROM messages m WHERE m.id BETWEEN ? AND ? AND {_ROLES_SQL}"
    params: list[object] = [low, high]
    if session_id is not None:
        sql += " AND m.session_id = ?"
        params.append(session_id)
    if window:
        sql += " AND m.created_at >= ? AND m.created_at < ?"
        params += [format_time(window[0]), format_time(window[1])]
    sql += " ORDER BY m.id DESC LIMIT ?"
    params.append(limit)
    rows = store.conn.execute(sql, params).fetchall()
    return [_message(row) for row in reversed(rows)]
