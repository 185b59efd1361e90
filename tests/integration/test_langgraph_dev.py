"""``langgraph dev`` serves Companion (app.studio via langgraph.json): a real Agent Server
in a subprocess, driven with LangGraph's SDK as Studio and agent-chat-ui drive it, against
the fake OpenAI-compatible endpoint. A thread run with the messages convention answers
through the app's graph, its messages land in the person's store as one chat the app's
sidebar lists, the drawn graph is the card's, and a streamed run shows the tool step and
the guard as the subgraph's updates."""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_sync_client
from langgraph_sdk.client import SyncLangGraphClient

from app.chat_handlers import session_rows
from memory.sqlite.async_store import AsyncSqliteStore
from tests.support.fake_openai import FakeOpenAIServer, Step

ROOT = Path(__file__).resolve().parents[2]
LANGGRAPH = ROOT / ".venv" / "bin" / "langgraph"
START_SECONDS = 120


class Served:
    """The dev server, its person's home and the fake model endpoint behind it."""

    def __init__(self, url: str, home: Path, model: FakeOpenAIServer) -> None:
        self.url, self.home, self.model = url, home, model
        self.client: SyncLangGraphClient = get_sync_client(url=url, timeout=60)

    def ask(self, thread_id: str, text: str) -> dict[str, Any]:
        """A run of the thread with the messages convention; the thread's values after."""
        done = self.client.runs.wait(
            thread_id, "companion", input={"messages": [{"role": "user", "content": text}]}
        )
        assert isinstance(done, dict)
        return done

    def sessions(self) -> list[dict[str, str]]:
        """The app's sidebar rows for the person's store."""
        store = AsyncSqliteStore.open_home(self.home)
        try:
            return session_rows(asyncio.run(store.list_sessions()), "UTC")
        finally:
            asyncio.run(store.close())

    def messages(self, session_id: str) -> list[tuple[str, str]]:
        store = AsyncSqliteStore.open_home(self.home)
        try:
            return [(m.role, m.content) for m in asyncio.run(store.messages(session_id))]
        finally:
            asyncio.run(store.close())


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    if not LANGGRAPH.exists():
        pytest.fail("langgraph-cli is not installed: scripts/bootstrap test installs it")
    work = tmp_path_factory.mktemp("langgraph-dev")  # the server's own files go here
    home, port = work / "home", _free_port()
    with FakeOpenAIServer(default="Hello from the fake model.") as model:
        env = {
            **os.environ,
            "COMPANION_HOME": str(home),
            "COMPANION_PROVIDER": "openai-compatible",
            "COMPANION_BASE_URL": model.url,
            "COMPANION_CHAT_MODEL": "fake-model",
            "COMPANION_EMBEDDING_MODEL": "off",
            "LANGGRAPH_CLI_NO_ANALYTICS": "1",
            "LANGSMITH_TRACING": "false",
            "PYTHONPATH": str(ROOT),
        }
        port_args = ["--port", str(port), "--config", str(ROOT / "langgraph.json")]
        log = (work / "server.log").open("w")
        server = subprocess.Popen(
            [str(LANGGRAPH), "dev", "--no-browser", "--no-reload", "--allow-blocking", *port_args],
            cwd=work,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        url = f"http://127.0.0.1:{port}"
        try:
            _wait_until_up(url, server, work / "server.log")
            yield Served(url, home, model)
        finally:
            server.terminate()
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                server.kill()
            log.close()


def _wait_until_up(url: str, server: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(f"langgraph dev exited: {log.read_text()[-2000:]}")
        try:
            if httpx.get(f"{url}/ok", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    pytest.fail(f"langgraph dev did not answer in {START_SECONDS} s: {log.read_text()[-2000:]}")


def test_a_thread_answers_and_is_a_chat_in_the_app(served: Served) -> None:
    thread = served.client.threads.create()["thread_id"]
    first = served.ask(thread, "Hi there, I'm testing Studio")
    assert first["messages"][-1]["content"] == "Hello from the fake model."
    chat = first["session_id"]
    rows = served.sessions()
    assert [row["title"] for row in rows if row["id"] == chat] == ["Hi there, I'm testing Studio"]
    second = served.ask(thread, "And once more")
    assert second["session_id"] == chat  # the thread goes on in the same chat
    assert [m["type"] for m in second["messages"]] == ["human", "ai", "human", "ai"]
    assert served.messages(chat) == [
        ("user", "Hi there, I'm testing Studio"),
        ("assistant", "Hello from the fake model."),
        ("user", "And once more"),
        ("assistant", "Hello from the fake model."),
    ]


def test_the_served_graph_is_the_card(served: Served) -> None:
    assistant = served.client.assistants.search(graph_id="companion")[0]["assistant_id"]
    drawn = served.client.assistants.get_graph(assistant, xray=True)
    nodes = {node["id"] for node in drawn["nodes"]}
    assert {"companion:build_context", "companion:call_model", "companion:execute_tool"} <= nodes
    guards = {
        (edge["source"], edge["target"], edge.get("data"))
        for edge in drawn["edges"]
        if edge.get("conditional")
    }
    assert ("companion:execute_tool", "companion:cap_nudge", "loop_cap") in guards
    assert ("companion:call_model", "companion:repeat_nudge", "repeat") in guards


def test_a_streamed_run_shows_the_tool_step_and_the_guard(served: Served) -> None:
    call = ("memory_search", '{"query": "favourite tea"}')
    served.model.push(Step(tool_calls=[call]), Step(tool_calls=[call]), "I couldn't find your tea.")
    thread = served.client.threads.create()["thread_id"]
    events = list(
        served.client.runs.stream(
            thread,
            "companion",
            input={"messages": [{"role": "user", "content": "What tea do I like?"}]},
            stream_mode=["messages", "updates"],
            stream_subgraphs=True,
        )
    )
    steps = [
        name
        for event in events
        if event.event.startswith("updates|companion")
        for name in event.data or {}
    ]
    assert steps[:4] == ["build_context", "call_model", "execute_tool", "build_context"]
    assert "repeat_nudge" in steps  # the same call again: the guard edge, as an update
    tokens = [e for e in events if e.event.startswith("messages")]
    assert tokens, "the answer streams as messages"
    final = served.client.threads.get_state(thread)["values"]
    assert final["messages"][-1]["content"] == "I couldn't find your tea."
