"""The graph's shape, pinned by a snapshot of its Mermaid drawing."""

from __future__ import annotations

from graph.builder import compile_graph, mermaid

EXPECTED_EDGES = {
    ("__start__", "build_context"),
    ("build_context", "call_model"),
    ("call_model", "execute_tool"),
    ("call_model", "repeat_nudge"),
    ("call_model", "__end__"),
    ("execute_tool", "build_context"),
    ("execute_tool", "cap_nudge"),
    ("cap_nudge", "build_context"),
    ("repeat_nudge", "build_context"),
}


def test_graph_edges_are_the_designed_ones() -> None:
    drawn = compile_graph().get_graph()
    assert {(e.source, e.target) for e in drawn.edges} == EXPECTED_EDGES
    assert set(drawn.nodes) == {
        "__start__",
        "build_context",
        "call_model",
        "execute_tool",
        "cap_nudge",
        "repeat_nudge",
        "__end__",
    }


def test_mermaid_snapshot() -> None:
    text = mermaid()
    assert "graph TD;" in text
    for line in (
        "__start__ --> build_context;",
        "build_context --> call_model;",
        "call_model -. &nbsp;final&nbsp; .-> __end__;",
        "call_model -. &nbsp;tools&nbsp; .-> execute_tool;",
        "call_model -. &nbsp;repeat&nbsp; .-> repeat_nudge;",
        "execute_tool -. &nbsp;loop&nbsp; .-> build_context;",
        "execute_tool -. &nbsp;loop_cap&nbsp; .-> cap_nudge;",
        "cap_nudge --> build_context;",
        "repeat_nudge --> build_context;",
    ):
        assert line in text
