"""What a tracer (LANGSMITH_TRACING) receives from a turn: a readable tree.

A recording tracer, hooked in as LangSmith's is (an inheritable configure hook: every
callback manager of the turn gets it), takes every run of a real turn through the
ChatOpenAI path against the fake endpoint, with a tool call: the turn, each node, the
model call and the tool carry their names and the tags of the chat (by id) and the tool
mode, and no API key is in any traced payload."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextvars import ContextVar
from pathlib import Path

import pytest
from langchain_core.tracers.base import BaseTracer
from langchain_core.tracers.context import register_configure_hook
from langchain_core.tracers.schemas import Run

from config.settings import Settings
from graph.runner import run_turn
from graph.setup import context_for
from memory.sqlite.async_store import AsyncSqliteStore
from tests.support.fake_openai import FakeOpenAIServer, Step
from tools.registry import ToolRegistry

KEY = "sk-test-0123456789-never-traced"


class Recorder(BaseTracer):
    """Keeps every finished root run, with its tree of child runs."""

    def __init__(self) -> None:
        super().__init__()
        self.traced_runs: list[Run] = []

    def _persist_run(self, run: Run) -> None:
        self.traced_runs.append(run)


RECORDER: ContextVar[Recorder | None] = ContextVar("test_trace_recorder", default=None)
register_configure_hook(RECORDER, inheritable=True)  # as LANGSMITH_TRACING's tracer is


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


def every_run(runs: list[Run]) -> list[Run]:
    """The collected root runs and all their descendants."""
    found, todo = [], list(runs)
    while todo:
        run = todo.pop()
        found.append(run)
        todo.extend(run.child_runs)
    return found


@pytest.mark.parametrize("mode", ["native", "commands"])
async def test_a_turns_runs_are_named_and_tagged_and_carry_no_key(
    server: FakeOpenAIServer, home: Path, test_registry: ToolRegistry, mode: str
) -> None:
    call = (
        Step(tool_calls=[("echo", '{"text": "hi"}')])
        if mode == "native"
        else Step(content='/echo {"text": "hi"}')
    )
    server.push(call, "It said hi.")
    settings = Settings(
        home=home,
        provider="openai-compatible",
        base_url=server.url,
        api_key=KEY,
        chat_model="fake-model",
        tool_mode=mode,  # type: ignore[arg-type]
        embedding_model="off",
    )
    ctx = context_for(settings, AsyncSqliteStore.open_home(home), registry=test_registry)
    collected = Recorder()
    hooked = RECORDER.set(collected)
    try:
        result = await run_turn(ctx, "chat-1", "echo hi, please")
    finally:
        RECORDER.reset(hooked)
    assert result.answer == "It said hi."
    runs = every_run(collected.traced_runs)
    names = [run.name for run in runs]
    assert "companion turn" in names
    assert {"build_context", "call_model", "execute_tool"} <= set(names)
    assert names.count("chat model") == 2 and names.count("echo") == 1
    for run in runs:
        assert {"chat:chat-1", f"tool_mode:{mode}"} <= set(run.tags or []), run.name
        assert (run.extra or {}).get("metadata", {}).get("chat_id") == "chat-1", run.name
    tool = next(run for run in runs if run.name == "echo")
    assert tool.run_type == "tool" and "tool:echo" in (tool.tags or [])
    assert tool.inputs == {"text": "hi"}
    model = next(run for run in runs if run.name == "chat model")
    assert model.run_type == "llm" and "model:chat" in (model.tags or [])
    payload = json.dumps([run.dict() for run in runs], default=str)
    assert KEY not in payload
    assert "echo hi, please" in payload  # the payloads are there: only the key is not
    sent = {h.get("authorization") or h.get("Authorization") for h in server.headers}
    assert sent == {f"Bearer {KEY}"}  # the key went where it belongs, and only there
