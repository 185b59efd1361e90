"""Lexical turn search on SQLite: FTS5 BM25 over every user/assistant message, at bounded cost.

The query is ``memory.rules.search.query_terms`` quoted for FTS5 (never a syntax error).
There is no newest-N scope: the whole history is searched. What bounds the cost at a
million messages is each term's document frequency (``messages_vocab``, cached per
process), scaled to the id range searched (a time window holds its share of them): the
rarest terms, up to ``DOC_BUDGET`` documents together, are searched over the whole range;
every term is searched together only over the newest slice expected to hold
``DOC_BUDGET`` of its documents (a word said 80,000 times has little to tell apart
there). A term in more than half of the messages (BM25's IDF ~0) is dropped.
Design: docs/storage.md.
"""

from __future__ import annotations

import threading
from datetime import datetime

from memory.rules.search import MAX_ID, TOP, query_terms
from memory.rules.temporal import TemporalCue
from memory.sqlite.store import SqliteStore, _message
from memory.types import Message, format_time

_ROLES_SQL = "m.role IN ('user', 'assistant')"
DOC_BUDGET = 5000  # documents one FTS5 query may score (~1.6 µs each at 1M messages)
DF_REFRESH = 1.1  # re-read a term's document count once the history grew by 10%

_DF: dict[tuple[str, str], tuple[int, int]] = {}  # (file, term) -> (count, history size)
_DF_LOCK = threading.Lock()


def fts_term(root: str, prefix: bool) -> str:
    """One query term quoted for FTS5 (a prefix term ends in ``*``)."""
    return f'"{root}"*' if prefix else f'"{root}"'


def fts_query(text: str) -> str | None:
    """A safe FTS5 query from free text: ``query_terms`` quoted, OR-joined; None if empty."""
    return " OR ".join(fts_term(root, prefix) for root, prefix in query_terms(text)) or None


def window_ids(store: SqliteStore, start: datetime, end: datetime) -> tuple[int, int] | None:
    """The id range of the messages inside a time window (None when it is empty)."""
    row = store.conn.execute(
        "SELECT MIN(id), MAX(id) FROM messages WHERE created_at >= ? AND created_at < ?",
        (format_time(start), format_time(end)),
    ).fetchone()
    return (int(row[0]), int(row[1])) if row and row[0] is not None else None


def _document_count(store: SqliteStore, root: str, prefix: bool, size: int) -> int:
    """How many messages hold the term (prefix terms: every word it starts), cached."""
    key = (str(store.path), fts_term(root, prefix))
    with _DF_LOCK:
        cached = _DF.get(key)
    if cached and size <= cached[1] * DF_REFRESH:
        return cached[0]
    if prefix:
        upper = root[:-1] + chr(ord(root[-1]) + 1)
        row = store.conn.execute(
            "SELECT SUM(doc) FROM messages_vocab WHERE term >= ? AND term < ?", (root, upper)
        ).fetchone()
    else:
        row = store.conn.execute(
            "SELECT doc FROM messages_vocab WHERE term = ?", (root,)
        ).fetchone()
    count = int(row[0] or 0) if row else 0
    with _DF_LOCK:
        _DF[key] = (count, size)
    return count


def _plan(store: SqliteStore, query: str, low: int, high: int, top: int) -> list[tuple[str, int]]:
    """The FTS5 queries to run and the lowest id each covers: the rare terms over
    [low, high], then every useful term over the newest slice. ``top`` is the newest
    message's id (ids stand in for the history's size)."""
    size = high - low + 1
    history = max(top, size, 1)
    counted = sorted(
        (
            (fts_term(root, prefix), _document_count(store, root, prefix, history))
            for root, prefix in query_terms(query)
        ),
        key=lambda term: term[1],
    )
    # a small history keeps every term; each term's documents expected in the range
    useful = [
        (t, count * size // history)
        for t, count in counted
        if count * 2 <= history or history < 2 * DOC_BUDGET
    ]
    rare: list[str] = []
    spent = 0
    for term, count in useful:
        if spent + count > DOC_BUDGET:
            break
        rare.append(term)
        spent += count
    plan = [(" OR ".join(rare), low)] if rare else []
    if len(rare) < len(useful):
        total = sum(count for _, count in useful)
        span = max(1, size * DOC_BUDGET // max(total, 1))
        plan.append((" OR ".join(term for term, _ in useful), max(low, high - span)))
    return plan


def bounded_searches(store: SqliteStore, query: str) -> list[tuple[str, bool]]:
    """The FTS5 queries a bounded search of ``query`` runs (``lexical``'s plan over the
    whole history), each with True when it must stay among the newest rows: for
    searches of other tables (memory.sqlite.segments)."""
    top = int(store.conn.execute("SELECT COALESCE(MAX(id), 0) FROM messages").fetchone()[0])
    return [(match, floor > 0) for match, floor in _plan(store, query, 0, top, top)]


def lexical(
    store: SqliteStore,
    query: str,
    *,
    low: int = 0,
    high: int = MAX_ID,
    window: tuple[datetime, datetime] | None = None,
    session_id: str | None = None,
    newest_first: bool = False,
    limit: int = TOP,
) -> dict[int, float]:
    """Message id -> relevance (−BM25, higher is better) of the user/assistant messages
    with ids in [low, high] (and inside ``window``) that match ``query``. With
    ``newest_first`` (a "last time I…" question) the newest matches come back instead,
    scored by recency."""
    top = int(store.conn.execute("SELECT COALESCE(MAX(id), 0) FROM messages").fetchone()[0])
    high = min(high, top)
    if high < low:
        return {}
    found: dict[int, float] = {}
    for match, floor in _plan(store, query, low, high, top):
        for message_id, score in _run(
            store, match, floor, high, window, session_id, newest_first, limit
        ):
            found[message_id] = max(score, found.get(message_id, score))
    if newest_first:
        newest = sorted(found, reverse=True)[:limit]
        return {message_id: 1.0 - rank / len(newest) for rank, message_id in enumerate(newest)}
    return found


def _run(
    store: SqliteStore,
    match: str,
    low: int,
    high: int,
    window: tuple[datetime, datetime] | None,
    session_id: str | None,
    newest_first: bool,
    limit: int,
) -> list[tuple[int, float]]:
    sql = (
        "SELECT m.id, -bm25(messages_fts) FROM messages_fts "
        "JOIN messages m ON m.id = messages_fts.rowid "
        f"WHERE messages_fts MATCH ? AND messages_fts.rowid BETWEEN ? AND ? AND {_ROLES_SQL}"
    )
    params: list[object] = [match, low, high]
    if session_id is not None:
        sql += " AND m.session_id = ?"
        params.append(session_id)
    if window:
        sql += " AND m.created_at >= ? AND m.created_at < ?"
        params += [format_time(window[0]), format_time(window[1])]
    # Ordering by the FTS rowid keeps FTS5 as the outer loop (one index scan); ordering by
    # m.id would make SQLite probe FTS5 once per message, 40x slower at 1M messages.
    order = "messages_fts.rowid DESC" if newest_first else "bm25(messages_fts)"
    sql += f" ORDER BY {order} LIMIT ?"
    params.append(limit)
    return [(int(row[0]), float(row[1])) for row in store.conn.execute(sql, params)]


def newest(
    store: SqliteStore,
    low: int,
    high: int,
    window: tuple[datetime, datetime] | None,
    limit: int,
) -> list[int]:
    """Ids of the newest ``limit`` user/assistant messages in range, newest first."""
    sql = f"SELECT m.id FROM messages m WHERE m.id BETWEEN ? AND ? AND {_ROLES_SQL}"
    params: list[object] = [low, high]
    if window:
        sql += " AND m.created_at >= ? AND m.created_at < ?"
        params += [format_time(window[0]), format_time(window[1])]
    sql += " ORDER BY m.id DESC LIMIT ?"
    params.append(limit)
    return [int(row[0]) for row in store.conn.execute(sql, params)]


def search_messages(
    store: SqliteStore,
    query: str,
    *,
    session_id: str | None = None,
    prefer: str | None = None,
    cue: TemporalCue | None = None,
    before_id: int | None = None,
    limit: int = TOP,
) -> list[Message]:
    """Lexical search alone, as messages, best first (newest first for a "recent" cue);
    the window's newest messages when no word matches. ``session_id`` None searches every
    session; ``prefer``'s messages win ties; ``before_id`` leaves out the question and
    what follows it. (memory_search fuses it with dense search: memory.sqlite.recall.)"""
    upper = (before_id if before_id is not None else MAX_ID) - 1
    window = (cue.start, cue.end) if cue and cue.start and cue.end else None
    low, high = 0, upper
    if window:
        ids = window_ids(store, *window)
        if ids is None:
            return []
        low, high = ids[0], min(ids[1], upper)
    recent = bool(cue and cue.recent)
    scores = lexical(
        store,
        query,
        low=low,
        high=high,
        window=window,
        session_id=session_id,
        newest_first=recent,
        limit=limit,
    )
    if not scores:
        fallback = newest(store, low, high, window, limit) if window or recent else []
        found = messages_by_id(store, fallback)
        return [found[i] for i in sorted(found)]
    found = messages_by_id(store, list(scores))
    ranked = sorted(found.values(), key=lambda m: (-scores[m.id], m.session_id != prefer, -m.id))
    return ranked[:limit]


def messages_by_id(store: SqliteStore, ids: list[int]) -> dict[int, Message]:
    """The messages with these ids (those still stored)."""
    if not ids:
        return {}
    marks = ",".join("?" * len(ids))
    rows = store.conn.execute(f"SELECT * FROM messages WHERE id IN ({marks})", ids).fetchall()
    return {int(row["id"]): _message(row) for row in rows}
