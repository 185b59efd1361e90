"""memory_search: recall saved facts, the best past turns and segments for a question.

A thin adapter over the store's ``recall``: the schema and description the model reads,
the query's vector (the context's embedder, in its own thread while recall searches the
words; at most ``EMBED_SECONDS``, any failure is logged and recall is lexical), and the
result's shape (DESIGN.md's):
``structured`` {``semantic``: facts [{category, key, value}], ``episodic``: the matching
segments' summaries ["Thu 19 Nov 19:00 – … : summary"], ``segments``: those segments as
pointers [{id, session_id, session, start_message_id, end_message_id, start, end}]}, then
``raw_messages``: the best turns [{id, timestamp, content, session, speaker, before?,
after?}] best first; cut to the budget of memory.rules.budget (``TURN_BUDGET`` turns, a
neighbour counting as one, and ``CHAR_BUDGET`` characters of what the model reads); and
``searched`` (hybrid or lexical). Times are the person's, sessions are named by title; the
question being answered never comes back.
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from memory import Message, QueryVector, RecalledSegment, RecalledTurn, Recollection, parse_time
from memory.rules.budget import (
    CHAR_BUDGET,
    NEIGHBOUR_CHARS,
    SEGMENT_CHARS,
    TURN_BUDGET,
    TURN_CHARS,
)
from memory.rules.temporal import zone_of
from tools.base import ToolContext, ToolSpec

log = logging.getLogger("companion.tools.memory_search")

EMBED_SECONDS = 2.0  # the query's embedding, at most; then recall is lexical
# The questions' embeddings: beside the store's reader threads, so the words are searched
# while the question is embedded.
_EMBEDDING = ThreadPoolExecutor(2, thread_name_prefix="query-embedding")
QUERY_CHARS = 2000  # of a longer query, only this much is searched or embedded
SAID_BY = {"user": "you said", "assistant": "I said"}

USE_WHEN = (
    "Search your long-term memory of this user, across all your chats with them, when they "
    "refer to something that is not in the recent conversation: past events, what they "
    'told you before, or a time like "last Thursday", "yesterday", "last time", "kemarin", '
    '"minggu lalu", "waktu itu".'
)
DESCRIPTION = (
    "It finds saved facts, then the past messages that match best (by words and by "
    "meaning, with who said them and when), then summaries of past conversations. "
    "`query`: the user's question in their words, time words included, e.g. "
    '"what did I cook last Thursday". If what you need is not there, ask again with '
    "other words (a synonym, a name, the topic)."
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


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _said(message: Message, limit: int) -> dict[str, str]:
    return {"speaker": message.role, "content": _clip(message.content, limit)}


def _turn(found: RecalledTurn, tz: str) -> dict[str, Any]:
    item: dict[str, Any] = {
        "id": found.message.id,
        "timestamp": _stamp(found.message.created_at, tz),
        **_said(found.message, TURN_CHARS),
        "session": found.session_title,
    }
    if found.before is not None:
        item["before"] = _said(found.before, NEIGHBOUR_CHARS)
    if found.after is not None:
        item["after"] = _said(found.after, NEIGHBOUR_CHARS)
    return item


def _segment(found: RecalledSegment, tz: str) -> dict[str, Any]:
    """The segment as a pointer (a segment of ``structured.segments``) and its summary,
    which goes to ``structured.episodic``."""
    segment = found.segment
    return {
        "id": segment.id,
        "session_id": segment.session_id,
        "session": found.session_title,
        "start_message_id": segment.start_message_id,
        "end_message_id": segment.end_message_id,
        "start": _stamp(segment.start_at, tz),
        "end": _stamp(segment.end_at, tz),
        "summary": _clip(segment.summary, SEGMENT_CHARS),
    }


def _in(item: dict[str, Any]) -> str:
    """', in "Dinner plans"' for an item said in a titled session."""
    title = item.get("session")
    return f', in "{title}"' if title else ""


def _fact_lines(fact: dict[str, Any]) -> list[str]:
    return [f"- {fact['category']}/{fact['key']}: {fact['value']}"]


def _turn_lines(turn: dict[str, Any]) -> list[str]:
    lines = []
    if "before" in turn:
        before = turn["before"]
        lines.append(f"    (before) {SAID_BY[before['speaker']]}: {before['content']}")
    said = f"{SAID_BY[turn['speaker']]}: {turn['content']}"
    lines.append(f"- [{turn['timestamp']}{_in(turn)}] {said}")
    if "after" in turn:
        lines.append(f"    (after) {SAID_BY[turn['after']['speaker']]}: {turn['after']['content']}")
    return lines


def _episodic(segment: dict[str, Any]) -> str:
    """A segment's line in ``structured.episodic``: its time span, chat and summary."""
    return f"{segment['start']} – {segment['end']}{_in(segment)}: {segment['summary']}"


# What the model reads, in order: (where in the result, heading).
PARTS = (
    (("structured", "semantic"), "Saved facts:"),
    (("raw_messages",), 'Past messages, best first ("you said": the user; "I said": you):'),
    (("structured", "episodic"), "Past conversations:"),
)


def _lines(part: str, item: Any) -> list[str]:
    """The lines the model reads for one item of ``part`` (an episodic item is its line)."""
    if part == "semantic":
        return _fact_lines(item)
    if part == "raw_messages":
        return _turn_lines(item)
    return [f"- {item}"]


def _part(result: dict[str, Any], where: tuple[str, ...]) -> list[Any]:
    found: Any = result
    for key in where:
        found = found.get(key) or {}
    return list(found or [])


def _within_turns(turns: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The turns, best first, while they and their neighbours number ``TURN_BUDGET`` at
    most: a turn that would pass it comes without its neighbours, or not at all."""
    left = TURN_BUDGET
    kept = []
    for turn in turns:
        whole = 1 + ("before" in turn) + ("after" in turn)
        if whole > left:
            turn = {key: value for key, value in turn.items() if key not in ("before", "after")}
            whole = 1
        if whole > left:
            break
        kept.append(turn)
        left -= whole
    return kept


def _within_segments(segments: list[RecalledSegment], left: int, tz: str) -> list[dict[str, Any]]:
    """The segments while the turns they quote fit the ``left`` of the turn budget: an
    extractive summary quotes its lines ("…: A · B · C"), a model's quotes none."""
    kept = []
    for segment in segments:
        item = _segment(segment, tz)
        quoted = (
            item["summary"].count(" · ") + 1 if segment.segment.summary_kind == "extractive" else 0
        )
        if quoted <= left:
            kept.append(item)
            left -= quoted
    return kept


def shape(found: Recollection, tz: str) -> dict[str, Any]:
    """The tool's JSON result for what was recalled, cut to ``CHAR_BUDGET`` characters of
    formatted text: facts first, then turns, then segments, each kept whole or left out
    (a segment's pointer goes with its summary)."""
    turns = _within_turns([_turn(t, tz) for t in found.turns])
    shown = sum(1 + ("before" in t) + ("after" in t) for t in turns)
    segments = _within_segments(found.segments, TURN_BUDGET - shown, tz)
    facts = [{"category": m.category, "key": m.key, "value": m.value} for m in found.facts]
    left = CHAR_BUDGET
    kept: dict[str, list[Any]] = {}
    candidates = {"semantic": facts, "raw_messages": turns, "episodic": segments}
    for (*_, part), heading in PARTS:
        kept[part] = []
        for item in candidates[part]:
            text = _lines(part, _episodic(item) if part == "episodic" else item)
            cost = sum(len(line) + 1 for line in text) + (0 if kept[part] else len(heading) + 1)
            if cost <= left:
                kept[part].append(item)
                left -= cost
    segments = [{k: v for k, v in e.items() if k != "summary"} for e in kept["episodic"]]
    return {
        "structured": {
            "semantic": kept["semantic"],
            "episodic": [_episodic(e) for e in kept["episodic"]],
            "segments": segments,
        },
        "raw_messages": kept["raw_messages"],
        "searched": found.searched,
    }


def query_vector(ctx: ToolContext, query: str) -> QueryVector | None:
    """The query's vector, started now in another thread (recall searches the words
    meanwhile and waits for it at most until ``EMBED_SECONDS`` from now), or None without
    an embedder."""
    embedder = ctx.embedder
    if embedder is None:
        return None
    future = _EMBEDDING.submit(embedder.query, query)
    return QueryVector(future, embedder.dimensions, EMBED_SECONDS)


async def memory_search(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    """Recall what the person's whole history holds for ``args["query"]``."""
    query = str(args.get("query", "")).strip()[:QUERY_CHARS]
    if not query:
        return {"error": "memory_search needs a query"}
    tz = ctx.settings.timezone
    vector = query_vector(ctx, query)  # made while the segments and the words are searched
    if ctx.session_id:
        await ctx.store.refresh_segments(ctx.session_id, None, force=False, tz=tz)
    found = await ctx.store.recall(
        query,
        now=ctx.now(),
        tz=tz,
        session_id=ctx.session_id,
        question_id=ctx.user_message_id,
        vector=vector,
        vector_model=ctx.embedder.model if ctx.embedder else None,
    )
    return shape(found, tz)


def format_search(result: dict[str, Any]) -> str:
    """The stored text of a result: facts, turns (with neighbours), then segments."""
    lines: list[str] = []
    for where, heading in PARTS:
        if items := _part(result, where):
            lines.append(heading)
            for item in items:
                lines += _lines(where[-1], item)
    return "\n".join(lines) if lines else "Nothing found in memory for this query."


async def has_history(ctx: ToolContext) -> bool:
    """Gate: offered only when there is something to remember besides the question."""
    return (await ctx.memory_gates()).history


TOOLS = [
    ToolSpec(
        name="memory_search",
        use_when=USE_WHEN,
        description=DESCRIPTION,
        parameters=PARAMETERS,
        run=memory_search,
        role="memory_tool",
        command="memory_search",
        available=has_history,
        format=format_search,
        examples=("/memory_search what did I cook last Thursday",),
        private=True,
    )
]
