"""The guards sit on the edges: conditional edges with named outcomes from pure routers,
drawn as LangGraph draws them, named in the trace; build_context only renders a nudge;
the tool gates run once per turn."""

from __future__ import annotations

import dataclasses
from typing import Any, get_args

from langgraph.runtime import Runtime

from app.graph_view import describe, path, trace_markdown
from graph.builder import compile_graph, mermaid
from graph.routing import AFTER_TOOLS, GUARDS, ROUTES, AfterTools, Route
from graph.runner import run_turn
from graph.state import MAX_TOOL_LOOPS
from nodes.build_context import build_context
from prompts.templates import CAP_REASON, DUPLICATE_REASON
from tests.support.chat_model import tool_call
from tools.base import ToolContext
from tools.registry import ToolRegistry

GUARD_EDGES = {
    ("call_model", "tools", "execute_tool"),
    ("call_model", "final", "__end__"),
    ("call_model", "repeat", "repeat_nudge"),
    ("execute_tool", "loop", "build_context"),
    ("execute_tool", "loop_cap", "cap_nudge"),
}


def test_the_routers_outcomes_are_the_conditional_edges_labels_included() -> None:
    drawn = compile_graph().get_graph()
    conditional = {(e.source, e.data, e.target) for e in drawn.edges if e.conditional}
    assert conditional == GUARD_EDGES
    from_routers = {("call_model", outcome, node) for outcome, node in ROUTES.items()}
    from_routers |= {("execute_tool", outcome, node) for outcome, node in AFTER_TOOLS.items()}
    assert conditional == from_routers
    # every outcome a router can return has its edge, and nothing else does
    assert set(get_args(Route)) == set(ROUTES) and set(get_args(AfterTools)) == set(AFTER_TOOLS)
    plain = {(e.source, e.target) for e in drawn.edges if not e.conditional}
    assert plain == {
        ("__start__", "build_context"),
        ("build_context", "call_model"),
        ("cap_nudge", "build_context"),
        ("repeat_nudge", "build_context"),
    }
    assert {(GUARDS[g].source, g, GUARDS[g].node) for g in GUARDS} <= conditional


def test_langgraphs_own_mermaid_labels_the_guard_edges() -> None:
    text = compile_graph().get_graph().draw_mermaid()
    assert text == mermaid()  # what `companion graph` and the Graph tab show
    for source, label, target in GUARD_EDGES:
        assert f"{source} -. &nbsp;{label}&nbsp; .-> {target};" in text


async def _context(make_context: Any, **state: Any) -> dict[str, Any]:
    ctx = make_context(["unused"])
    user = await ctx.store.add_message("s1", "user", "hi")
    runtime = Runtime(context=ctx)
    update = await build_context({"session_id": "s1", "user_message_id": user.id, **state}, runtime)
    return dict(update)


async def test_build_context_makes_no_cap_decision(make_context) -> None:
    # at the cap, with a repeated call pending: build_context still offers the tools, as
    # only an edge decides; it renders the nudge the edge's node set, and nothing else
    at_cap = await _context(make_context, loops=MAX_TOOL_LOOPS)
    assert at_cap["tools"] == ["echo", "boom", "slow", "big"]
    system = at_cap["context"][0].content
    assert CAP_REASON not in system and "Do not call any tool" not in system
    nudged = await _context(make_context, loops=1, no_tools_reason=DUPLICATE_REASON)
    assert nudged["tools"] == []
    assert DUPLICATE_REASON in nudged["context"][0].content
    assert "no_tools_reason" not in nudged  # the nudge is the edge's, not build_context's


async def test_the_trace_names_the_guard_edge_that_fired(make_context) -> None:
    script = [tool_call("echo", {"text": f"n{i}"}, f"c{i}") for i in range(3)] + ["Done."]
    capped = await run_turn(make_context(script), "s1", "loop")
    guards = [e for e in capped.trace if e["kind"] == "guard"]
    assert [(g["name"], g["detail"]["edge"]) for g in guards] == [
        ("loop_cap", "execute_tool → cap_nudge")
    ]
    assert path(capped.trace)[-3:] == ["cap_nudge", "build_context", "call_model"]
    assert "edge loop\\_cap fired" in trace_markdown(capped.trace)
    last = next(e for e in reversed(capped.trace) if e["kind"] == "model")
    assert describe(last) == "model scripted-chat (chat); replied: Done."

    script = [tool_call("echo", {"text": "a"}, "a"), tool_call("echo", {"text": "A!"}, "b"), "A."]
    repeated = await run_turn(make_context(script), "s2", "twice")
    guards = [e for e in repeated.trace if e["kind"] == "guard"]
    assert [(g["name"], g["detail"]["node"]) for g in guards] == [("repeat", "repeat_nudge")]
    assert repeated.answer == "A."


async def test_tool_gates_run_once_per_turn(make_context, test_registry) -> None:
    asked: list[str | None] = []

    async def gate(tools: ToolContext) -> bool:
        asked.append(tools.session_id)
        return True

    echo = test_registry.get("echo")
    assert echo is not None
    registry = ToolRegistry([dataclasses.replace(echo, available=gate)])
    script = [tool_call("echo", {"text": f"n{i}"}, f"c{i}") for i in range(2)] + ["Done."]
    ctx = make_context(script, registry=registry)
    result = await run_turn(ctx, "s1", "twice")
    assert result.tool_names == ["echo", "echo"] and result.answer == "Done."
    assert len(ctx.chat_model.calls) == 3  # three contexts built, one gate check
    assert asked == ["s1"]
    assert all(call["tools"] for call in ctx.chat_model.calls)  # still offered each loop
