"""The seed's registry contract: ``get_tool_schemas()`` and ``execute_tool(tool_name,
arguments, session_id=None)`` are plain functions a script calls, exactly as the seed
writes them; the graph's async twins are ``aget_tool_schemas(ctx)`` and ``aexecute_tool``."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from config.settings import Settings
from evals.fixtures import OpenMeteoFixture
from memory.sqlite.async_store import AsyncSqliteStore
from memory.sqlite.store import SqliteStore
from tools.base import ToolContext
from tools.registry import aexecute_tool, aget_tool_schemas, execute_tool, get_tool_schemas

ROOT = Path(__file__).resolve().parents[2]
SEED_COMMAND = (
    "from tools.registry import get_tool_schemas, execute_tool; "
    "print(len(get_tool_schemas())); print(execute_tool('weather', {}))"
)
BUILTIN_COUNT = 9
OUTSIDE_SETTINGS = ("OPENROUTER_API_KEY",)


@pytest.fixture
def configured_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """COMPANION_HOME at a fresh folder, no other Companion variable set."""
    for name in [n for n in os.environ if n.startswith("COMPANION_") or n in OUTSIDE_SETTINGS]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("COMPANION_HOME", str(tmp_path))
    return tmp_path


@pytest.fixture
def meteo() -> Iterator[OpenMeteoFixture]:
    with OpenMeteoFixture() as server:
        yield server


def test_the_seed_command_works_in_a_fresh_shell(configured_home: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", SEED_COMMAND],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout.splitlines() == [str(BUILTIN_COUNT), "{'error': 'location_not_set'}"]


def test_get_tool_schemas_is_a_plain_function() -> None:
    tools = get_tool_schemas()
    assert isinstance(tools, list) and len(tools) == BUILTIN_COUNT
    assert all(tool["type"] == "function" for tool in tools)


def test_execute_tool_as_the_seed_calls_it(configured_home: Path) -> None:
    assert execute_tool("weather", {}) == {"error": "location_not_set"}
    result = execute_tool("web_search", {}, session_id="s1")
    assert "invalid arguments for web_search" in result["error"]


def test_execute_tool_reads_the_saved_location_like_the_cli(
    configured_home: Path, meteo: OpenMeteoFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COMPANION_WEATHER_URL", meteo.forecast_url)
    meteo.set_current(-41.5, 172.5, temperature=11.0, weather_code=2, wind_speed=7.0)
    store = SqliteStore.open_home(configured_home)
    store.set_profile({"latitude": -41.5, "longitude": 172.5})  # saved in Settings
    store.close()
    result = execute_tool("weather", {})
    assert (result["temperature"], result["weather"]) == (11.0, "partly cloudy")
    [request] = meteo.requests_to("/v1/forecast")
    assert (request.param("latitude"), request.param("longitude")) == ("-41.5", "172.5")


async def test_inside_a_running_loop_execute_tool_names_its_twin(configured_home: Path) -> None:
    with pytest.raises(RuntimeError, match=r"await aexecute_tool\(\.\.\.\)"):
        execute_tool("weather", {})
    # On a worker thread (no loop of its own running) it works as in a script.
    assert await asyncio.to_thread(execute_tool, "weather", {}) == {"error": "location_not_set"}
    assert await aexecute_tool("weather", {}) == {"error": "location_not_set"}


async def test_aget_tool_schemas_gives_the_tools_enabled_now(tmp_path: Path) -> None:
    store = SqliteStore.open_home(tmp_path)
    ctx = ToolContext(Settings(home=tmp_path), AsyncSqliteStore(store), "s1")
    offered = {schema["function"]["name"] for schema in await aget_tool_schemas(ctx)}
    assert "create_memory" in offered and "memory_search" not in offered
    assert offered < {schema["function"]["name"] for schema in get_tool_schemas()}
    await ctx.store.close()
