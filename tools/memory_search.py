"""memory_search: recall facts, past episodes and past messages for a question.

The pipeline of DESIGN §4, structured first:

1. *semantic*: stored memories ranked by relevance × retrievability (those returned
   count as recalled, which strengthens them); *episodic*: summaries of past
   conversation segments matching the query or its time window; *segments*: those
   spans themselves (ids, time range, a few lines).
2. *raw_messages*: BM25 search of the session's recent user/assistant messages, run only
   when the structured results are thin (fewer than two) or the query carries a time
   cue ("last Thursday", "kemarin", "waktu itu") — then restricted to that window, or
   newest first for "last time"-style cues.

All data access goes through memory/; this module only orchestrates and shapes output.
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import Any

from memory.memories import mark_recalled, search_memories
from memory.retrieval import latest_user_message_id, search_messages
from memory.segments import heading, refresh_segments, search_segments, segment_lines
from memory.store import Message, Store, parse_time
from memory.temporal import parse_temporal, zone_of
from tools.base import ToolContext, ToolSpec

SEMANTIC_LIMIT = 5
SEGMENT_LIMIT = 3
THIN = 2
CONTENT_CHARS = 500
# The user message asked this turn is not a memory: leave it out of raw results.
QUESTION_AGE = timedelta(minutes=10)

DESCRIPTION = (
    "Search your long-term memory of this user: saved facts, summaries of past "
    "conversations and past messages. Use it when the user refers to something that is "
    "not in the recent conversation — past events, what they told you before, or a time "
    'like "last Thursday", "yesterday", "last time", "kemarin", "minggu lalu", "waktu '
    "itu\". `query`: the user's question in their words, time words included, e.g. "
    '"what did I cook last Thursday".'
)
PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {
            "type": "string",
            "minLength": 1,
            "description": "What to recall, with any time words the user used.",
        }
    },
    "required": ["query"],
    "additionalProperties": False,
}


def _stamp(moment: str, tz: str) -> str:
    local = parse_time(moment).astimezone(zone_of(tz))
    return f"{local:%a} {local.day} {local:%b %Y %H:%M}"


def _raw(message: Message, tz: str) -> dict[str, str]:
    text = " ".join(message.content.split())
    if len(text) > CONTENT_CHARS:
        text = text[: CONTENT_CHARS - 1] + "…"
    return {"timestamp": _stamp(message.created_at, tz), "content": f"{message.role}: {text}"}


def _question_id(store: Store, session_id: str, now: datetime) -> int | None:
    """Id of this turn's user message, if the newest user message is that fresh."""
    newest = latest_user_message_id(store, session_id)
    if newest is None:
        return None
    message = store.get_message(newest)
    if message and now - parse_time(message.created_at) <= QUESTION_AGE:
        return newest
    return None


async def memory_search(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    """Run the recall pipeline for ``args["query"]``."""
    query = str(args.get("query", "")).strip()
    if not query:
        return {"error": "memory_search needs a query"}
    if ctx.session_id:
        await refresh_segments(ctx.store, ctx.session_id, tz=ctx.settings.timezone)
    # The searches are synchronous SQLite work (tens of ms on a large history): off the
    # event loop, so other sessions keep streaming meanwhile.
    return await asyncio.to_thread(recall, query, ctx)


def recall(query: str, ctx: ToolContext) -> dict[str, Any]:
    """The structured-then-raw search itself (blocking)."""
    store, now, tz = ctx.store, ctx.now(), ctx.settings.timezone
    cue = parse_temporal(query, now, tz)

    found = search_memories(store, query, now, limit=SEMANTIC_LIMIT)
    mark_recalled(store, [memory.id for memory, _ in found], now)
    semantic = [{"category": m.category, "key": m.key, "value": m.value} for m, _ in found]

    spans = search_segments(store, query, cue=cue, limit=SEGMENT_LIMIT)
    episodic = [
        s.summary if s.summary_kind == "extractive" else f"{heading(s.start_at, tz)}: {s.summary}"
        for s in spans
    ]
    segments = [
        {
            "id": s.id,
            "session_id": s.session_id,
            "start_message_id": s.start_message_id,
            "end_message_id": s.end_message_id,
            "start": _stamp(s.start_at, tz),
            "end": _stamp(s.end_at, tz),
            "lines": segment_lines(store, s, query),
        }
        for s in spans
    ]

    raw: list[dict[str, str]] = []
    if len(semantic) + len(episodic) < THIN or cue is not None:
        before = _question_id(store, ctx.session_id, now) if ctx.session_id else None
        messages = search_messages(
            store, query, session_id=ctx.session_id, cue=cue, before_id=before
        )
        raw = [_raw(message, tz) for message in messages]
    return {
        "structured": {"semantic": semantic, "episodic": episodic, "segments": segments},
        "raw_messages": raw,
    }


def format_search(result: dict[str, Any]) -> str:
    """The stored text of a result: facts, episodes, spans, then messages."""
    structured = result.get("structured", {})
    lines: list[str] = []
    if structured.get("semantic"):
        lines.append("Saved facts:")
        lines += [f"- {m['category']}/{m['key']}: {m['value']}" for m in structured["semantic"]]
    if structured.get("episodic"):
        lines.append("Past conversations:")
        lines += [f"- {summary}" for summary in structured["episodic"]]
    if structured.get("segments"):
        lines.append("Conversation excerpts:")
        for segment in structured["segments"]:
            lines.append(f"- {segment['start']} – {segment['end']}:")
            lines += [f"    {line}" for line in segment["lines"]]
    if result.get("raw_messages"):
        lines.append("Messages:")
        lines += [f"- [{m['timestamp']}] {m['content']}" for m in result["raw_messages"]]
    return "\n".join(lines) if lines else "Nothing found in memory for this query."


def has_history(ctx: ToolContext) -> bool:
    """Gate: offered only when there is something to remember."""
    return ctx.store.has_history()


TOOLS = [
    ToolSpec(
        name="memory_search",
        description=DESCRIPTION,
        parameters=PARAMETERS,
        run=memory_search,
        role="memory_tool",
        command="memory_search",
        available=has_history,
        format=format_search,
        examples=("/memory_search what did I cook last Thursday",),
    )
]
