"""Run one user turn through the compiled graph: the single pipeline for every request.

``stream_turn`` is the turn. It refuses a message over the size limit before anything is
stored, stores the user's message (so nothing is lost if anything later fails), runs the
graph from the session id and that message, and yields typed events (``graph.events``)
as they happen, ending with ``Answer``. The nodes write the progress events to
LangGraph's custom stream; the final state is the last chunk of LangGraph's own
"values" stream. After the graph, closed conversation spans of the session are cut into
segments in the background.

``run_turn`` consumes ``stream_turn`` and returns a ``TurnResult`` (CLI one-shot, evals,
benches). It differs in two things only: it runs with ``Context.stream_tokens`` off, so
the model is invoked rather than streamed and no live progress is streamed (only
``UserStored``, ``TurnError`` and ``Answer``: LangGraph's custom stream mode runs every
node as its own task, which a consumer that waits for the end does not need); and it
waits for its session's segment refresh before returning. A call that needs the
person's yes is still put to ``Context.confirm`` (declined when there is none); the
trace records each question and its answer.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
import uuid
from collections.abc import AsyncIterator, Coroutine
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
from graph.state import ExecutedCall, State, TraceEvent
from memory.store import Message

log = logging.getLogger("companion.runner")

RECURSION_LIMIT = 40
LIVE_MODES = ["custom", "values"]  # node events as they happen; the state after each step
FINAL_MODES = ["values"]  # the state after each step only
# what the nodes write to the custom stream
LIVE_EVENTS = (TextDelta, ModelDone, ConfirmationAsked, ConfirmationDecided, ToolStart, ToolEnd)
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
) -> AsyncIterator[TurnEvent]:
    """Store the user's message, run the graph, and yield events as they come.

    ``stored`` is the user message when it is stored already (the chat stores it when it
    is sent; retry answers it again): nothing new is stored and ``text`` is not used.
    A message over ``max_message_chars`` is refused before anything is stored: a
    ``TurnError``, then an ``Answer`` whose text says why.
    With ``ctx.stream_tokens`` off only ``UserStored``, ``TurnError`` and ``Answer`` come.
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
    final: dict[str, Any] = {}
    async for mode, chunk in graph.astream(
        _initial_state(session_id, user.id),
        config=_config(session_id, user.id),
        context=ctx,
        stream_mode=LIVE_MODES if ctx.stream_tokens else FINAL_MODES,
    ):
        if mode == "values":
            final = chunk
        elif isinstance(chunk, LIVE_EVENTS):
            yield chunk
    if final.get("error"):
        yield TurnError(final["error"])
    schedule_segments(ctx, session_id)
    yield Answer(
        text=final.get("answer") or "",
        message_id=final.get("answer_message_id"),
        executed=list(final.get("executed") or []),
        trace=list(final.get("trace") or []),
    )


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
    for the session's segment refresh (CLI one-shot, evals, benches)."""
    started = time.perf_counter()
    user: Message | None = None
    error: str | None = None
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
        error=error,
        user_message=user,
        seconds=time.perf_counter() - started,
    )


_BACKGROUND: set[asyncio.Task[None]] = set()


def _segments_task_name(session_id: str) -> str:
    return f"segments:{session_id}"


def schedule_segments(ctx: Context, session_id: str, *, force: bool = False) -> asyncio.Task[None]:
    """Cut closed spans of the session into segments in the background (never blocks).

    ``force`` also closes the newest span: the person left this session for another, so
    what they said there becomes an episode now rather than after 30 quiet minutes.
    """

    async def refresh() -> None:
        try:
            await ctx.store.refresh_segments(
                session_id, ctx.summarize, force=force, tz=ctx.settings.timezone
            )
        except Exception:  # episodic memory is best effort; the next turn retries
            log.exception("segment refresh failed for session %s", session_id)

    return _background(refresh(), _segments_task_name(session_id))


def schedule_catch_up(ctx: Context, *, every: float | None = None) -> asyncio.Task[None]:
    """Summarise every session's spans left unsummarised, in the background, a bounded
    batch at a time so no single step holds the store for long. With ``every``, sweep
    again at that interval for as long as the process runs: a chat that goes quiet for
    30 minutes becomes an episode even if no other turn comes."""

    async def catch_up() -> None:
        lease = max(every or 0.0, LEASE_SECONDS)
        while True:
            try:
                # Several app processes on one database sweep once: whoever holds the lease.
                if await ctx.store.claim(CATCH_UP_JOB, PROCESS, lease):
                    while await ctx.store.catch_up_segments(
                        ctx.summarize, tz=ctx.settings.timezone
                    ):
                        await asyncio.sleep(0)
            except Exception:
                log.exception("catching up on unsummarised conversations failed")
            if every is None:
                return
            await asyncio.sleep(every)

    return _background(catch_up(), "segments:catch-up")


# This process, as named in the database (running turns, job leases): host, pid, a token.
PROCESS = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
CATCH_UP_JOB = "segments:catch-up"
LEASE_SECONDS = 60.0  # the shortest lease of the sweep: a dead holder's ends this soon
_CAUGHT_UP: set[str] = set()  # databases this process is watching for quiet spans
SWEEP_SECONDS = 300.0


def catch_up_once(ctx: Context) -> asyncio.Task[None] | None:
    """Start ``schedule_catch_up`` (sweeping every ``SWEEP_SECONDS``) the first time this
    process opens the database (the app's first page load, a terminal chat); later calls
    do nothing."""
    key = ctx.store.location
    if key in _CAUGHT_UP:
        return None
    _CAUGHT_UP.add(key)
    return schedule_catch_up(ctx, every=SWEEP_SECONDS)


def _background(work: Coroutine[Any, Any, None], name: str) -> asyncio.Task[None]:
    task = asyncio.get_running_loop().create_task(work, name=name)
    _BACKGROUND.add(task)
    task.add_done_callback(_BACKGROUND.discard)
    return task


async def settle(session_id: str) -> None:
    """Wait for the segment refreshes that the session's turns started (no one else's)."""
    name = _segments_task_name(session_id)
    mine = [task for task in _BACKGROUND if task.get_name() == name]
    await asyncio.gather(*mine, return_exceptions=True)
