"""Shared fixtures: a real store in a temporary home, scripted models, test tools."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

for _name, _value in {
    "GRADIO_ANALYTICS_ENABLED": "False",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "DEEPEVAL_TELEMETRY_OPT_OUT": "1",
    "DEEPEVAL_DISABLE_DOTENV": "1",
    "NO_PROXY": "127.0.0.1,localhost",
}.items():
    os.environ[_name] = _value

from config.settings import Settings  # noqa: E402
from graph.context import Context  # noqa: E402
from memory.sqlite.async_store import AsyncSqliteStore  # noqa: E402
from memory.sqlite.store import SqliteStore  # noqa: E402
from tests.support.chat_model import ScriptedChatModel  # noqa: E402
from tools.base import ToolContext, ToolSpec  # noqa: E402
from tools.registry import ToolRegistry  # noqa: E402

FIXED_NOW = datetime(2026, 11, 25, 9, 30, tzinfo=UTC)


async def _echo(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    return {"echo": args.get("text", ""), "session": ctx.session_id}


async def _boom(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    raise RuntimeError("kaboom")


async def _slow(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    await asyncio.sleep(float(args.get("seconds", 5)))
    return {"slept": True}


async def _big(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    return {"blob": "x" * 50_000}


def text_param(name: str = "text") -> dict[str, Any]:
    """A one-string-parameter schema."""
    return {
        "type": "object",
        "properties": {name: {"type": "string"}},
        "required": [name],
        "additionalProperties": False,
    }


TEST_TOOLS = [
    ToolSpec(
        "echo", "Echo text back. Use for tests.", text_param(), _echo, "web_tool", command="echo"
    ),
    ToolSpec("boom", "Always fails.", text_param(), _boom, "web_tool"),
    ToolSpec(
        "slow",
        "Sleeps.",
        {"type": "object", "properties": {"seconds": {"type": "number"}}},
        _slow,
        "web_tool",
        timeout=0.2,
    ),
    ToolSpec(
        "big", "Returns a huge result.", {"type": "object", "properties": {}}, _big, "web_tool"
    ),
]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A fresh COMPANION_HOME."""
    return tmp_path / "home"


@pytest.fixture
def store(home: Path) -> SqliteStore:
    """A real SQLite store on a fixed clock."""
    s = SqliteStore.open_home(home, clock=lambda: FIXED_NOW)
    yield s
    s.close()


@pytest.fixture
def async_store(store: SqliteStore) -> Iterator[AsyncSqliteStore]:
    """The same store through its async interface (what the graph and the app use)."""
    facade = AsyncSqliteStore(store)
    yield facade
    asyncio.run(facade.close())


@pytest.fixture
def test_registry() -> ToolRegistry:
    """A registry of the test tools."""
    return ToolRegistry(TEST_TOOLS)


@pytest.fixture
def make_context(
    async_store: AsyncSqliteStore, home: Path, test_registry: ToolRegistry
) -> Callable[..., Context]:
    """Build a graph Context around a scripted model."""

    def make(
        script: Any,
        *,
        registry: ToolRegistry | None = None,
        vision_script: Any = None,
        **settings: Any,
    ) -> Context:
        settings.setdefault("tool_mode", "native")
        settings.setdefault("provider", "openai-compatible")
        settings.setdefault("chat_model", "scripted-chat")
        return Context(
            settings=Settings(home=home, **settings),
            store=async_store,
            chat_model=ScriptedChatModel(script=script, name_="scripted-chat"),
            registry=registry or test_registry,
            vision_model=ScriptedChatModel(script=vision_script, name_="scripted-vision")
            if vision_script is not None
            else None,
            clock=lambda: FIXED_NOW,
        )

    return make
