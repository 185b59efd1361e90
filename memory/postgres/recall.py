"""Recall and segments on Postgres: memory_search's recall, and cutting segments.

The same behaviour as SQLite (tests/memory/contract/test_recall.py): every pure step
is ``memory.rules``'; only the queries differ (turns: BM25 over the search table,
memory.postgres.lexical; segments: a ``tsvector`` with ``companion_words`` and
``ts_rank``). Each function works through one person's store's
transactions, so row-level security keeps it to that person. Design: docs/postgres.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import replace
from datetime import datetime
from typing import Any, Protocol

import numpy
from psycopg import AsyncCursor
from psycopg.rows import DictRow

from memory.postgres import lexical as pg_lexical
from memory.postgres import rows as pg_rows
from memory.postgres import vectors as pg_vectors
from memory.query_vector import QueryVector, vector_awaited
from memory.rules.anchors import Anchor, anchored
from memory.rules.budget import TURN_BUDGET
from memory.rules.fusion import CANDIDATES, fuse, kept, matched, rank
from memory.rules.memories import best_matches, recalled_strength
from memory.rules.search import MAX_ID, SEGMENT_LIMIT, SEMANTIC_LIMIT, query_terms
from memory.rules.segments import CATCH_UP_BUDGET, closed_segments, read_cap, summarise_segments
from memory.rules.speaker import preferred_speaker, wants_after, wants_before
from memory.rules.temporal import TemporalCue, parse_temporal
from memory.types import (
    Clock,
    Memory,
    Message,
    RecalledSegment,
    RecalledTurn,
    RecallMode,
    Recollection,
    Segment,
    Summarizer,
    format_time,
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

    async def _rows(self, query: str, params: Sequence[Any] = ()) -> list[DictRow]:
        """One statement's rows, in a transaction of its own scoped to the store's person
        (one round trip)."""
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
# A window's (or a "last time" question's) newest turns when no word or meaning matched.
FALLBACK_SCORE = 0.5
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
    vector: numpy.ndarray | QueryVector | None = None,
    vector_model: str | None = None,
    mode: RecallMode = "hybrid",
    turns: int = TURN_BUDGET,
) -> Recollection:
    """memory.sqlite.recall.recall on Postgres: facts (marked recalled at ``now``), the
    ``turns`` best turns before ``question_id`` (lexical fused with the nearest to
    ``vector`` under ``vector_model``; ``session_id``'s win ties) with their neighbours,
    and the matching segments. One transaction."""
    cue = parse_temporal(query, now, tz)
    async with store._transaction() as cursor:
        await cursor.execute(f"SELECT {_MEMORY_COLUMNS} FROM memories ORDER BY {_MEMORY_ORDER}")
        memories = [pg_rows.memory(row) for row in await cursor.fetchall()]
        facts = [memory for memory, _ in best_matches(memories, query, now, SEMANTIC_LIMIT)]
        await _mark_recalled(cursor, facts, now)

        search = await TurnSearch.start(cursor, query, cue, session_id, question_id)
        search.names = [m.value for m in memories if _names_the_user(m)]
        best, searched = await search.run(vector, vector_model, mode, turns)
        found_segments = await _search_segments(cursor, query, cue, SEGMENT_LIMIT)
        titles = await _session_titles(
            cursor, [s.session_id for s in found_segments] + [t.message.session_id for t in best]
        )
    return Recollection(
        facts=facts,
        segments=[RecalledSegment(s, titles.get(s.session_id, "")) for s in found_segments],
        turns=[replace(t, session_title=titles.get(t.message.session_id, "")) for t in best],
        cue=cue,
        searched=searched,
    )


def _names_the_user(memory: Memory) -> bool:
    """An identity fact naming a name (SQLite: key LIKE '%name%', ASCII case folded)."""
    return memory.category == "identity" and "name" in memory.key.lower()


async def _ids_in(cursor: Cursor, window: tuple[datetime, datetime]) -> tuple[int, int] | None:
    """The id range of the messages said inside ``window`` (None when it is empty).

    Read from the window's rows of the (person, created_at, id) index: ``OFFSET 0`` keeps
    the planner from answering MIN and MAX by walking the id index from either end, which
    read most of the history for a window near its end (130 ms at 200,000 messages)."""
    await cursor.execute(
        """SELECT MIN(id) AS low, MAX(id) AS high FROM (
               SELECT id FROM messages WHERE created_at >= %s AND created_at < %s OFFSET 0) w""",
        window,
    )
    row = await cursor.fetchone()
    if row is None or row["low"] is None:
        return None
    return int(row["low"]), int(row["high"])


class TurnSearch:
    """One question's search of the turns on Postgres: the id range it may return
    (before the question; inside a named time window), the window, and preferences."""

    def __init__(
        self,
        cursor: Cursor,
        query: str,
        ids: tuple[int, int],
        window: tuple[datetime, datetime] | None,
        recent: bool,
        session_id: str | None,
    ) -> None:
        self.cursor = cursor
        self.query = query
        self.low, self.high = ids
        self.window = window
        self.recent = recent
        self.session_id = session_id
        self.names: list[str] = []

    @classmethod
    async def start(
        cls,
        cursor: Cursor,
        query: str,
        cue: TemporalCue | None,
        session_id: str | None,
        question_id: int | None,
    ) -> TurnSearch:
        """The search for ``query``, asked by ``question_id`` (None: after everything)."""
        high = (question_id if question_id is not None else MAX_ID) - 1
        window = (_second(cue.start), _second(cue.end)) if cue and cue.start and cue.end else None
        low = 0
        if window:
            ids = await _ids_in(cursor, window)
            low, high = (ids[0], min(ids[1], high)) if ids else (1, 0)
        recent = bool(cue and cue.recent)
        return cls(cursor, query, (low, high), window, recent, session_id)

    async def run(
        self,
        vector: numpy.ndarray | QueryVector | None,
        model: str | None,
        mode: RecallMode,
        limit: int,
    ) -> tuple[list[RecalledTurn], RecallMode]:
        """The ``limit`` best turns (titles left blank) and the retrievers that ran."""
        anchor = anchored(self.query) if self.window is None else None
        if anchor is not None and await self._hang_on(anchor, vector, model, mode):
            self.query, vector = anchor.rest, None  # the span's turns, by what is asked
        if self.high < self.low:
            return [], "lexical"
        words = await self._lexical(self.query, self.recent) if mode != "dense" else {}
        meaning = await self._dense(vector, model) if mode != "lexical" else {}
        searched: RecallMode = mode if meaning else "lexical"
        found = await self._found(words.keys() | meaning.keys())
        share = matched(self.query, words, {i: m.content for i, m in found.items()})
        scores = fuse(words, meaning, share=share)
        if not scores and (self.window or self.recent):
            fallback = await self._newest(CANDIDATES)
            scores = dict.fromkeys(fallback, FALLBACK_SCORE)
            found = await self._found(fallback)
        speaker = preferred_speaker(self.query, self.names)
        best = rank(
            {i: scores[i] for i in found},
            boosted={i for i, m in found.items() if m.role == speaker},
            preferred={i for i, m in found.items() if m.session_id == self.session_id},
            kept=[i for i in kept(words, meaning) if i in found],
            limit=limit,
        )
        return await self._with_neighbours([(found[i], score) for i, score in best]), searched

    async def _hang_on(
        self,
        anchor: Anchor,
        vector: numpy.ndarray | QueryVector | None,
        model: str | None,
        mode: RecallMode,
    ) -> bool:
        """Find the event the question's time hangs on and search the span around it
        from now on; False when no turn names the event (or nothing was said then)."""
        words = await self._lexical(anchor.event, newest_first=False)
        meaning = await self._dense(vector, model) if mode != "lexical" else {}
        scores = fuse(words, meaning)
        if not scores:
            return False
        event = await self._messages([max(scores, key=lambda i: (scores[i], i))])
        if not event:
            return False
        at = parse_time(next(iter(event.values())).created_at)
        window = (_second(at + anchor.start), _second(at + anchor.end))
        ids = await _ids_in(self.cursor, window)
        if ids is None or ids[0] > self.high:
            return False
        self.window, self.low, self.high = window, ids[0], min(ids[1], self.high)
        return True

    async def _dense(
        self, vector: numpy.ndarray | QueryVector | None, model: str | None
    ) -> dict[int, float]:
        """Message id -> cosine of the turns nearest ``vector`` in the range (none without
        a vector or a model); one still being made is awaited here, after the lexical
        search."""
        ready = await vector_awaited(vector) if model else None
        if ready is None or not model:
            return {}
        span = (self.low, self.high)
        return dict(await pg_vectors.nearest(self.cursor, model, ready, span, CANDIDATES))

    def _in_range(self) -> tuple[str, list[object]]:
        """The WHERE of the turns this search may return, and its parameters."""
        where = f"m.id BETWEEN %s AND %s AND {_ROLES_SQL}"
        params: list[object] = [self.low, self.high]
        if self.window:
            where += " AND m.created_at >= %s AND m.created_at < %s"
            params += self.window
        return where, params

    async def _lexical(self, text: str, newest_first: bool) -> dict[int, float]:
        """Message id -> BM25 of the turns of the range matching ``text``, over the whole
        history (memory.postgres.lexical); ``newest_first`` (a "last time I…" question):
        the newest matches, scored by recency."""
        span = (self.low, self.high)
        return await pg_lexical.lexical(
            self.cursor, text, span, self.window, newest_first=newest_first, limit=CANDIDATES
        )

    async def _newest(self, limit: int) -> list[int]:
        """Ids of the range's newest ``limit`` turns, newest first."""
        where, params = self._in_range()
        await self.cursor.execute(
            f"SELECT m.id FROM messages m WHERE {where} ORDER BY m.id DESC LIMIT %s",
            [*params, limit],
        )
        return [int(row["id"]) for row in await self.cursor.fetchall()]

    async def _messages(self, ids: list[int]) -> dict[int, Message]:
        """The messages with these ids (those still stored)."""
        if not ids:
            return {}
        await self.cursor.execute(
            f"SELECT {_MESSAGE_COLUMNS} FROM messages m WHERE m.id = ANY(%s)", (ids,)
        )
        return {int(row["id"]): pg_rows.message(row) for row in await self.cursor.fetchall()}

    async def _found(self, ids: Iterable[int]) -> dict[int, Message]:
        """The messages with these ids that this search may return (``_fits``)."""
        return {i: m for i, m in (await self._messages(list(ids))).items() if self._fits(m)}

    def _fits(self, message: Message) -> bool:
        """A user/assistant turn inside the window (dense hits are only id-bounded)."""
        if message.role not in ("user", "assistant"):
            return False
        if self.window is None:
            return True
        start, end = (format_time(moment) for moment in self.window)
        return start <= message.created_at < end

    async def _with_neighbours(self, best: list[tuple[Message, float]]) -> list[RecalledTurn]:
        """Each hit with the turns said just before and after it in its chat when they
        make it readable (memory.rules.speaker), never one shown on its own."""
        hits = [message for message, _ in best]
        before = await self._beside(hits, "<", "DESC")
        after = await self._beside(hits, ">", "ASC")
        shown = {message.id for message in hits}
        turns = []
        for hit, score in best:
            earlier, later = before.get(hit.id), after.get(hit.id)
            if earlier and (earlier.id in shown or not wants_before(hit.content, earlier.content)):
                earlier = None
            if later and (later.id in shown or not wants_after(hit.content, later.content)):
                later = None
            turns.append(RecalledTurn(hit, "", round(min(score, 1.0), 4), earlier, later))
        return turns

    async def _beside(self, hits: list[Message], side: str, order: str) -> dict[int, Message]:
        """Hit id -> the chat's turn just before or after it (never the question or later)."""
        if not hits:
            return {}
        await self.cursor.execute(
            f"""SELECT h.hit, {_MESSAGE_COLUMNS}
                FROM unnest(%s::bigint[], %s::text[]) AS h (hit, session_id)
                CROSS JOIN LATERAL (
                    SELECT * FROM messages m
                    WHERE m.session_id = h.session_id AND m.id {side} h.hit AND m.id <= %s
                      AND {_ROLES_SQL}
                    ORDER BY m.id {order} LIMIT 1) m""",
            ([hit.id for hit in hits], [hit.session_id for hit in hits], self.high),
        )
        return {int(row["hit"]): pg_rows.message(row) for row in await self.cursor.fetchall()}


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
    closed segments not yet stored, oldest first (at most ``limit``); how many segments
    were added. ``force`` closes the newest span too."""
    rows = await store._rows(
        f"""SELECT {_MESSAGE_COLUMNS} FROM messages m WHERE m.session_id = %s
            AND m.id > (SELECT COALESCE(MAX(end_message_id), 0) FROM segments
                        WHERE session_id = %s)
            ORDER BY m.id LIMIT %s""",
        (session_id, session_id, read_cap(limit)),
    )
    unsegmented = [pg_rows.message(row) for row in rows]
    segments = closed_segments(unsegmented, force, limit, store.clock())
    if not segments:
        return 0
    summaries = await summarise_segments(segments, session_id, summarize, tz)
    return await _insert(store, session_id, summaries)


async def _insert(
    store: PersonStore, session_id: str, summaries: list[tuple[list[Message], str, str]]
) -> int:
    """Store the summarised segments the session has no segment for yet; how many."""
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
    segments not yet stored, least recently active sessions first, at most ``budget``
    segments per call; how many were added (call again until 0)."""
    added = 0
    for session_id in await pending_sessions(store):
        if added >= budget:
            break
        added += await refresh_segments(
            store, session_id, summarize, force=False, tz=tz, limit=budget - added
        )
    return added
