"""Routing and guards: pure functions over the state, registered with a path map.

``route`` decides where the graph goes after a model reply; ``guard_reason`` tells
build_context whether tools must be switched off for the next call (loop cap reached,
or the model only repeated calls it already made); ``model_role`` picks the vision
model after image generation or an analysed image, and ``vision_missing`` gives the
notice when none is set (the chat model stands in, and the person is told).
execute_tool's guards: ``capped`` (at most ``MAX_CALLS_PER_REPLY`` calls of one reply
run), ``fresh_calls`` (no call runs twice in a turn) and ``clearance`` (the lethal
trifecta: a call that would join the person's private data, outside content and an
outbound request the model wrote waits for the person's yes, and a memory change made
while outside content is in the context is only a proposal).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from graph.commands import call_signature
from graph.state import MAX_TOOL_LOOPS, ExecutedCall, State, ToolCall
from prompts.templates import CAP_REASON, DUPLICATE_REASON

Route = Literal["execute_tool", "build_context", "final"]
ROUTES: dict[str, str] = {
    "execute_tool": "execute_tool",
    "build_context": "build_context",
    "final": "__end__",
}
VISION_TOOLS = ("image_generate", "image_analyze")
NO_VISION_NOTICE = (
    "No vision model is set: Companion can't see the images it draws or you send. "
    "Set one in Settings"
)
MAX_CALLS_PER_REPLY = 5


def capped(calls: list[ToolCall]) -> tuple[list[ToolCall], list[ToolCall]]:
    """(calls that may run, calls over the per-reply cap) of one model reply, in order."""
    return calls[:MAX_CALLS_PER_REPLY], calls[MAX_CALLS_PER_REPLY:]


Leg = Literal["private", "outside"]
Clearance = Literal["run", "confirm", "propose"]


@dataclass(frozen=True)
class ToolKinds:
    """Which tools' results are the person's private data and which are outside content
    (``ToolSpec.private`` / ``ToolSpec.untrusted``)."""

    private: frozenset[str] = frozenset()
    outside: frozenset[str] = frozenset()


def legs(state: State, kinds: ToolKinds) -> frozenset[Leg]:
    """The trifecta's first two legs the model's context holds now.

    Private data: the memories in the system prompt (the same rows memory_sql reads), or
    a private tool's result. Outside content: an untrusted tool's result. A result counts
    wherever the model reads it: run earlier this turn or replayed from the history
    window (failed calls too: an error can carry what was read).
    """
    seen = {*(state.get("window_tools") or ()), *(e["name"] for e in state.get("executed") or ())}
    found: set[Leg] = set()
    if state.get("memories_shown") or seen & kinds.private:
        found.add("private")
    if seen & kinds.outside:
        found.add("outside")
    return frozenset(found)


def clearance(state: State, kinds: ToolKinds, *, outbound: bool, writes: bool) -> Clearance:
    """Whether a call of the model's latest reply runs as it is, or waits for the person.

    "propose": it changes memory while outside content is in the context (a page may
    have asked for it). "confirm": it sends something the model wrote off the machine
    (``outbound``) while private data and outside content are both in the context — the
    third leg of the lethal trifecta. Else "run". Only results of earlier replies count:
    a call written in the same reply as the one that fetched a page was written before
    the page was read.
    """
    present = legs(state, kinds)
    if writes and "outside" in present:
        return "propose"
    if outbound and present == {"private", "outside"}:
        return "confirm"
    return "run"


def fresh_calls(calls: Iterable[ToolCall], executed: Iterable[ExecutedCall]) -> list[ToolCall]:
    """Calls not already run this turn (near-same arguments count as the same call)."""
    seen = {e["signature"] for e in executed}
    fresh = []
    for call in calls:
        signature = call_signature(call["name"], call["args"])
        if signature not in seen:
            seen.add(signature)
            fresh.append(call)
    return fresh


def route(state: State) -> Route:
    """After call_model: run tools, ask again without tools, or finish."""
    calls = state.get("calls") or []
    if not calls or state.get("error"):
        return "final"
    if state.get("no_tools_reason"):
        return "final"  # tools were off for this reply; whatever it attempted is not run
    if not fresh_calls(calls, state.get("executed") or []):
        return "build_context"
    return "execute_tool"


def guard_reason(state: State) -> str | None:
    """Why the next model call must be made with tools off, or None."""
    if (state.get("loops") or 0) >= MAX_TOOL_LOOPS:
        return CAP_REASON
    calls = state.get("calls") or []
    if calls and not fresh_calls(calls, state.get("executed") or []):
        return DUPLICATE_REASON
    return None


def vision_missing(role: Literal["chat", "vision"], vision_available: bool) -> str | None:
    """The notice for a call that needs the vision model when none is set, or None: the
    chat model answers instead, and the person is told (no silent fallback)."""
    return NO_VISION_NOTICE if role == "vision" and not vision_available else None


def model_role(state: State) -> Literal["chat", "vision"]:
    """The vision model answers right after a successful image tool; else the chat model."""
    executed = state.get("executed") or []
    if executed and executed[-1]["name"] in VISION_TOOLS and executed[-1]["ok"]:
        return "vision"
    return "chat"
