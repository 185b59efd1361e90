"""What a whole turn gives a script (``graph.runner.run_turn``): the answer, the turn's tool
results and its count of memory operations; and the tool budget the model is told."""

from __future__ import annotations

from graph.runner import run_turn
from graph.state import MAX_TOOL_LOOPS
from tests.conftest import TEST_TOOLS
from tests.support.chat_model import native_calls
from tools import memory_write
from tools.registry import ToolRegistry

NAME = {"category": "identity", "key": "name", "value": "Budi"}


async def test_run_turn_lists_tool_results_and_counts_memory_operations(make_context) -> None:
    registry = ToolRegistry([*TEST_TOOLS, *memory_write.TOOLS])
    script = [
        native_calls(("create_memory", NAME), ("echo", {"text": "hi"})),
        native_calls(("delete_memory", {"key": "nobody"}), ("update_memory", NAME)),
        "Noted, Budi.",
    ]
    result = await run_turn(make_context(script, registry=registry), "s1", "I'm Budi")
    assert result.answer == "Noted, Budi."
    shown = [(r.name, r.ok) for r in result.tool_results]
    assert shown == [
        ("create_memory", True),
        ("echo", True),
        ("delete_memory", False),
        ("update_memory", True),
    ]
    created, echoed, refused, updated = (r.result for r in result.tool_results)
    assert created["success"] is True and created["message"] == "Saved identity / name: Budi"
    assert echoed == {"echo": "hi", "session": "s1"}
    assert refused["success"] is False and "nobody" in refused["error"]
    assert updated["message"] == "Updated identity / name: Budi"
    assert [r.message_id for r in result.tool_results] == [e["message_id"] for e in result.executed]
    assert result.memory_operations == 2  # the refused delete and the echo changed nothing


async def test_a_turn_without_tools_has_no_results(make_context) -> None:
    result = await run_turn(make_context(["Four."]), "s1", "What is 2+2?")
    assert (result.tool_results, result.memory_operations) == ([], 0)


async def test_the_model_is_told_its_tool_budget(make_context) -> None:
    ctx = make_context(["Four."])
    await run_turn(ctx, "s1", "What is 2+2?")
    system = ctx.chat_model.calls[0]["messages"][0].content
    assert f"at most {MAX_TOOL_LOOPS} rounds of tool use" in system
