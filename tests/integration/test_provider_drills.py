"""Provider failure drills through the real ChatOpenAI path against a loopback server.

Each failure gives a clear message, and the user's message and every completed tool
result are in the store; the app keeps working (the next turn succeeds).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from config.settings import Settings
from graph.events import Answer, TextDelta
from graph.runner import run_turn, stream_turn
from graph.setup import context_for
from memory.sqlite.async_store import AsyncSqliteStore
from tests.support.fake_openai import FakeOpenAIServer, Step
from tools.registry import ToolRegistry


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


def make_ctx(server: FakeOpenAIServer, home: Path, registry: ToolRegistry, **changes):
    settings = Settings(
        home=home,
        provider="openai-compatible",
        base_url=server.url,
        api_key="test-key",
        chat_model="fake-model",
        tool_mode="native",
        max_retries=changes.pop("max_retries", 0),
        request_timeout=changes.pop("request_timeout", 10.0),
        **changes,
    )
    return context_for(settings, AsyncSqliteStore.open_home(home), registry=registry)


async def test_streamed_answer_over_http(server, home, test_registry) -> None:
    server.push("Four, of course.")
    ctx = make_ctx(server, home, test_registry)
    events = [event async for event in stream_turn(ctx, "s1", "What is 2+2?")]
    assert isinstance(events[-1], Answer) and events[-1].text == "Four, of course."
    deltas = [e.text for e in events if isinstance(e, TextDelta)]
    assert len(deltas) > 1 and "".join(deltas) == "Four, of course."
    sent = server.requests[0]
    assert sent["stream"] is True
    assert {t["function"]["name"] for t in sent["tools"]} >= {"echo"}
    assert sent["messages"][-1] == {"role": "user", "content": "What is 2+2?"}


async def test_native_tool_call_over_http(server, home, test_registry) -> None:
    server.push(Step(tool_calls=[("echo", '{"text": "hi"}')]), "It said hi.")
    ctx = make_ctx(server, home, test_registry)
    result = await run_turn(ctx, "s1", "echo hi")
    assert result.tool_names == ["echo"]
    assert result.answer == "It said hi."
    replayed = server.requests[1]["messages"]
    assert replayed[-2]["tool_calls"][0]["function"]["name"] == "echo"
    assert replayed[-1]["role"] == "tool" and replayed[-1]["tool_call_id"] == "call_0"


async def test_rate_limit_is_retried(server, home, test_registry) -> None:
    server.push(Step(status=429), "Recovered.")
    ctx = make_ctx(server, home, test_registry, max_retries=2)
    result = await run_turn(ctx, "s1", "hello")
    assert result.answer == "Recovered."
    assert len(server.requests) == 2


@pytest.mark.parametrize(
    ("step", "expected"),
    [
        (Step(status=500), "HTTP 500"),
        (Step(delay=1.5), "timed out"),
        (Step(malformed=True), "couldn't reach the language model"),
        (Step(content="Half an ans", cut=True), "answer was cut off"),
    ],
    ids=["http-500", "timeout", "malformed-json", "stream-cut"],
)
async def test_provider_failure_is_clear_and_loses_nothing(
    server, home, test_registry, step, expected
) -> None:
    server.push(step)
    ctx = make_ctx(server, home, test_registry, request_timeout=0.5)
    result = await run_turn(ctx, "s1", "are you there?")
    assert expected in result.answer
    stored = ctx.store.blocking.messages("s1")
    assert stored[0].role == "user" and stored[0].content == "are you there?"
    assert stored[-1].meta.get("error") is True
    server.push("Back again.")
    assert (await run_turn(ctx, "s1", "retry")).answer == "Back again."


@pytest.mark.parametrize(
    ("status", "advice", "cause"),
    [
        (401, "refused the API key", "HTTP 401"),
        (403, "refused the API key", "HTTP 403"),
        (404, "Check the base URL and the chat model's name in Settings", "HTTP 404"),
        (400, "refused the request", "HTTP 400"),
        (500, "try again in a moment", "HTTP 500"),
        (503, "try again in a moment", "HTTP 503"),
    ],
)
async def test_chat_error_advice_matches_the_cause(
    server, home, test_registry, status, advice, cause
) -> None:
    server.push(Step(status=status))
    ctx = make_ctx(server, home, test_registry)
    result = await run_turn(ctx, "s1", "hello?")
    assert advice in result.answer and cause in result.answer
    if status in (401, 403, 404, 400):
        assert "try again in a moment" not in result.answer
        assert "couldn't reach" not in result.answer
    assert "test-key" not in result.answer


async def test_failure_after_a_tool_keeps_the_tool_result(server, home, test_registry) -> None:
    server.push(Step(tool_calls=[("echo", '{"text": "saved"}')]), Step(status=500))
    ctx = make_ctx(server, home, test_registry)
    result = await run_turn(ctx, "s1", "echo then fail")
    assert "HTTP 500" in result.answer
    roles = [m.role for m in ctx.store.blocking.messages("s1")]
    assert roles == ["user", "web_tool", "assistant"]
    assert ctx.store.blocking.messages("s1")[1].meta["result"]["echo"] == "saved"


async def test_tool_arguments_that_are_not_json(server, home, test_registry) -> None:
    server.push(Step(tool_calls=[("echo", "Tokyo please")]), "Sorry, let me try again later.")
    ctx = make_ctx(server, home, test_registry)
    result = await run_turn(ctx, "s1", "echo")
    tool = next(m for m in ctx.store.blocking.messages("s1") if m.is_tool)
    assert "malformed arguments for echo" in tool.meta["result"]["error"]
    assert result.answer == "Sorry, let me try again later."
