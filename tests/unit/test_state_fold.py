"""The runner follows a turn's state from its nodes' updates (``graph.state.fold``): the
same state LangGraph's channels hold at the end, without a copy after every step."""

from __future__ import annotations

from typing import Any

from graph.runner import STREAM_MODES, _initial_state, default_graph
from graph.state import GROWING, fold


def test_the_lists_with_an_add_reducer_grow_and_the_rest_is_replaced() -> None:
    assert frozenset({"trace", "executed"}) == GROWING
    state: dict[str, Any] = {"trace": [{"name": "a"}], "loops": 0, "answer": None}
    fold(state, {"trace": [{"name": "b"}], "loops": 1, "answer": "hi"})
    fold(state, None)  # a node that changed nothing
    assert state == {"trace": [{"name": "a"}, {"name": "b"}], "loops": 1, "answer": "hi"}


async def test_the_folded_updates_are_the_graphs_own_final_state(make_context) -> None:
    from tests.support.chat_model import tool_call

    ctx = make_context([tool_call("echo", {"text": "hi"}), "It said hi."])
    user = await ctx.store.add_message("s1", "user", "echo hi please")
    initial = _initial_state("s1", user.id)
    folded: dict[str, Any] = dict(initial)
    values: dict[str, Any] = {}
    async for mode, chunk in default_graph().astream(
        initial, context=ctx, stream_mode=[*STREAM_MODES, "values"]
    ):
        if mode == "updates":
            for update in chunk.values():
                fold(folded, update)
        elif mode == "values":
            values = chunk
    tracked = {k: v for k, v in values.items() if k not in ("context", "history")}
    assert {k: folded.get(k) for k in tracked} == tracked
    assert folded["answer"] == "It said hi." and len(folded["executed"]) == 1
