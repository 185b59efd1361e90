"""Run one user turn through the compiled graph: the single pipeline for every request.

The user's message is stored first (so nothing is lost if anything later fails), then the
graph runs from the session id and that message. ``stream_turn`` yields UI events as
they happen (tokens, tool start/end, the answer); ``run_turn`` runs the same graph
without token streaming and returns a ``TurnResult``. After the turn, closed
conversation spans are cut into segments.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from typing import Any

from graph.builder import compile_graph
from graph.commands import visible_prefix
from graph.context import Context
from graph.state import State
from memory.segments import refresh_segments
from memory.store import Message

log = logging.getLogger("companion.runner")

RECURSION_LIMIT = 40
_GRAPH: Any = None


def default_graph() -> Any:
    """The compiled graph (built once per process)."""
    global _GRAPH
    if _GRAPH is None:
        _GRAPH = compile_graph()
    return _GRAPH


@dataclass
class TurnEvent:
    """Something the UI shows: a token, a tool step, the answer, an error."""

    kind: str  # "user" | "text" | "tool_start" | "tool_end" | "answer" | "error"
    data: dict[str, Any] = field(default_factory=dict)


@dataclass
class TurnResult:
    """The outcome of one turn."""

    answer: str
    user_message: Message
    state: dict[str, Any]
    seconds: float

    @property
    def tool_names(self) -> list[str]:
        """Tools that ran this turn, in order."""
        return [e["name"] for e in self.state.get("executed", [])]

    @property
    def trace(self) -> list[dict[str, Any]]:
        """The turn's trace."""
        return list(self.state.get("trace", []))


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
) -> AsyncIterator[TurnEvent]:
    """Store the user's message, run the graph, and yield events as they come.

    A message over ``max_message_chars`` is refused before anything is stored: an
    "error" event, then an "answer" event whose text says why.
    """
    refusal = too_long(text, ctx.settings.max_message_chars)
    if refusal:
        yield TurnEvent("error", {"detail": refusal, "answer": refusal})
        yield TurnEvent("answer", {"text": refusal, "message_id": None, "state": {}})
        return
    graph = graph or default_graph()
    user = ctx.store.add_message(
        session_id, "user", text, image_path=image_path, meta=user_meta or {}
    )
    yield TurnEvent("user", {"message_id": user.id, "content": text, "image_path": image_path})
    initial = _initial_state(session_id, user.id)
    final_state: dict[str, Any] = dict(initial)
    streamed = ""  # this model call's raw text so far
    shown = 0  # how much of its visible part was already yielded
    async for mode, chunk in graph.astream(
        initial, config=_config(session_id, user.id), context=ctx, stream_mode=["updates", "custom"]
    ):
        if mode == "custom" and chunk.get("type") == "token":
            streamed += chunk["text"]
            visible = visible_prefix(streamed)
            if len(visible) > shown:
                yield TurnEvent("text", {"delta": visible[shown:]})
                shown = len(visible)
        elif mode == "custom":
            yield TurnEvent(str(chunk.get("type", "custom")), dict(chunk))
        elif mode == "updates":
            for node, update in chunk.items():
                if not isinstance(update, dict):
                    continue
                if node == "call_model":
                    streamed, shown = "", 0
                    yield TurnEvent(
                        "model_done",
                        {"calls": update.get("calls", []), "error": update.get("error")},
                    )
                for key, value in update.items():
                    if key in ("executed", "trace"):
                        final_state[key] = [*final_state.get(key, []), *value]
                    else:
                        final_state[key] = value
    if final_state.get("error"):
        yield TurnEvent(
            "error", {"detail": final_state["error"], "answer": final_state.get("answer")}
        )
    schedule_segments(ctx, session_id)
    yield TurnEvent(
        "answer",
        {
            "text": final_state.get("answer") or "",
            "message_id": final_state.get("answer_message_id"),
            "state": final_state,
        },
    )


_BACKGROUND: set[asyncio.Task[Any]] = set()


def schedule_segments(ctx: Context, session_id: str) -> asyncio.Task[Any]:
    """Cut closed spans of the session into segments in the background (never blocks)."""

    async def refresh() -> None:
        try:
            await refresh_segments(ctx.store, session_id, ctx.summarize, tz=ctx.settings.timezone)
        except Exception:  # episodic memory is best effort; the next turn retries
            log.exception("segment refresh failed for session %s", session_id)

    task = asyncio.get_running_loop().create_task(refresh())
    _BACKGROUND.add(task)
    task.add_done_callback(_BACKGROUND.discard)
    return task


async def settle() -> None:
    """Wait for background work (segment refreshes) started by earlier turns."""
    while _BACKGROUND:
        await asyncio.gather(*list(_BACKGROUND), return_exceptions=True)


async def run_turn(
    ctx: Context,
    session_id: str,
    text: str,
    *,
    image_path: str | None = None,
    graph: Any = None,
) -> TurnResult:
    """Run one turn to the end without streaming (CLI one-shot, evals, benches).

    The same graph as ``stream_turn``; only the consumption differs: no token events, so
    the model is invoked rather than streamed.
    """
    started = time.perf_counter()
    graph = graph or default_graph()
    user = ctx.store.add_message(session_id, "user", text, image_path=image_path)
    state = await graph.ainvoke(
        _initial_state(session_id, user.id),
        config=_config(session_id, user.id),
        context=replace(ctx, stream_tokens=False),
    )
    schedule_segments(ctx, session_id)
    await settle()
    return TurnResult(
        answer=state.get("answer") or "",
        user_message=user,
        state=dict(state),
        seconds=time.perf_counter() - started,
    )
