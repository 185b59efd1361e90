"""memory_search: recall facts, past episodes and past messages for a question.

A thin adapter over the store's ``recall``: the schema and description the model
reads, argument handling, and the shape of the result — ``structured`` {semantic,
episodic, segments} first, then ``raw_messages`` [{timestamp, content, session}], every
time in the person's timezone and every session named by its title. The search covers
all of the person's sessions; the question being answered is the turn's
``user_message_id``, so it never comes back as a memory.
"""

from __future__ import annotations

from typing import Any

from memory import Message, Recollection, parse_time
from memory.rules.episodes import heading
from memory.rules.temporal import zone_of
from tools.base import ToolContext, ToolSpec

CONTENT_CHARS = 500

USE_WHEN = (
    "Search your long-term memory of this user, across all your chats with them, when they "
    "refer to something that is not in the recent conversation: past events, what they "
    'told you before, or a time like "last Thursday", "yesterday", "last time", "kemarin", '
    '"minggu lalu", "waktu itu".'
)
DESCRIPTION = (
    "It finds saved facts, summaries of past conversations and past messages. `query`: "
    "the user's question in their words, time words included, e.g. "
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


def _content(message: Message) -> str:
    text = " ".join(message.content.split())
    if len(text) > CONTENT_CHARS:
        text = text[: CONTENT_CHARS - 1] + "…"
    return f"{message.role}: {text}"


def shape(found: Recollection, tz: str) -> dict[str, Any]:
    """The tool's JSON result for what was recalled."""
    semantic = [{"category": m.category, "key": m.key, "value": m.value} for m in found.facts]
    episodic = [
        s.summary if s.summary_kind == "extractive" else f"{heading(s.start_at, tz)}: {s.summary}"
        for s in (episode.segment for episode in found.episodes)
    ]
    segments = [
        {
            "id": e.segment.id,
            "session_id": e.segment.session_id,
            "session": e.session_title,
            "start_message_id": e.segment.start_message_id,
            "end_message_id": e.segment.end_message_id,
            "start": _stamp(e.segment.start_at, tz),
            "end": _stamp(e.segment.end_at, tz),
            "lines": e.lines,
        }
        for e in found.episodes
    ]
    raw = [
        {
            "timestamp": _stamp(r.message.created_at, tz),
            "content": _content(r.message),
            "session": r.session_title,
        }
        for r in found.turns
    ]
    return {
        "structured": {"semantic": semantic, "episodic": episodic, "segments": segments},
        "raw_messages": raw,
    }


async def memory_search(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    """Recall what the person's whole history holds for ``args["query"]``."""
    query = str(args.get("query", "")).strip()
    if not query:
        return {"error": "memory_search needs a query"}
    tz = ctx.settings.timezone
    if ctx.session_id:
        await ctx.store.refresh_segments(ctx.session_id, None, force=False, tz=tz)
    found = await ctx.store.recall(
        query,
        now=ctx.now(),
        tz=tz,
        session_id=ctx.session_id,
        question_id=ctx.user_message_id,
    )
    return shape(found, tz)


def _in(item: dict[str, Any]) -> str:
    """', in "Dinner plans"' for an item said in a titled session."""
    title = item.get("session")
    return f', in "{title}"' if title else ""


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
            lines.append(f"- {segment['start']} – {segment['end']}{_in(segment)}:")
            lines += [f"    {line}" for line in segment["lines"]]
    if result.get("raw_messages"):
        lines.append("Messages:")
        lines += [f"- [{m['timestamp']}{_in(m)}] {m['content']}" for m in result["raw_messages"]]
    return "\n".join(lines) if lines else "Nothing found in memory for this query."


async def has_history(ctx: ToolContext) -> bool:
    """Gate: offered only when there is something to remember besides the question."""
    return await ctx.ask("has_history", lambda: ctx.store.has_history(ctx.user_message_id))


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
