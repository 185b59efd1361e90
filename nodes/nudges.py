"""The small nodes the guard edges lead to (``graph.routing.GUARDS``): ``cap_nudge``
after ``loop_cap``, ``repeat_nudge`` after ``repeat``.

They decide nothing (the router that chose the edge did): each sets the nudge that
build_context renders for the next model call, with tools off, and names the edge that
fired in the turn's trace. One node per guard, so the drawn graph shows each guard's path.
"""

from __future__ import annotations

from typing import TypedDict

from graph.routing import GUARDS, Guard
from graph.state import State, TraceEvent


class NudgeUpdate(TypedDict):
    """The nudge for the next call, and the trace line naming the guard edge."""

    no_tools_reason: str
    trace: list[TraceEvent]


def _nudge(guard: Guard, state: State) -> NudgeUpdate:
    edge = GUARDS[guard]
    detail = {
        "edge": f"{edge.source} → {edge.node}",
        "node": edge.node,
        "reason": edge.reason,
        "loops": state.get("loops") or 0,
    }
    return NudgeUpdate(
        no_tools_reason=edge.reason, trace=[{"kind": "guard", "name": guard, "detail": detail}]
    )


async def cap_nudge(state: State) -> NudgeUpdate:
    """After the loop cap: tools off, answer from what the loops found."""
    return _nudge("loop_cap", state)


async def repeat_nudge(state: State) -> NudgeUpdate:
    """After a reply that only repeated calls already made: tools off, answer now."""
    return _nudge("repeat", state)
