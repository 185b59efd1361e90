"""The tool registry: schemas, validation, errors as data, gating, built-in tools."""

from __future__ import annotations

from typing import Any

import pytest

from config.settings import Settings
from memory import MemoryGates
from memory.sqlite.async_store import AsyncSqliteStore
from memory.sqlite.store import SqliteStore
from tests.conftest import FIXED_NOW
from tools.base import ToolContext, ToolSpec
from tools.registry import (
    ToolRegistry,
    aexecute_tool,
    aget_tool_schemas,
    default_registry,
    get_tool_schemas,
)

BUILTIN = {
    "web_search",
    "weather",
    "memory_search",
    "memory_sql",
    "create_memory",
    "update_memory",
    "delete_memory",
    "image_generate",
    "image_analyze",
}


def ctx(store: SqliteStore, **settings: Any) -> ToolContext:
    return ToolContext(Settings(home=store.path.parent, **settings), AsyncSqliteStore(store), "s1")


def test_builtin_schemas_are_openai_format() -> None:
    schemas = get_tool_schemas()
    assert {s["function"]["name"] for s in schemas} == BUILTIN
    for schema in schemas:
        assert schema["type"] == "function"
        function = schema["function"]
        assert function["description"].strip()
        assert function["parameters"]["type"] == "object"
        assert "yuzuki" not in function["description"].lower()  # no persona language


class CountingStore(AsyncSqliteStore):
    """The real store, counting the gates' questions."""

    asked: list[str]

    async def memory_gates(self, before_id: int | None = None) -> MemoryGates:
        self.asked.append(f"memory_gates({before_id})")
        return await super().memory_gates(before_id)


async def test_the_gates_ask_the_store_once_per_call(store: SqliteStore) -> None:
    """memory_search's, memory_sql's and the two memory writes' gates share one query."""
    asked = store.add_message("s1", "user", "hello").id
    counting = CountingStore(store)
    counting.asked = []
    settings = Settings(home=store.path.parent)
    context = ToolContext(settings, counting, "s1", user_message_id=asked)
    offered = {spec.name for spec in await default_registry().enabled(context)}
    assert not {"memory_search", "memory_sql", "update_memory"} & offered  # nothing yet
    assert counting.asked == [f"memory_gates({asked})"]  # four gates, one question
    # The next call asks again (the data may have changed since).
    await counting.remember("identity", "cat", "Miso", FIXED_NOW)
    offered = {spec.name for spec in await default_registry().enabled(context)}
    assert {"memory_search", "memory_sql", "update_memory", "delete_memory"} <= offered
    assert len(counting.asked) == 2


async def test_gates_follow_the_data(store: SqliteStore) -> None:
    offered = {s["function"]["name"] for s in await aget_tool_schemas(ctx(store))}
    assert offered == {"web_search", "weather", "create_memory"} | (
        offered & {"update_memory", "delete_memory"}
    )
    assert "memory_search" not in offered and "image_generate" not in offered
    store.add_message("s1", "user", "hello")
    offered = {s["function"]["name"] for s in await aget_tool_schemas(ctx(store))}
    assert {"memory_search", "memory_sql"} <= offered
    configured = ctx(
        store, image_backend="url", image_base_url="http://127.0.0.1:9", image_model="flux"
    )
    assert "image_generate" in {s["function"]["name"] for s in await aget_tool_schemas(configured)}


@pytest.mark.parametrize(
    ("name", "args", "message"),
    [
        ("nope", {}, "unknown tool 'nope'"),
        ("weather", "{oops", "malformed arguments for weather"),
        ("weather", [1, 2], "expected an object"),
        ("web_search", {}, "invalid arguments for web_search"),
        ("web_search", {"query": 5}, "invalid arguments for web_search"),
    ],
)
async def test_bad_calls_become_error_dicts(store: SqliteStore, name, args, message) -> None:
    result = await aexecute_tool(name, args, session_id="s1", ctx=ctx(store))
    assert message in result["error"]


async def test_a_broken_gate_closes_the_tool_only(store: SqliteStore) -> None:
    async def run(args: dict[str, Any], c: ToolContext) -> dict[str, Any]:
        return {}

    def broken(c: ToolContext) -> bool:
        raise RuntimeError("gate bug")

    registry = ToolRegistry(
        [
            ToolSpec("a", "A.", {"type": "object"}, run, "web_tool"),
            ToolSpec("b", "B.", {"type": "object"}, run, "web_tool", available=broken),
        ]
    )
    assert [s.name for s in await registry.enabled(ctx(store))] == ["a"]


def test_result_format() -> None:
    registry = default_registry()
    text = registry.format_result("weather", {"error": "location_not_set"})
    assert text == "🔧 TOOL RESULT — WEATHER\n\nError: location_not_set\n\n---"
    assert registry.role_of("weather") == "weather_tool"
    assert registry.role_of("memory_sql") == "memory_tool"
    assert registry.role_of("image_generate") == "image_tool"
