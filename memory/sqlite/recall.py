"""Recall on SQLite: facts, the best past turns and segments for a question (memory_search).

Facts rank by relevance × retrievability (those returned count as recalled). Turns are
every user/assistant message of the whole history: lexical (memory.sqlite.retrieval) and,
given a query vector, dense (memory.sqlite.vectors) candidates fused by
memory.rules.fusion, the speaker the question names boosted, the current session winning
ties, each with the neighbours that make it readable (memory.rules.speaker). A time the
question names is a filter. The question itself and what follows it are never returned.
Segments are the segments whose summary or time window matches: pointers into the turns.
Blocking work: async callers run it in a reader thread. Design: docs/storage.md.
"""

from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime

import numpy

from memory.query_vector import QueryVector, vector_now
from memory.rules.anchors import Anchor, anchored
from memory.rules.budget import TURN_BUDGET
from memory.rules.fusion import CANDIDATES, fuse, kept, matched, rank
from memory.rules.search import SEGMENT_LIMIT, SEMANTIC_LIMIT
from memory.rules.speaker import preferred_speaker, wants_after, wants_before
from memory.rules.temporal import TemporalCue, parse_temporal
from memory.sqlite.memories import mark_recalled, search_memories
from memory.sqlite.retrieval import lexical, messages_by_id, newest, window_ids
from memory.sqlite.segments import search_segments
from memory.sqlite.store import SqliteStore, _message
from memory.sqlite.vectors import nearest
from memory.types import (
    Message,
    RecalledSegment,
    RecalledTurn,
    RecallMode,
    Recollection,
    format_time,
    parse_time,
)

_ROLES_SQL = "role IN ('user', 'assistant')"
# A window's (or a "last time" question's) newest turns when no word or meaning matched:
# all equal, so the named speaker's come first, then the newer.
FALLBACK_SCORE = 0.5
# The dense and the segment searches run here, beside the lexical one in the reader thread,
# each on a connection of its own (the dense one waits here for the question's vector).
_BESIDE = ThreadPoolExecutor(2, thread_name_prefix="recall-beside")


def recall(
    store: SqliteStore,
    query: str,
    *,
    now: datetime,
    tz: str = "UTC",
    session_id: str | None = None,
    question_id: int | None = None,
    vector: numpy.ndarray | QueryVector | None = None,
    vector_model: str | None = None,
    mode: RecallMode = "hybrid",
    turns: int = TURN_BUDGET,
) -> Recollection:
    """Facts, the ``turns`` best turns before ``question_id`` and the matching segments
    for ``query``; ``session_id`` is the current session. Marks the returned facts as
    recalled. The dense and segment searches run beside the lexical one, in threads of
    their own: a ``vector`` still being made is waited for there."""
    cue = parse_temporal(query, now, tz)
    segments = _BESIDE.submit(search_segments, store, query, cue=cue, limit=SEGMENT_LIMIT)

    found = search_memories(store, query, now, limit=SEMANTIC_LIMIT)
    facts = [memory for memory, _ in found]
    mark_recalled(store, [memory.id for memory in facts], now)

    search = TurnSearch(store, query, cue, session_id, question_id)
    best, searched = search.run(vector, vector_model, mode, turns)
    found_segments = segments.result()
    titles = store.session_titles(
        [s.session_id for s in found_segments] + [t.message.session_id for t in best]
    )
    return Recollection(
        facts=facts,
        segments=[RecalledSegment(s, titles.get(s.session_id, "")) for s in found_segments],
        turns=[
            RecalledTurn(
                t.message, titles.get(t.message.session_id, ""), t.score, t.before, t.after
            )
            for t in best
        ],
        cue=cue,
        searched=searched,
    )


class TurnSearch:
    """One question's search of the turns: its id range, window and preferences."""

    def __init__(
        self,
        store: SqliteStore,
        query: str,
        cue: TemporalCue | None,
        session_id: str | None,
        question_id: int | None,
    ) -> None:
        self.store = store
        self.query = query
        self.session_id = session_id
        self.recent = bool(cue and cue.recent)
        self.window = (cue.start, cue.end) if cue and cue.start and cue.end else None
        top = store.conn.execute("SELECT COALESCE(MAX(id), 0) FROM messages").fetchone()[0]
        self.low, self.high = 0, int(top) if question_id is None else question_id - 1
        if self.window:
            ids = window_ids(store, *self.window)
            self.low, self.high = (ids[0], min(ids[1], self.high)) if ids else (1, 0)

    def run(
        self,
        vector: numpy.ndarray | QueryVector | None,
        model: str | None,
        mode: RecallMode,
        limit: int,
    ) -> tuple[list[RecalledTurn], RecallMode]:
        """The ``limit`` best turns (title left blank) and the retrievers that ran."""
        anchor = anchored(self.query) if self.window is None else None
        if anchor is not None and self._hang_on(anchor, vector, model, mode):
            self.query, vector = anchor.rest, None  # the span's turns, by what is asked
        if self.high < self.low:
            return [], "lexical"
        dense: Future[dict[int, float]] | None = None
        if mode != "lexical" and model and vector is not None:
            dense = _BESIDE.submit(self._dense, vector, model)
        words = {}
        if mode != "dense":
            words = lexical(
                self.store,
                self.query,
                low=self.low,
                high=self.high,
                window=self.window,
                newest_first=self.recent,
                limit=CANDIDATES,
            )
        meaning = dense.result() if dense is not None else {}
        searched: RecallMode = "lexical" if not meaning else mode
        found = self._found(words.keys() | meaning.keys())
        share = matched(self.query, words, {i: m.content for i, m in found.items()})
        scores = fuse(words, meaning, share=share)
        if not scores and (self.window or self.recent):
            fallback = newest(self.store, self.low, self.high, self.window, CANDIDATES)
            scores = dict.fromkeys(fallback, FALLBACK_SCORE)
            found = self._found(fallback)
        ranked = self._ranked({i: scores[i] for i in found}, found, kept(words, meaning), limit)
        return ranked, searched

    def _found(self, ids: Iterable[int]) -> dict[int, Message]:
        """The messages with these ids that this search may return (``_fits``)."""
        return {i: m for i, m in messages_by_id(self.store, list(ids)).items() if self._fits(m)}

    def _dense(
        self, vector: numpy.ndarray | QueryVector | None, model: str | None
    ) -> dict[int, float]:
        """Message id -> cosine of the turns nearest ``vector`` in the range (none without
        a vector or a model); one still being made is waited for here."""
        ready = vector_now(vector) if model else None
        if ready is None or not model:
            return {}
        span = {"low": self.low, "high": self.high, "limit": CANDIDATES}
        return dict(nearest(self.store, model, ready, **span))

    def _hang_on(
        self,
        anchor: Anchor,
        vector: numpy.ndarray | QueryVector | None,
        model: str | None,
        mode: RecallMode,
    ) -> bool:
        """Find the event the question's time hangs on and search the span around it
        from now on; False when no turn names the event."""
        words = lexical(self.store, anchor.event, low=self.low, high=self.high, limit=CANDIDATES)
        meaning = self._dense(vector, model) if mode != "lexical" else {}
        scores = fuse(words, meaning)
        if not scores:
            return False
        event = messages_by_id(self.store, [max(scores, key=lambda i: (scores[i], i))])
        if not event:
            return False
        at = parse_time(next(iter(event.values())).created_at)
        window = (at + anchor.start, at + anchor.end)
        ids = window_ids(self.store, *window)
        if ids is None or ids[0] > self.high:
            return False  # nothing was said in that span: search as for any question
        self.window, self.low, self.high = window, ids[0], min(ids[1], self.high)
        return True

    def _fits(self, message: Message) -> bool:
        """A user/assistant message inside the window (dense hits are only id-bounded)."""
        if message.role not in ("user", "assistant"):
            return False
        if self.window is None:
            return True
        return format_time(self.window[0]) <= message.created_at < format_time(self.window[1])

    def _ranked(
        self, scores: dict[int, float], found: dict[int, Message], kept: list[int], limit: int
    ) -> list[RecalledTurn]:
        speaker = preferred_speaker(self.query, self._names())
        best = rank(
            scores,
            boosted={i for i, m in found.items() if m.role == speaker},
            preferred={i for i, m in found.items() if m.session_id == self.session_id},
            kept=[i for i in kept if i in found],
            limit=limit,
        )
        shown = {message_id for message_id, _ in best}
        return [self._with_neighbours(found[i], score, shown) for i, score in best]

    def _names(self) -> list[str]:
        """The user's names as saved facts hold them (identity keys naming a name)."""
        rows = self.store.conn.execute(
            "SELECT value FROM memories WHERE category = 'identity' AND key LIKE '%name%'"
        ).fetchall()
        return [str(row[0]) for row in rows]

    def _with_neighbours(self, hit: Message, score: float, shown: set[int]) -> RecalledTurn:
        before = self._beside(hit, "<", "DESC")
        after = self._beside(hit, ">", "ASC")
        if before and (before.id in shown or not wants_before(hit.content, before.content)):
            before = None
        if after and (after.id in shown or not wants_after(hit.content, after.content)):
            after = None
        return RecalledTurn(hit, "", round(min(score, 1.0), 4), before, after)

    def _beside(self, hit: Message, side: str, order: str) -> Message | None:
        """The session's user/assistant message just before or after ``hit`` (never the
        question or later)."""
        row = self.store.conn.execute(
            f"""SELECT * FROM messages WHERE session_id = ? AND id {side} ? AND id <= ?
                AND {_ROLES_SQL} ORDER BY id {order} LIMIT 1""",
            (hit.session_id, hit.id, self.high),
        ).fetchone()
        return _message(row) if row else None
