"""execute_tool's guard tables: the per-reply cap, outside content, and what writes memory."""

from __future__ import annotations

import pytest

from graph.routing import MAX_CALLS_PER_REPLY, capped, outside_source
from graph.state import ExecutedCall, ToolCall
from tools.memory_sql import is_write
from tools.registry import default_registry


def calls(count: int) -> list[ToolCall]:
    return [
        ToolCall(id=f"c{i}", name="echo", args={}, raw_args=None, command=None, native=True)
        for i in range(count)
    ]


def ran(*names: str) -> list[ExecutedCall]:
    return [ExecutedCall(name=n, signature=n, ok=True, message_id=i) for i, n in enumerate(names)]


@pytest.mark.parametrize(
    ("count", "kept", "over"),
    [
        (0, 0, 0),
        (1, 1, 0),
        (MAX_CALLS_PER_REPLY, MAX_CALLS_PER_REPLY, 0),
        (MAX_CALLS_PER_REPLY + 1, MAX_CALLS_PER_REPLY, 1),
        (60, MAX_CALLS_PER_REPLY, 60 - MAX_CALLS_PER_REPLY),
    ],
)
def test_capped_keeps_the_first_calls_of_a_reply(count: int, kept: int, over: int) -> None:
    allowed, refused = capped(calls(count))
    assert [c["id"] for c in allowed] == [f"c{i}" for i in range(kept)]
    assert [c["id"] for c in refused] == [f"c{i}" for i in range(kept, kept + over)]


@pytest.mark.parametrize(
    ("executed", "source"),
    [
        (ran(), None),
        (ran("weather", "memory_search"), None),
        (ran("weather", "web_search"), "web_search"),
        (ran("image_analyze", "web_search"), "image_analyze"),
    ],
)
def test_outside_source_names_the_first_untrusted_tool_of_the_turn(executed, source) -> None:
    assert outside_source(executed, ("web_search", "image_analyze")) == source


@pytest.mark.parametrize(
    ("sql", "writes"),
    [
        ("SELECT value FROM memories", False),
        ("WITH x AS (SELECT 1 AS n) SELECT n FROM x", False),
        ("UPDATE memories SET value = 'x'", True),
        ("WITH x AS (SELECT 1) UPDATE memories SET value = 'x'", True),
        ("```sql\nUPDATE sessions SET title = 'x'\n```", True),
        ("update messages set content = 'x'", True),
        ("DROP TABLE memories", False),  # refused before it runs: writes nothing
        ("", False),
    ],
)
def test_memory_sql_writes_only_with_an_update(sql: str, writes: bool) -> None:
    assert is_write({"sql": sql}) is writes


def test_tools_declare_outside_content_and_memory_writes() -> None:
    registry = default_registry()
    specs = {name: registry.get(name) for name in registry.names}
    assert {n for n, s in specs.items() if s and s.untrusted} == {"web_search", "image_analyze"}
    writers = {n for n, s in specs.items() if s and s.writes_memory and s.writes_memory({})}
    assert writers == {"create_memory", "update_memory", "delete_memory"}
    assert specs["memory_sql"].writes_memory is is_write  # type: ignore[union-attr]
