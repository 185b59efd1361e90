"""Run one user turn through the compiled graph: the single pipeline for every request.

``stream_turn`` refuses a message over the size limit before anything is stored, stores
the user's message (nothing is lost if anything later fails), runs the graph and yields
typed events (``graph.events``) as they happen, ending with ``Answer``; then, read to its
end, it keeps the turn's trace and schedules the session's segment refresh and the
embedding of its messages (``graph.jobs``): nothing that can wait delays the answer.
``run_turn`` consumes it with the model invoked rather than streamed (only ``UserStored``,
``ToolEnd``, ``TurnError`` and ``Answer`` come), waits for that refresh and returns a
``TurnResult`` (scripts, evals, benches): the answer, the turn's tool results and its
count of memory operations. A call that needs the person's yes is put to
``Context.confirm`` (declined when there is none). The trace kept with the answer
(``kept_trace``: the steps, each model call's prompt as sent, the tokens) is what the
Graph tab shows of any turn of a chat.
Why the pipeline has this shape: docs/turns.md.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

from graph.builder import compile_graph
from graph.context import Context
from graph.events import (
    Answer,
    ConfirmationAsked,
    ConfirmationDecided,
    ModelDone,
    TextDelta,
    ToolEnd,
    ToolStart,
    TurnError,
    TurnEvent,
    UserStored,
)
from graph.jobs import schedule_embedding, schedule_segments, settle, turn_running
from graph.state import ExecutedCall, State, TraceEvent, fold
from memory import Message, StoreError

log = logging.getLogger("companion.runner")

RECURSION_LIMIT = 40
TRACE_VERSION = 1  # of the dict kept with an answer (``kept_trace``)
STREAM_MODES = ["custom", "updates"]  # node events as they happen; each node's update
# what the nodes write to the custom stream
LIVE_EVENTS = (TextDelta, ModelDone, ConfirmationAsked, ConfirmationDecided, ToolStart, ToolEnd)
QUIET_EVENTS = (ToolEnd,)  # what a turn without live progress still yields: each call's end
_GRAPH: Any = None


def default_graph() -> Any:
    """The compiled graph (built once per process)."""
    global _GRAPH
    if _GRAPH is None:
        _GRAPH = compile_graph()
    return _GRAPH


@dataclass(frozen=True)
class TurnResult:
    """The outcome of one turn."""

    answer: str
    answer_message_id: int | None  # None when nothing was stored (a refused message)
    executed: list[ExecutedCall]  # the calls that ran, in order
    trace: list[TraceEvent]  # the turn's path
    # each call that ran or was declined, in order, with its result as stored in the
    # message's meta (a guard's duplicate or over-cap note is not one)
    tool_results: list[ToolEnd]
    memory_operations: int  # calls of the turn that changed stored memories or messages
    error: str | None  # why the turn failed, or None
    user_message: Message | None  # None when the message was refused before storing
    seconds: float

    @property
    def tool_names(self) -> list[str]:
        """Tools that ran this turn, in order."""
        return [e["name"] for e in self.executed]

    @property
    def loops(self) -> int:
        """Tool loops run this turn (execute_tool visits)."""
        return sum(e.get("kind") == "node" and e.get("name") == "execute_tool" for e in self.trace)


def _initial_state(session_id: str, user_message_id: int) -> State:
    return {
        "session_id": session_id,
        "user_message_id": user_message_id,
        "loops": 0,
        "executed": [],
        "trace": [],
        "calls": [],
    }


def _config(session_id: str, user_message_id: int) -> dict[str, Any]:
    # The thread id names one turn: a checkpointer (if any) never spans turns.
    return {
        "recursion_limit": RECURSION_LIMIT,
        "configurable": {"thread_id": f"{session_id}:{user_message_id}"},
    }


def trace_names(ctx: Context, session_id: str, user_message_id: int) -> dict[str, Any]:
    """The run name, tags and metadata every traced run of a turn carries (its nodes,
    model calls and tools inherit them): the chat by id, never its text, and the tool
    mode."""
    mode = ctx.settings.tool_mode
    return {
        "run_name": "companion turn",
        "tags": ["companion", f"chat:{session_id}", f"tool_mode:{mode}"],
        "metadata": {"chat_id": session_id, "user_message_id": user_message_id, "tool_mode": mode},
    }


def shared_prompts(prompts: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The prompts of a turn's model calls, each after the first kept as what it adds:
    ``shared`` is how many of its first messages are the previous call's (the system
    message and the history, as a rule), ``messages`` the rest; ``tools`` is None when
    the schemas are the previous call's. A tool turn's trace is about half the size."""
    kept: list[dict[str, Any]] = []
    previous: Mapping[str, Any] | None = None
    for prompt in prompts:
        messages = list(prompt.get("messages") or [])
        shared, tools = 0, prompt.get("tools")
        if previous is not None:
            before = previous.get("messages") or []
            while shared < min(len(before), len(messages)) and before[shared] == messages[shared]:
                shared += 1
            tools = None if tools == previous.get("tools") else tools
        kept.append({**prompt, "messages": messages[shared:], "shared": shared, "tools": tools})
        previous = prompt
    return kept


def kept_trace(final: Mapping[str, Any]) -> dict[str, Any]:
    """What is kept with a turn's answer for the Graph tab, from the graph's last state:
    the trace entries (nodes, model calls, tools with their arguments and results, guard
    edges that fired, timings), each model call's prompt as sent (``shared_prompts``),
    the models called, and the tokens in and out summed over the calls whose provider
    reported them (None when none did)."""
    entries = list(final.get("trace") or [])
    calls = [e.get("detail") or {} for e in entries if e.get("kind") in ("model", "error")]
    counted = [c["tokens"] for c in calls if c.get("tokens")]
    tokens = None
    if counted:
        tokens = {key: sum(int(c.get(key) or 0) for c in counted) for key in ("input", "output")}
    return {
        "version": TRACE_VERSION,
        "entries": entries,
        "prompts": shared_prompts(list(final.get("prompts") or [])),
        "models": list(dict.fromkeys(str(c["model"]) for c in calls if c.get("model"))),
        "tokens": tokens,
        "ms": round(sum(float(e.get("ms") or 0.0) for e in entries), 2),
    }


async def keep_trace(ctx: Context, final: Mapping[str, Any]) -> None:
    """Keep the turn's trace with its stored answer; a store failure is logged, never the
    turn's (the answer stands without its trace)."""
    answer_id = final.get("answer_message_id")
    if answer_id is None:
        return
    try:
        await ctx.store.save_trace(answer_id, kept_trace(final))
    except StoreError:
        log.exception("the trace of answer %s was not kept", answer_id)


def too_long(text: str, limit: int) -> str | None:
    """Why a message cannot be sent (it is longer than ``limit`` characters), or None."""
    if len(text) <= limit:
        return None
    return (
        f"That message is {len(text):,} characters long; the limit is {limit:,} "
        "(COMPANION_MAX_MESSAGE_CHARS). Shorten it or send it in parts."
    )


async def stream_turn(
    ctx: Context,
    session_id: str,
    text: str,
    *,
    image_path: str | None = None,
    graph: Any = None,
    user_meta: dict[str, Any] | None = None,
    stored: Message | None = None,
    config: dict[str, Any] | None = None,
) -> AsyncIterator[TurnEvent]:
    """Store the user's message, run the graph, and yield events as they come.

    ``stored`` is the user message when it is stored already (the chat stores it when it
    is sent; retry answers it again): nothing new is stored and ``text`` is not used.
    A message over ``max_message_chars`` is refused before anything is stored: a
    ``TurnError``, then an ``Answer`` whose text says why.
    With ``ctx.stream_tokens`` off only ``UserStored``, ``ToolEnd``, ``TurnError`` and
    ``Answer`` come. ``config`` replaces the turn's own (its thread id names the turn): a
    served graph's step passes one without ``configurable``, so the turn runs as its
    subgraph, streamed and checkpointed inside the served thread (app.studio).
    """
    refusal = None if stored else too_long(text, ctx.settings.max_message_chars)
    if refusal:
        yield TurnError(refusal)
        yield Answer(refusal, None, [], [])
        return
    graph = graph or default_graph()
    user = stored or await ctx.store.add_message(
        session_id, "user", text, image_path=image_path, meta=user_meta or {}
    )
    yield UserStored(user)
    initial = _initial_state(session_id, user.id)
    final: dict[str, Any] = dict(initial)  # the state, followed from the nodes' updates
    shown = LIVE_EVENTS if ctx.stream_tokens else QUIET_EVENTS
    with turn_running():  # background embedding waits meanwhile
        async for mode, chunk in graph.astream(
            initial,
            config={
                **(config or _config(session_id, user.id)),
                **trace_names(ctx, session_id, user.id),
            },
            context=ctx,
            stream_mode=STREAM_MODES,
        ):
            if mode == "updates":
                for node, update in chunk.items():
                    if not node.startswith("__"):  # "__interrupt__" and the like: no state
                        fold(final, update)
            elif isinstance(chunk, shown):
                yield chunk
    if final.get("error"):
        yield TurnError(final["error"])
    yield Answer(
        text=final.get("answer") or "",
        message_id=final.get("answer_message_id"),
        executed=list(final.get("executed") or []),
        trace=list(final.get("trace") or []),
    )
    # After the answer is out (the event carries the trace the page shows now): what is
    # kept for later and the background work. Every consumer reads the stream to its end.
    await keep_trace(ctx, final)
    schedule_segments(ctx, session_id)
    schedule_embedding(ctx)


async def run_turn(
    ctx: Context,
    session_id: str,
    text: str,
    *,
    image_path: str | None = None,
    graph: Any = None,
    user_meta: dict[str, Any] | None = None,
) -> TurnResult:
    """Run ``stream_turn`` to the end with the model invoked rather than streamed, and wait
    for the session's segment refresh (scripts, evals, benches). Memory operations are the
    calls that succeeded and changed what is stored (``ToolRegistry.writes_memory``:
    create/update/delete_memory, a memory_sql UPDATE)."""
    started = time.perf_counter()
    user: Message | None = None
    error: str | None = None
    ended: list[ToolEnd] = []
    answer = Answer("", None, [], [])
    async for event in stream_turn(
        replace(ctx, stream_tokens=False),
        session_id,
        text,
        image_path=image_path,
        graph=graph,
        user_meta=user_meta,
    ):
        match event:
            case UserStored(message=message):
                user = message
            case ToolEnd():
                ended.append(event)
            case TurnError(detail=detail):
                error = detail
            case Answer():
                answer = event
    await settle(session_id)
    return TurnResult(
        answer=answer.text,
        answer_message_id=answer.message_id,
        executed=answer.executed,
        trace=answer.trace,
        tool_results=ended,
        memory_operations=sum(e.ok and ctx.registry.writes_memory(e.name, e.args) for e in ended),
        error=error,
        user_message=user,
        seconds=time.perf_counter() - started,
    )
