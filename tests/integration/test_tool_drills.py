"""Tool failure drills through the whole graph: a failing tool never breaks the turn.

A tool that hangs, raises, floods or cannot reach its site gives the model an error (or a
truncated, marked) result; the model answers from it, the turn completes, the result is
stored, and the next turn works.
"""

from __future__ import annotations

import socket

import pytest
from langchain_core.messages import ToolMessage

from evals.fixtures import DuckDuckGoFixture
from graph.runner import run_turn
from tests.support.chat_model import tool_call
from tools.registry import MAX_RESULT_CHARS, ToolRegistry, default_registry


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def tool_messages(ctx, call: int = 1) -> list[ToolMessage]:
    """The tool results the model saw on its ``call``-th request."""
    return [m for m in ctx.chat_model.calls[call]["messages"] if isinstance(m, ToolMessage)]


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (tool_call("slow", {"seconds": 5}, "t1"), "slow timed out after 0.2 s"),
        (tool_call("boom", {"text": "x"}, "t1"), "boom failed: RuntimeError: kaboom"),
        (tool_call("echo", {"text": 3}, "t1"), "invalid arguments for echo"),
        (tool_call("nope", {}, "t1"), "unknown tool 'nope'"),
    ],
    ids=["timeout", "exception", "invalid-arguments", "unknown-tool"],
)
async def test_failing_tool_becomes_an_error_result(make_context, call, error) -> None:
    ctx = make_context([call, "Sorry, that did not work.", "Hello again."])
    result = await run_turn(ctx, "s1", "try the tool")
    assert result.answer == "Sorry, that did not work."
    assert result.error is None
    seen = tool_messages(ctx)
    assert len(seen) == 1 and error in seen[0].content
    stored = ctx.store.blocking.messages("s1")
    assert [m.role for m in stored] == ["user", "web_tool", "assistant"]
    assert error in stored[1].meta["result"]["error"]
    assert (await run_turn(ctx, "s1", "hi")).answer == "Hello again."


async def test_timeout_does_not_hold_the_turn(make_context) -> None:
    ctx = make_context([tool_call("slow", {"seconds": 30}, "t1"), "Gave up waiting."])
    result = await run_turn(ctx, "s1", "wait for it")
    assert result.answer == "Gave up waiting."
    assert result.seconds < 5


async def test_oversized_output_is_truncated_and_marked(make_context) -> None:
    ctx = make_context([tool_call("big", {}, "t1"), "That was a lot."])
    result = await run_turn(ctx, "s1", "give me everything")
    assert result.answer == "That was a lot."
    (seen,) = tool_messages(ctx)
    assert "…[truncated:" in seen.content and "more characters]" in seen.content
    assert len(seen.content) < MAX_RESULT_CHARS + 200
    stored = next(m for m in ctx.store.blocking.messages("s1") if m.is_tool)
    assert stored.content == seen.content


async def test_weather_site_unreachable(make_context) -> None:
    port = closed_port()
    registry = ToolRegistry([default_registry().get("weather")])
    ctx = make_context(
        [tool_call("weather", {"lat": 35.68, "lon": 139.69}, "w1"), "The weather service is down."],
        registry=registry,
        weather_url=f"http://127.0.0.1:{port}/v1/forecast",
        geocoding_url=f"http://127.0.0.1:{port}/v1/search",
        request_timeout=2.0,
    )
    result = await run_turn(ctx, "s1", "How's the weather in Tokyo?")
    assert result.answer == "The weather service is down."
    assert result.seconds < 5
    (seen,) = tool_messages(ctx)
    assert "could not connect to the weather service" in seen.content
    stored = next(m for m in ctx.store.blocking.messages("s1") if m.is_tool)
    assert stored.role == "weather_tool"
    assert stored.meta["result"] == {"error": "could not connect to the weather service"}


async def test_web_search_site_unreachable(make_context) -> None:
    port = closed_port()
    registry = ToolRegistry([default_registry().get("web_search")])
    ctx = make_context(
        [tool_call("web_search", {"query": "USD to JPY"}, "q1"), "Search is unavailable."],
        registry=registry,
        web_search_url=f"http://127.0.0.1:{port}/html/",
        request_timeout=2.0,
    )
    result = await run_turn(ctx, "s1", "USD to JPY rate")
    assert result.answer == "Search is unavailable."
    (seen,) = tool_messages(ctx)
    assert "🔧 TOOL RESULT — WEB_SEARCH" in seen.content and "Error:" in seen.content


@pytest.mark.parametrize("query", ["hugepage", "gzipbomb"])
async def test_web_search_flooded_by_its_site(make_context, query) -> None:
    """300 MB of page, or 0.3 MB of gzip that decodes to 300 MB: cut off at the cap."""
    registry = ToolRegistry([default_registry().get("web_search")])
    with DuckDuckGoFixture(huge_bytes=300 * 1024 * 1024) as site:
        ctx = make_context(
            [tool_call("web_search", {"query": query}, "q1"), "That page was too big."],
            registry=registry,
            **site.settings_overrides(),
        )
        result = await run_turn(ctx, "s1", "search it")
    assert result.answer == "That page was too big."
    assert result.seconds < 5
    (seen,) = tool_messages(ctx)
    assert "the result page is larger than 2 MB" in seen.content
