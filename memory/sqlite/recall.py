"""Recall on SQLite: facts, past episodes and past messages for a question (memory_search).

Facts rank by relevance × retrievability (those returned count as recalled); episodes are
segments whose summary or time window matches; raw messages are searched only when the
structured results are thin or the question names a time. The question itself and what
follows it are never returned. Blocking work: async callers run it in a reader thread.
Design: docs/storage.md.
"""

from __future__ import annotations

from datetime import datetime

import numpy

from memory.rules.budget import TURN_BUDGET
from memory.rules.search import SEGMENT_LIMIT, SEMANTIC_LIMIT, THIN
from memory.rules.temporal import parse_temporal
from memory.sqlite.memories import mark_recalled, search_memories
from memory.sqlite.retrieval import search_messages
from memory.sqlite.segments import search_segments, segment_lines
from memory.sqlite.store import SqliteStore
from memory.types import Episode, Message, RecalledTurn, RecallMode, Recollection


def recall(
    store: SqliteStore,
    query: str,
    *,
    now: datetime,
    tz: str = "UTC",
    session_id: str | None = None,
    question_id: int | None = None,
    vector: numpy.ndarray | None = None,
    vector_model: str | None = None,
    mode: RecallMode = "hybrid",
    turns: int = TURN_BUDGET,
) -> Recollection:
    """Facts, episodes and (when those are thin or time is named) raw messages for
    ``query``; ``session_id`` is the current session, ``question_id`` the message being
    answered. Marks the returned facts as recalled."""
    cue = parse_temporal(query, now, tz)

    found = search_memories(store, query, now, limit=SEMANTIC_LIMIT)
    facts = [memory for memory, _ in found]
    mark_recalled(store, [memory.id for memory in facts], now)

    spans = search_segments(store, query, cue=cue, limit=SEGMENT_LIMIT)
    messages: list[Message] = []
    if len(facts) + len(spans) < THIN or cue is not None:
        messages = search_messages(store, query, prefer=session_id, cue=cue, before_id=question_id)
    titles = store.session_titles([s.session_id for s in spans] + [m.session_id for m in messages])
    return Recollection(
        facts=facts,
        episodes=[
            Episode(s, titles.get(s.session_id, ""), segment_lines(store, s, query)) for s in spans
        ],
        turns=[RecalledTurn(m, titles.get(m.session_id, ""), 1.0) for m in messages[:turns]],
        cue=cue,
    )
