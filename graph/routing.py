"""Routing and guards: pure functions over the state, registered with a path map.

Each router returns a named outcome, and the builder maps outcomes to nodes, so the
drawn graph is the real one and its guard edges carry their names (like LangGraph
prebuilt's ``tools_condition``). ``route`` decides after a model reply: run the calls
(``tools``), end the turn (``final``), or ``repeat`` (the reply only repeats calls already
made this turn); ``after_tools`` decides after a tool loop: build the next context
(``loop``) or ``loop_cap`` (``MAX_TOOL_LOOPS`` loops ran). A guard edge leads to its
small node (``GUARDS``: the nudge it sets), then build_context renders the nudge with
tools off, and the one call that follows ends the turn. ``model_role`` picks the vision
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

from langgraph.graph import END

from graph.commands import call_signature
from graph.state import MAX_TOOL_LOOPS, ExecutedCall, State, ToolCall
from prompts.templates import CAP_REASON, DUPLICATE_REASON

Route = Literal["tools", "repeat", "final"]
AfterTools = Literal["loop", "loop_cap"]
Guard = Literal["loop_cap", "repeat"]


@dataclass(frozen=True)
class GuardEdge:
    """A guard's edge: the node it leaves, the node it leads to, the nudge that node sets."""

    source: str
    node: str
    reason: str


GUARDS: dict[Guard, GuardEdge] = {
    "loop_cap": GuardEdge("execute_tool", "cap_nudge", CAP_REASON),
    "repeat": GuardEdge("call_model", "repeat_nudge", DUPLICATE_REASON),
}
ROUTES: dict[Route, str] = {
    "tools": "execute_tool",
    "repeat": GUARDS["repeat"].node,
    "final": END,
}
AFTER_TOOLS: dict[AfterTools, str] = {
    "loop": "build_context",
    "loop_cap": GUARDS["loop_cap"].node,
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


# In ``window_tools``: a file's text replayed with the message it was attached to. The
# person chose the file, but may not have written it: it counts as outside content.
ATTACHED_FILE = "attached_file"


@dataclass(frozen=True)
class ToolKinds:
    """Which tools' results are the person's private data and which are outside content
    (``ToolSpec.private`` / ``ToolSpec.untrusted``)."""

    private: frozenset[str] = frozenset()
    outside: frozenset[str] = frozenset()


def legs(state: State, kinds: ToolKinds) -> frozenset[Leg]:
    """The trifecta's first two legs the model's context holds now.

    Private data: the memories in the system prompt (the same rows memory_sql reads), or
    a private tool's result. Outside content: an untrusted tool's result, or an attached
    file's text (``ATTACHED_FILE``). A result counts
    wherever the model reads it: run earlier this turn or replayed from the history
    window (failed calls too: an error can carry what was read).
    """
    seen = {*(state.get("window_tools") or ()), *(e["name"] for e in state.get("executed") or ())}
    found: set[Leg] = set()
    if state.get("memories_shown") or seen & kinds.private:
        found.add("private")
    if seen & kinds.outside or ATTACHED_FILE in seen:
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
    """After call_model: run the reply's calls, guard against a repeat, or finish.

    A reply made with tools off (after a guard) always finishes: whatever it attempted
    is not run, and call_model stored its answer.
    """
    calls = state.get("calls") or []
    if not calls or state.get("error") or state.get("no_tools_reason"):
        return "final"
    if not fresh_calls(calls, state.get("executed") or []):
        return "repeat"
    return "tools"


def after_tools(state: State) -> AfterTools:
    """After execute_tool: another loop, or the loop cap (``MAX_TOOL_LOOPS`` loops ran)."""
    return "loop_cap" if (state.get("loops") or 0) >= MAX_TOOL_LOOPS else "loop"


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
