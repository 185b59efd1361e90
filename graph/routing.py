"""Routing and guards: pure functions over the state, registered with a path map.

``route`` decides where the graph goes after a model reply; ``guard_reason`` tells
build_context whether tools must be switched off for the next call (loop cap reached,
or the model only repeated calls it already made); ``model_role`` picks the vision
model after image generation or an analysed image.
"""

from __future__ import annotations

from collections.abc import Iterable
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


def model_role(state: State) -> Literal["chat", "vision"]:
    """The vision model answers right after a successful image tool; else the chat model."""
    executed = state.get("executed") or []
    if executed and executed[-1]["name"] in VISION_TOOLS and executed[-1]["ok"]:
        return "vision"
    return "chat"
