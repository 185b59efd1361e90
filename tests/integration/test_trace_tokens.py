"""A turn through the real ChatOpenAI path keeps the tokens the provider reported with its
answer (issue 25, item 6): the fake endpoint reports usage when the stream asks for it,
and the Graph tab's kept trace sums it over the turn's model calls."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from config.settings import Settings
from graph.runner import run_turn
from graph.setup import context_for
from memory.sqlite.async_store import AsyncSqliteStore
from tests.support.fake_openai import FakeOpenAIServer, Step
from tools.registry import ToolRegistry


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


async def test_the_kept_trace_has_the_tokens_of_each_model_call(
    server: FakeOpenAIServer, home: Path, test_registry: ToolRegistry
) -> None:
    server.push(Step(tool_calls=[("echo", '{"text": "hi"}')]), "It said hi.")
    settings = Settings(
        home=home,
        provider="openai-compatible",
        base_url=server.url,
        api_key="sk-test",
        chat_model="fake-model",
        tool_mode="native",
        embedding_model="off",
    )
    store = AsyncSqliteStore.open_home(home)
    try:
        ctx = context_for(settings, store, registry=test_registry)
        result = await run_turn(ctx, "s1", "echo hi")
        assert result.answer == "It said hi."
        kept = await store.turn_trace(result.answer_message_id or 0)
    finally:
        await store.close()
    assert kept is not None
    calls = [e["detail"]["tokens"] for e in kept["entries"] if e["kind"] == "model"]
    assert calls == [{"input": 10, "output": 5}, {"input": 10, "output": 5}]
    assert kept["tokens"] == {"input": 20, "output": 10}
    assert kept["models"] == ["fake-model"]
    assert "echo" in [t["function"]["name"] for t in kept["prompts"][0]["tools"]]
