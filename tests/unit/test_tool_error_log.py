"""Every tool error result leaves one WARNING line in companion.log (through app.logs'
setup): the tool, the session, the error kind and a one-line reason, never a secret."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.logs import HANDLER_NAMES, configure_logging
from config.settings import Settings
from evals.fixtures import OpenMeteoFixture
from memory.sqlite.async_store import AsyncSqliteStore
from memory.sqlite.store import SqliteStore
from tools.base import ToolContext, ToolSpec
from tools.registry import REASON_CHARS, ToolRegistry, default_registry

API_KEY = "sk-or-v1-0123456789abcdefSECRET"
IMAGE_KEY = "img-key-SECRET-42"
PASSWORD = "hunter2-SECRET"


@pytest.fixture
def log_file(tmp_path: Path) -> Iterator[Path]:
    """companion.log as the CLI and the app set it up; the handlers go afterwards."""
    root = logging.getLogger("companion")
    level = root.level
    path = configure_logging(tmp_path / "logs" / "companion.log")
    yield path
    for handler in [h for h in root.handlers if h.get_name() in HANDLER_NAMES]:
        root.removeHandler(handler)
        handler.close()
    root.setLevel(level)


@pytest.fixture
def closed_port_url() -> str:
    """The Open-Meteo fixture's forecast URL after the fixture stopped: nothing listens."""
    with OpenMeteoFixture() as server:
        url = server.forecast_url
    return url


def make_ctx(home: Path, **settings: Any) -> ToolContext:
    values: dict[str, Any] = {
        "home": home,
        "api_key": API_KEY,
        "image_api_key": IMAGE_KEY,
        "password": PASSWORD,
        **settings,
    }
    return ToolContext(Settings(**values), AsyncSqliteStore(SqliteStore.open_home(home)), "s1")


def warnings_in(path: Path) -> list[str]:
    return [line for line in path.read_text("utf-8").splitlines() if " WARNING " in line]


def assert_no_secret(path: Path) -> None:
    text = path.read_text("utf-8")
    assert API_KEY not in text and IMAGE_KEY not in text and PASSWORD not in text


async def test_a_failing_weather_call_leaves_a_warning(
    tmp_path: Path, log_file: Path, closed_port_url: str
) -> None:
    ctx = make_ctx(tmp_path, weather_url=closed_port_url, latitude=52.52, longitude=13.41)
    result = await default_registry().execute("weather", {}, ctx)
    assert "error" in result
    [line] = warnings_in(log_file)
    assert "companion.tools: tool error: tool=weather session=s1 kind=tool_error" in line
    assert "reason=" + " ".join(result["error"].split())[:40] in line
    assert_no_secret(log_file)


async def test_a_refused_sql_statement_leaves_a_warning(tmp_path: Path, log_file: Path) -> None:
    ctx = make_ctx(tmp_path)
    result = await default_registry().execute("memory_sql", {"sql": "DELETE FROM messages"}, ctx)
    assert result["error"].startswith("refused:")
    [line] = warnings_in(log_file)
    assert "tool=memory_sql session=s1 kind=tool_error reason=refused:" in line
    assert_no_secret(log_file)


@pytest.mark.parametrize(
    ("name", "arguments", "kind"),
    [
        ("web_search", {}, "invalid_arguments"),
        ("weather", {"lat": "north"}, "invalid_arguments"),
        ("weather", "{oops", "malformed_arguments"),
        ("nope", {}, "unknown_tool"),
    ],
)
async def test_bad_calls_leave_a_warning(
    tmp_path: Path, log_file: Path, name: str, arguments: Any, kind: str
) -> None:
    ctx = make_ctx(tmp_path)
    ctx.session_id = "chat-7"
    result = await default_registry().execute(name, arguments, ctx)
    [line] = warnings_in(log_file)
    assert f"tool error: tool={name} session=chat-7 kind={kind} reason=" in line
    assert result["error"].split(":")[0] in line


async def test_the_reason_is_one_line_without_secrets(tmp_path: Path, log_file: Path) -> None:
    async def leaky(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        detail = "x" * 2 * REASON_CHARS
        return {"error": f"refused with key {API_KEY}\nand {IMAGE_KEY}, {PASSWORD}\n{detail}"}

    registry = ToolRegistry([ToolSpec("leaky", "Leaks.", {"type": "object"}, leaky, "web_tool")])
    await registry.execute("leaky", {}, make_ctx(tmp_path))
    [line] = warnings_in(log_file)
    reason = line.split("reason=", 1)[1]
    assert reason.startswith("refused with key [secret] and [secret], [secret] xxx")
    assert len(reason) == REASON_CHARS and reason.endswith("…")
    assert_no_secret(log_file)


async def test_a_result_without_error_logs_nothing(tmp_path: Path, log_file: Path) -> None:
    ctx = make_ctx(tmp_path)
    result = await default_registry().execute(
        "create_memory", {"category": "identity", "key": "name", "value": "Budi"}, ctx
    )
    assert result["success"] is True
    assert warnings_in(log_file) == []
