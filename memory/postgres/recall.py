"""Recall and episodes on Postgres: memory_search's recall, and cutting segments.

The same behaviour as SQLite (tests/memory/contract/test_recall.py): every pure step
is ``memory.rules``'; only the queries differ (a ``tsvector`` with ``companion_words``,
``ts_rank`` where SQLite has BM25). Each function works through one person's store's
transactions, so row-level security keeps it to that person. Design: docs/postgres.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from typing import Protocol

from psycopg import AsyncCursor
from psycopg.rows import DictRow

from memory.postgres import rows as pg_rows
from memory.rules.episodes import (
    CATCH_UP_BUDGET,
    closed_spans,
    pick_lines,
    read_cap,
    summarise_spans,
)
from memory.rules.memories import best_matches, recalled_strength
from memory.rules.search import MAX_ID, SCOPE, SEGMENT_LIMIT, SEMANTIC_LIMIT, THIN, TOP, query_terms
from memory.rules.temporal import TemporalCue, parse_temporal
from memory.types import (
    Clock,
    Episode,
    Memory,
    Message,
    RecalledTurn,
    Recollection,
    Segment,
    Summarizer,
    parse_time,
)

Cursor = AsyncCursor[DictRow]


class PersonStore(Protocol):
    """What these functions need of ``memory.postgres.store.PgStore`` (named structurally:
    pg_store imports this module, so this module never imports it)."""

    clock: Clock

    def _transaction(self) -> AbstractAsyncContextManager[Cursor]:
        """A cursor (dict rows) in one transaction scoped to the store's person."""
        ...


_MESSAGE_COLUMNS = (
    "m.id, m.session_id, m.role, m.content, m.created_at, m.tool_name, m.tool_call_id, "
    "m.meta, m.image_path"
)
_MEMORY_COLUMNS = (
    "id, category, key, value, created_at, updated_at, stability, difficulty, "
    "last_recalled_at, recall_count"
)
_SEGMENT_COLUMNS = (
    "s.id, s.session_id, s.start_message_id, s.end_message_id, s.start_at, s.end_at, "
    "s.summary, s.summary_kind"
)
_ROLES_SQL = "m.role IN ('user', 'assistant')"
# SQLite's all_memories order (BINARY collation: code point order): ties keep it.
_MEMORY_ORDER = 'category COLLATE "C", key COLLATE "C"'
_LENGTH_NORMALISED = 1  # ts_rank's normalisation: divide by 1 + log(document length)
# A query's words, accents folded like the stored text's (schema migration 6).
_TSQUERY = "to_tsquery('companion_words', companion_fold(%s))"


# rows (as memory.postgres.store reads them) ------------------------------------------------


def _second(moment: datetime) -> datetime:
    """A moment to the second, as stored (SQLite compares its text timestamps so)."""
    return moment.replace(microsecond=0)


def tsquery(text: str) -> str | None:
    """A safe ``to_tsquery('companion_words', …)`` text from free text: ``query_terms`` quoted,
    prefix roots with ``:*``, OR-joined; None if there are none.

    Roots are word characters only, so a quote, a backslash or an operator never
    appears inside one."""
    terms = [f"'{root}':*" if prefix else f"'{root}'" for root, prefix in query_terms(text)]
    return " | ".join(terms) or None


# recall -------------------------------------------------------------------------------


async def recall(
    store: PersonStore,
    query: str,
    *,
    now: datetime,
    tz: str,
    session_id: str | None,
    question_id: int | None,
) -> Recollection:
    """memory.sqlite.recall.recall on Postgres: facts (marked recalled at ``now``), episodes and,
    when those are thin or time is named, messages before ``question_id``;
    ``session_id``'s messages win ties. One transaction."""
    cue = parse_temporal(query, now, tz)
    async with store._transaction() as cursor:
        await cursor.execute(f"SELECT {_MEMORY_COLUMNS} FROM memories ORDER BY {_MEMORY_ORDER}")
        memories = [pg_rows.memory(row) for row in await cursor.fetchall()]
        facts = [memory for memory, _ in best_matches(memories, query, now, SEMANTIC_LIMIT)]
        await _mark_recalled(cursor, facts, now)

        spans = await _search_segments(cursor, query, cue, SEGMENT_LIMIT)
        messages: list[Message] = []
        if len(facts) + len(spans) < THIN or cue is not None:
            messages = await _search_messages(
                cursor, query, prefer=session_id, cue=cue, before_id=question_id
            )
        titles = await _session_titles(
            cursor, [s.session_id for s in spans] + [m.session_id for m in messages]
        )
        episodes = [
            Episode(s, titles.get(s.session_id, ""), await _segment_lines(cursor, s, query))
            for s in spans
        ]
    return Recollection(
        facts=facts,
        episodes=episodes,
        turns=[RecalledTurn(m, titles.get(m.session_id, ""), 1.0) for m in messages],
        cue=cue,
    )


async def _mark_recalled(cursor: Cursor, facts: list[Memory], now: datetime) -> None:
    """memory.sqlite.memories.mark_recalled: each fact's FSRS state after a recall at ``now``,
    from its stored row (locked, so two recalls at once both count)."""
    stamp = _second(now)
    for memory_id in dict.fromkeys(memory.id for memory in facts):
        await cursor.execute(
            f"SELECT {_MEMORY_COLUMNS} FROM memories WHERE id = %s FOR UPDATE", (memory_id,)
        )
        row = await cursor.fetchone()
        if row is None:
            continue
        strength = recalled_strength(pg_rows.memory(row), now)
        await cursor.execute(
            """UPDATE memories SET stability = %s, difficulty = %s, last_recalled_at = %s,
                      recall_count = %s WHERE id = %s""",
            (strength.stability, strength.difficulty, stamp, strength.recall_count, memory_id),
        )


async def _session_titles(cursor: Cursor, session_ids: Sequence[str]) -> dict[str, str]:
    """Titles of the given sessions, by id (unknown ids are left out)."""
    ids = sorted(set(session_ids))
    if not ids:
        return {}
    await cursor.execute("SELECT id, title FROM sessions WHERE id = ANY(%s)", (ids,))
    return {row["id"]: row["title"] for row in await cursor.fetchall()}


async def _search_segments(
    cursor: Cursor, query: str, cue: TemporalCue | None, limit: int
) -> list[Segment]:
    """memory.sqlite.segments.search_segments: segments whose summary matches ``query``, within
    the cue's window if any; with a window (or a "recent" cue) but no keyword match, the
    window's segments, newest first."""
    where, params = "", []
    if cue is not None and cue.start is not None and cue.end is not None:
        # Overlap, not containment: a segment that ran across midnight still counts.
        where = " AND s.start_at < %s AND s.end_at >= %s"
        params = [_second(cue.end), _second(cue.start)]
    match = tsquery(query)
    if match:
        await cursor.execute(
            f"""SELECT {_SEGMENT_COLUMNS} FROM segments s, {_TSQUERY} q
                WHERE s.tsv @@ q{where}
                ORDER BY ts_rank(s.tsv, q, {_LENGTH_NORMALISED}) DESC, s.id LIMIT %s""",
            [match, *params, limit],
        )
        rows = await cursor.fetchall()
        if rows:
            return [pg_rows.segment(row) for row in rows]
    if cue is not None and (cue.has_window or cue.recent):
        await cursor.execute(
            f"""SELECT {_SEGMENT_COLUMNS} FROM segments s WHERE true{where}
                ORDER BY s.end_message_id DESC LIMIT %s""",
            [*params, limit],
        )
        return [pg_rows.segment(row) for row in await cursor.fetchall()]
    return []


async def _segment_lines(cursor: Cursor, segment: Segment, query: str) -> list[str]:
    """memory.sqlite.segments.segment_lines: a few of the segment's user/assistant lines, those
    sharing words with ``query`` first."""
    await cursor.execute(
        f"""SELECT m.role, m.content FROM messages m
            WHERE m.session_id = %s AND m.id BETWEEN %s AND %s AND {_ROLES_SQL} ORDER BY m.id""",
        (segment.session_id, segment.start_message_id, segment.end_message_id),
    )
    return pick_lines([(row["role"], row["content"]) for row in await cursor.fetchall()], query)


async def _search_messages(
    cursor: Cursor,
    query: str,
    *,
    prefer: str | None,
    cue: TemporalCue | None,
    before_id: int | None,
) -> list[Message]:
    """memory.sqlite.retrieval.search_messages over every session: user/assistant messages
    matching ``query`` among the newest SCOPE before ``before_id`` or inside the cue's
    window, best first (newest first for a "recent" cue); the window's, or the newest,
    messages when no keyword matches."""
    upper = before_id if before_id is not None else MAX_ID
    window = (_second(cue.start), _second(cue.end)) if cue and cue.start and cue.end else None
    if window:
        await cursor.execute(
            """SELECT MIN(id) AS low, MAX(id) AS high FROM messages
               WHERE created_at >= %s AND created_at < %s""",
            window,
        )
        ids = await cursor.fetchone()
        if ids is None or ids["low"] is None:
            return []
        low, high = int(ids["low"]), min(int(ids["high"]), upper - 1)
    else:
        await cursor.execute(
            "SELECT id FROM messages WHERE id < %s ORDER BY id DESC LIMIT 1 OFFSET %s",
            (upper, SCOPE - 1),
        )
        floor = await cursor.fetchone()
        low, high = (int(floor["id"]) if floor else 0), upper - 1
    if high < low:
        return []
    in_range = f"m.id BETWEEN %s AND %s AND {_ROLES_SQL}"
    params: list[object] = [low, high]
    if window:
        in_range += " AND m.created_at >= %s AND m.created_at < %s"
        params += window
    match = tsquery(query)
    if match:
        if cue and cue.recent:
            # A "recent" cue ("last time I…") wants the newest occurrence.
            order, extra = "m.id DESC", []
        else:
            # Equal scores: the preferred session first, then the newer message.
            order = (
                f"ts_rank(m.tsv, q, {_LENGTH_NORMALISED}) DESC, "
                "m.session_id IS NOT DISTINCT FROM %s::text DESC, m.id DESC"
            )
            extra = [prefer]
        await cursor.execute(
            f"""SELECT {_MESSAGE_COLUMNS} FROM messages m, {_TSQUERY} q
                WHERE m.tsv @@ q AND {in_range} ORDER BY {order} LIMIT %s""",
            [match, *params, *extra, TOP],
        )
        hits = [pg_rows.message(row) for row in await cursor.fetchall()]
        if hits:
            return hits
    if window or (cue and cue.recent):
        await cursor.execute(
            f"""SELECT {_MESSAGE_COLUMNS} FROM messages m WHERE {in_range}
                ORDER BY m.id DESC LIMIT %s""",
            [*params, TOP],
        )
        return [pg_rows.message(row) for row in reversed(await cursor.fetchall())]
    return []


# segments -----------------------------------------------------------------------------


async def refresh_segments(
    store: PersonStore,
    session_id: str,
    summarize: Summarizer | None,
    *,
    force: bool,
    tz: str,
    limit: int | None = None,
) -> int:
    """memory.sqlite.segments.refresh_segments on Postgres: cut and summarise the session's
    closed spans not yet segmented, oldest first (at most ``limit``); how many segments
    were added. ``force`` closes the newest span too."""
    async with store._transaction() as cursor:
        await cursor.execute(
            "SELECT COALESCE(MAX(end_message_id), 0) AS done FROM segments WHERE session_id = %s",
            (session_id,),
        )
        done = await cursor.fetchone()
        await cursor.execute(
            f"""SELECT {_MESSAGE_COLUMNS} FROM messages m WHERE m.session_id = %s AND m.id > %s
                ORDER BY m.id LIMIT %s""",
            (session_id, done["done"] if done else 0, read_cap(limit)),
        )
        unsegmented = [pg_rows.message(row) for row in await cursor.fetchall()]
    spans = closed_spans(unsegmented, force, limit, store.clock())
    if not spans:
        return 0
    summaries = await summarise_spans(spans, session_id, summarize, tz)
    return await _insert(store, session_id, summaries)


async def _insert(
    store: PersonStore, session_id: str, summaries: list[tuple[list[Message], str, str]]
) -> int:
    """Store the summarised spans the session has no segment for yet; how many."""
    added = 0
    async with store._transaction() as cursor:
        # Another refresh may have run while we were summarising: skip what it stored.
        # Locking the session's row makes a concurrent one wait for this to commit.
        await cursor.execute("SELECT 1 FROM sessions WHERE id = %s FOR UPDATE", (session_id,))
        await cursor.execute(
            "SELECT COALESCE(MAX(end_message_id), 0) AS done FROM segments WHERE session_id = %s",
            (session_id,),
        )
        row = await cursor.fetchone()
        done = int(row["done"]) if row else 0
        for span, summary, kind in summaries:
            if span[0].id <= done:
                continue
            await cursor.execute(
                """INSERT INTO segments (session_id, start_message_id, end_message_id,
                                         start_at, end_at, summary, summary_kind)
                   VALUES (%s, %s, %s, %s, %s, %s, %s)""",
                (
                    session_id,
                    span[0].id,
                    span[-1].id,
                    parse_time(span[0].created_at),
                    parse_time(span[-1].created_at),
                    summary,
                    kind,
                ),
            )
            added += 1
    return added


async def pending_sessions(store: PersonStore) -> list[str]:
    """Sessions with messages not yet in a segment, least recently active first."""
    async with store._transaction() as cursor:
        await cursor.execute(
            """SELECT id FROM (
                   SELECT s.id,
                          (SELECT MAX(m.id) FROM messages m WHERE m.session_id = s.id)
                              AS last_id,
                          (SELECT MAX(g.end_message_id) FROM segments g
                           WHERE g.session_id = s.id) AS done
                   FROM sessions s) pending
               WHERE last_id > COALESCE(done, 0) ORDER BY last_id"""
        )
        return [row["id"] for row in await cursor.fetchall()]


async def catch_up_segments(
    store: PersonStore, summarize: Summarizer | None, *, tz: str, budget: int = CATCH_UP_BUDGET
) -> int:
    """memory.sqlite.segments.catch_up_segments on Postgres: summarise every session's closed
    spans not yet segmented, least recently active sessions first, at most ``budget``
    segments per call; how many were added (call again until 0)."""
    added = 0
    for session_id in await pending_sessions(store):
        if added >= budget:
            break
        added += await refresh_segments(
            store, session_id, summarize, force=False, tz=tz, limit=budget - added
        )
    return added
