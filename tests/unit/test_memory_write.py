"""create_memory / update_memory / delete_memory tools, and the memory_sql tool."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from config.settings import Settings
from memory.sqlite.async_store import AsyncSqliteStore
from memory.sqlite.memories import create_memory, get_memory
from memory.sqlite.store import SqliteStore
from tools import memory_sql, memory_write
from tools.base import ToolContext
from tools.registry import ToolRegistry

NOW = datetime(2026, 11, 25, 9, 30, tzinfo=UTC)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteStore]:
    s = SqliteStore.open_home(tmp_path, clock=lambda: NOW)
    yield s
    s.close()


@pytest.fixture
def ctx(store: SqliteStore) -> ToolContext:
    return ToolContext(Settings(home=store.path.parent), AsyncSqliteStore(store), "s", lambda: NOW)


@pytest.fixture
def registry() -> ToolRegistry:
    return ToolRegistry(memory_write.TOOLS + memory_sql.TOOLS)


async def test_create_update_delete_round_trip(ctx: ToolContext, registry: ToolRegistry) -> None:
    created = await registry.execute(
        "create_memory", {"category": "identity", "key": "name", "value": "Budi"}, ctx
    )
    memory = get_memory(ctx.store.blocking, "identity", "name")
    assert memory is not None and memory.created_at == "2026-11-25 09:30:00"
    saved = "Saved identity / name: Budi"
    assert created == {"success": True, "message": saved, "memory_id": memory.id}
    assert registry.format_result("create_memory", created).splitlines()[2] == saved

    updated = await registry.execute("update_memory", {"key": "name", "value": "Budi S."}, ctx)
    changed = "Updated identity / name: Budi S."
    assert updated == {"success": True, "message": changed, "memory_id": memory.id}
    assert get_memory(ctx.store.blocking, "identity", "name").value == "Budi S."  # type: ignore[union-attr]

    deleted = await registry.execute("delete_memory", {"category": "identity", "key": "name"}, ctx)
    forgot = "Forgot identity / name"
    assert deleted == {"success": True, "message": forgot, "memory_id": memory.id}
    assert get_memory(ctx.store.blocking, "identity", "name") is None


@pytest.mark.parametrize(
    ("name", "args", "message"),
    [
        ("create_memory", {"category": "hobbies", "key": "k", "value": "v"}, "category"),
        ("create_memory", {"category": "focus", "key": "k"}, "value"),
        ("create_memory", {"category": "focus", "key": "k", "value": ""}, "value"),
        ("delete_memory", {"key": "k", "value": "x"}, "additional"),
    ],
)
async def test_invalid_arguments_are_the_registrys_error(
    ctx: ToolContext, registry: ToolRegistry, name: str, args: dict[str, str], message: str
) -> None:
    result = await registry.execute(name, args, ctx)
    assert set(result) == {"error"} and message in result["error"].lower()


@pytest.mark.parametrize(
    ("name", "args", "message"),
    [
        ("create_memory", {"category": "focus", "key": "k", "value": "   "}, "empty"),
        ("update_memory", {"key": "missing", "value": "v"}, "no memory"),
        ("delete_memory", {"category": "focus", "key": "missing"}, "no memory"),
    ],
)
async def test_a_refused_write_is_success_false_with_the_reason(
    ctx: ToolContext, registry: ToolRegistry, name: str, args: dict[str, str], message: str
) -> None:
    result = await registry.execute(name, args, ctx)
    assert set(result) == {"success", "error"} and result["success"] is False
    assert message in result["error"].lower()


async def test_create_on_existing_key_says_so(ctx: ToolContext, registry: ToolRegistry) -> None:
    args = {"category": "signals", "key": "drink", "value": "kopi"}
    await registry.execute("create_memory", args, ctx)
    again = await registry.execute("create_memory", {**args, "value": "teh"}, ctx)
    assert again["success"] is False
    assert "already exists" in again["error"] and "update_memory" in again["error"]
    assert get_memory(ctx.store.blocking, "signals", "drink").value == "kopi"  # type: ignore[union-attr]


def test_schemas_offer_the_category_enum(registry: ToolRegistry) -> None:
    schema = registry.get("create_memory").schema()  # type: ignore[union-attr]
    category = schema["function"]["parameters"]["properties"]["category"]
    assert category["enum"] == ["identity", "principles", "focus", "signals"]


@pytest.mark.parametrize(
    ("name", "example"),
    [
        ("create_memory", "Example: category identity, key name, value Budi."),
        ("update_memory", "Example: key job, value nurse at the city hospital."),
        ("delete_memory", "Example: key favourite drink."),
    ],
)
def test_each_memory_schema_carries_an_example(
    registry: ToolRegistry, name: str, example: str
) -> None:
    description = registry.get(name).schema()["function"]["description"]  # type: ignore[union-attr]
    assert description.endswith(example)


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        (
            "create_memory",
            "identity name: Budi",
            {"category": "identity", "key": "name", "value": "Budi"},
        ),
        (
            "create_memory",
            "signals | favourite food | nasi goreng",
            {"category": "signals", "key": "favourite food", "value": "nasi goreng"},
        ),
        (
            "update_memory",
            "focus project = thesis",
            {"category": "focus", "key": "project", "value": "thesis"},
        ),
        ("update_memory", "job: teacher", {"key": "job", "value": "teacher"}),
        (
            "delete_memory",
            "signals favourite drink",
            {"category": "signals", "key": "favourite drink"},
        ),
        (
            "create_memory",
            '{"category": "focus", "key": "k", "value": "v"}',
            {"category": "focus", "key": "k", "value": "v"},
        ),
    ],
)
def test_command_arguments(registry: ToolRegistry, name: str, text: str, expected: dict) -> None:
    assert registry.get(name).command_arguments(text) == expected  # type: ignore[union-attr]


async def test_gates(ctx: ToolContext, registry: ToolRegistry) -> None:
    async def offered(context: ToolContext) -> set[str]:
        return {spec.name for spec in await registry.enabled(context)}

    assert await offered(ctx) == {"create_memory"}
    question = ctx.store.blocking.add_message("s", "user", "hi")
    # The message being answered is not history yet: nothing to query.
    assert await offered(dataclasses.replace(ctx, user_message_id=question.id)) == {"create_memory"}
    assert await offered(ctx) == {"create_memory", "memory_sql"}  # no memory to change yet
    create_memory(ctx.store.blocking, "signals", "drink", "kopi susu")
    assert await offered(ctx) == {"create_memory", "update_memory", "delete_memory", "memory_sql"}


async def test_memory_sql_tool(ctx: ToolContext, registry: ToolRegistry) -> None:
    ctx.store.blocking.add_message("s", "user", "I cooked rendang")
    ctx.store.blocking.add_message("s", "memory_tool", "SECRET")
    spec = registry.get("memory_sql")
    assert spec is not None and spec.multiline and spec.role == "memory_tool"
    args = spec.command_arguments("\n```sql\nSELECT role, content FROM messages\n```\n")
    assert args == {"sql": "SELECT role, content FROM messages"}
    result = await registry.execute("memory_sql", args, ctx)
    assert result["rows"] == [["user", "I cooked rendang"]]
    assert "rendang" in registry.format_result("memory_sql", result)
    refused = await registry.execute("memory_sql", {"sql": "DROP TABLE messages"}, ctx)
    assert "DROP" in refused["error"]
