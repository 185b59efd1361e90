"""Segments on SQLite: each session cut into segments (runs of messages), each summarised.

``refresh_segments`` cuts a session's closed segments after each turn, ``catch_up_segments``
every session's at start; the cutting and the summaries are ``memory.rules.segments``'.
Deleting a session deletes its segments. The SQLite work runs off the event loop
(``offload``). Design: docs/storage.md.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Protocol, TypeVar

from memory.rules.segments import (
    CATCH_UP_BUDGET,
    closed_segments,
    read_cap,
    summarise_segments,
)
from memory.rules.temporal import TemporalCue
from memory.sqlite.retrieval import bounded_searches
from memory.sqlite.store import SqliteStore, _message
from memory.types import Message, Segment, Summarizer, format_time

log = logging.getLogger("companion.segments")


T = TypeVar("T")
COMMON_SEGMENTS = 2000  # the newest segments a query of only common words searches


class Offload(Protocol):
    """Runs a blocking store call off the event loop; ``writes`` says whether it writes."""

    def __call__(self, call: Callable[[], T], *, writes: bool) -> Awaitable[T]: ...


async def in_thread(call: Callable[[], T], *, writes: bool) -> T:
    """The default ``Offload``: a worker thread of the default pool."""
    return await asyncio.to_thread(call)


def _segment(row: sqlite3.Row) -> Segment:
    return Segment(
        id=row["id"],
        session_id=row["session_id"],
        start_message_id=row["start_message_id"],
        end_message_id=row["end_message_id"],
        start_at=row["start_at"],
        end_at=row["end_at"],
        summary=row["summary"],
        summary_kind=row["summary_kind"],
    )


def _last_segmented_id(store: SqliteStore, session_id: str) -> int:
    row = store.conn.execute(
        "SELECT MAX(end_message_id) FROM segments WHERE session_id = ?", (session_id,)
    ).fetchone()
    return int(row[0] or 0)


def _closed_segments(
    store: SqliteStore, session_id: str, force: bool, limit: int | None
) -> list[list[Message]]:
    """The session's segments not yet segmented and closed (all of them with ``force``),
    oldest first, at most ``limit``; reads no more messages than those segments need."""
    after = _last_segmented_id(store, session_id)
    cap = read_cap(limit)
    rows = store.conn.execute(
        "SELECT * FROM messages WHERE session_id = ? AND id > ? ORDER BY id LIMIT ?",
        (session_id, after, -1 if cap is None else cap),
    ).fetchall()
    return closed_segments([_message(row) for row in rows], force, limit, store.clock())


def _insert(
    store: SqliteStore, session_id: str, summaries: list[tuple[list[Message], str, str]]
) -> int:
    added = 0
    with store.transaction() as conn:
        # Another refresh may have run while we were summarising: skip what it stored.
        done = (
            conn.execute(
                "SELECT MAX(end_message_id) FROM segments WHERE session_id = ?", (session_id,)
            ).fetchone()[0]
            or 0
        )
        for segment, summary, kind in summaries:
            if segment[0].id <= done:
                continue
            conn.execute(
                """INSERT INTO segments (session_id, start_message_id, end_message_id,
                                         start_at, end_at, summary, summary_kind)
                   VALUES (?, ?, ?, ?, ?, ?, ?)""",
                (
                    session_id,
                    segment[0].id,
                    segment[-1].id,
                    segment[0].created_at,
                    segment[-1].created_at,
                    summary,
                    kind,
                ),
            )
            added += 1
    return added


async def refresh_segments(
    store: SqliteStore,
    session_id: str,
    summarize: Summarizer | None = None,
    *,
    force: bool = False,
    tz: str = "UTC",
    limit: int | None = None,
    offload: Offload = in_thread,
) -> int:
    """Cut and summarise the session's closed segments not yet stored, oldest first (at
    most ``limit`` of them); returns how many segments were added. ``force`` closes the
    newest segment too (the person switched to or started another session)."""
    closed = partial(_closed_segments, store, session_id, force, limit)
    segments = await offload(closed, writes=False)
    if not segments:
        return 0
    summaries = await summarise_segments(segments, session_id, summarize, tz)
    return await offload(lambda: _insert(store, session_id, summaries), writes=True)


def pending_sessions(store: SqliteStore) -> list[str]:
    """Sessions with messages not yet in a segment, least recently active first."""
    rows = store.conn.execute(
        """SELECT id FROM (
               SELECT s.id,
                      (SELECT MAX(m.id) FROM messages m WHERE m.session_id = s.id) AS last_id,
                      (SELECT MAX(g.end_message_id) FROM segments g
                       WHERE g.session_id = s.id) AS done
               FROM sessions s)
           WHERE last_id > COALESCE(done, 0) ORDER BY last_id"""
    ).fetchall()
    return [row["id"] for row in rows]


async def catch_up_segments(
    store: SqliteStore,
    summarize: Summarizer | None = None,
    *,
    tz: str = "UTC",
    budget: int = CATCH_UP_BUDGET,
    offload: Offload = in_thread,
) -> int:
    """Summarise every session's closed segments not yet stored — a segment is closed once
    its last message is over 30 minutes old — least recently active sessions first, at
    most ``budget`` segments per call. Returns how many were added: call again until it
    returns 0 (app start does, in the background)."""
    added = 0
    for session_id in await offload(lambda: pending_sessions(store), writes=False):
        if added >= budget:
            break
        added += await refresh_segments(
            store, session_id, summarize, tz=tz, limit=budget - added, offload=offload
        )
    return added


def list_segments(store: SqliteStore, session_id: str) -> list[Segment]:
    """A session's segments, oldest first."""
    rows = store.conn.execute(
        "SELECT * FROM segments WHERE session_id = ? ORDER BY start_message_id", (session_id,)
    ).fetchall()
    return [_segment(row) for row in rows]


def recent_segments(store: SqliteStore, limit: int = 50) -> list[Segment]:
    """The newest segments of every session, newest first (the Memories tab's segments)."""
    rows = store.conn.execute(
        "SELECT * FROM segments ORDER BY end_at DESC, id DESC LIMIT ?", (limit,)
    ).fetchall()
    return [_segment(row) for row in rows]


def _matching(
    store: SqliteStore, match: str, floor: int, where: str, params: list[str], limit: int
) -> list[tuple[float, Segment]]:
    """(BM25, segment) of the ``limit`` best segments above ``floor`` matching ``match``."""
    # Unfiltered, the best ids are ranked inside FTS5 and only they are joined: with every
    # segment of every session to rank, that is a quarter faster at 1M messages.
    sql = (
        "SELECT s.*, hit.score FROM (SELECT rowid AS id, bm25(segments_fts) AS score "
        "FROM segments_fts WHERE segments_fts MATCH ? AND rowid > ? ORDER BY score LIMIT ?) hit "
        "JOIN segments s ON s.id = hit.id ORDER BY hit.score"
        if not where
        else "SELECT s.*, bm25(segments_fts) AS score FROM segments_fts "
        "JOIN segments s ON s.id = segments_fts.rowid "
        f"WHERE segments_fts MATCH ? AND segments_fts.rowid > ?{where} "
        "ORDER BY bm25(segments_fts) LIMIT ?"
    )
    bound = [match, floor, limit] if not where else [match, floor, *params, limit]
    rows = store.conn.execute(sql, bound).fetchall()
    return [(float(row["score"]), _segment(row)) for row in rows]


def search_segments(
    store: SqliteStore,
    query: str,
    *,
    cue: TemporalCue | None = None,
    session_id: str | None = None,
    limit: int = 5,
) -> list[Segment]:
    """Segments whose summary matches ``query`` (BM25), within the cue's window if any;
    with a window but no keyword match, the window's segments, newest first."""
    where, params = "", []
    if session_id is not None:
        where += " AND s.session_id = ?"
        params.append(session_id)
    if cue is not None and cue.start is not None and cue.end is not None:
        # Overlap, not containment: a segment that ran across midnight still counts.
        where += " AND s.start_at < ? AND s.end_at >= ?"
        params += [format_time(cue.end), format_time(cue.start)]
    newest = store.conn.execute("SELECT COALESCE(MAX(id), 0) FROM segments").fetchone()[0]
    found: dict[int, tuple[float, Segment]] = {}
    # The rare words over every segment, all of them over the newest: bounded at 1M.
    for match, recent in bounded_searches(store, query):
        floor = int(newest) - COMMON_SEGMENTS if recent else 0
        for score, segment in _matching(store, match, floor, where, params, limit):
            if segment.id not in found or score < found[segment.id][0]:
                found[segment.id] = (score, segment)
    if found:
        return [segment for _, segment in sorted(found.values(), key=lambda hit: hit[0])][:limit]
    if cue is not None and (cue.has_window or cue.recent):
        rows = store.conn.execute(
            f"SELECT s.* FROM segments s WHERE 1 = 1{where} ORDER BY s.end_message_id DESC LIMIT ?",
            [*params, limit],
        ).fetchall()
        return [_segment(row) for row in rows]
    return []
