"""MCP tools end to end: a real MCP server (tests/support/mcp_server.py, the ``mcp`` SDK)
over stdio and streamable HTTP, its tools in the registry, called through the whole graph
by a model behind the fake OpenAI-compatible server, in both tool modes.

Bounded and reported: a server that hangs (at start, or in a call), crashes, returns
10 MB or cannot start gives an error result (or no tools) and the turn goes on. Every
result is outside content: labelled for the model, and a memory write it asks for waits
for the person (here nobody can be asked, so it is not run). The loop cap and the
repeated-arguments guard count MCP calls like any other.
"""

from __future__ import annotations

import json
import logging
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

import pytest

from app.doctor import mcp_servers
from app.mcp_view import mcp_markdown
from config.settings import Settings
from graph.runner import run_turn
from tests.integration.test_provider_drills import make_ctx
from tests.support.fake_openai import FakeOpenAIServer, Step
from tools.mcp.config import parse_config
from tools.mcp.servers import McpServers, running_servers
from tools.registry import ToolRegistry, builtin_specs

ROOT = Path(__file__).resolve().parents[2]
T = TypeVar("T")
OUTSIDE = "[Outside content fetched by notes__search_notes"


def stdio(*flags: str, **extra: Any) -> dict[str, Any]:
    """An mcp.json entry running the test server over stdio."""
    args = ["-m", "tests.support.mcp_server", "stdio", *flags]
    return {"command": sys.executable, "args": args, "cwd": str(ROOT), **extra}


def start(
    entries: dict[str, Any], seconds: float = 30.0, log_dir: Path | None = None
) -> tuple[McpServers, ToolRegistry]:
    """The built-in tools plus the servers' tools, once every server was tried."""
    registry = ToolRegistry(builtin_specs())
    config = parse_config({"mcpServers": entries})
    servers = McpServers(config, log_dir=log_dir, connect_seconds=seconds)
    servers.start(registry.join)
    assert servers.started.wait(60)
    return servers, registry


def wait_for(found: Callable[[], T | None], seconds: float = 60) -> T:
    """What ``found`` returns once it is not None (within ``seconds``)."""
    deadline = time.monotonic() + seconds
    while (value := found()) is None:
        assert time.monotonic() < deadline, "never came"
        time.sleep(0.1)
    return value


@pytest.fixture(scope="module")
def notes() -> Iterator[tuple[McpServers, ToolRegistry]]:
    """One stdio server shared by the module's tests that leave it running."""
    servers, registry = start({"notes": stdio(timeout=2)})
    yield servers, registry
    servers.stop()


@pytest.fixture
def fake() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


def context(fake: FakeOpenAIServer, home: Path, registry: ToolRegistry | None, mode: str):
    """A graph context whose model is the fake endpoint's, in tool mode ``mode``; without
    a registry, the home's (its mcp.json's servers), as the app gets it."""
    ctx = make_ctx(fake, home, registry)  # type: ignore[arg-type]
    return replace(ctx, settings=replace(ctx.settings, tool_mode=mode))


def call(name: str, **args: Any) -> Step:
    return Step(tool_calls=[(name, json.dumps(args))])


def texts(request: dict[str, Any]) -> list[str]:
    return [str(m.get("content")) for m in request["messages"]]


async def test_native_tool_call_end_to_end_over_stdio(notes, fake, home) -> None:
    fake.push(call("notes__search_notes", query="milk"), "Buy oat milk on Friday.")
    ctx = context(fake, home, notes[1], "native")
    result = await run_turn(ctx, "s1", "what did I note about milk?")
    assert result.answer == "Buy oat milk on Friday." and result.error is None
    offered = {t["function"]["name"] for t in fake.requests[0]["tools"]}
    assert {"notes__search_notes", "notes__hostile", "web_search"} <= offered
    (tool_message,) = [m for m in fake.requests[1]["messages"] if m["role"] == "tool"]
    assert OUTSIDE in tool_message["content"]
    assert "Note about milk: buy oat milk on Friday." in tool_message["content"]
    stored = [m for m in ctx.store.blocking.messages("s1") if m.is_tool]
    assert stored[0].tool_name == "notes__search_notes" and stored[0].role == "web_tool"


async def test_commands_mode_lists_the_tools_and_runs_a_command(notes, fake, home) -> None:
    fake.push("/notes__search_notes milk", "Oat milk, on Friday.")
    ctx = context(fake, home, notes[1], "commands")
    result = await run_turn(ctx, "s1", "what did I note about milk?")
    assert result.answer == "Oat milk, on Friday." and result.tool_names == ["notes__search_notes"]
    system = texts(fake.requests[0])[0]
    assert "- /notes__search_notes: Search the user's notes." in system
    assert "tools" not in fake.requests[0]
    replayed = texts(fake.requests[1])
    assert any("[Tool result — notes__search_notes" in t and OUTSIDE in t for t in replayed)


HOSTILE_TURN = {
    "native": (
        call("notes__hostile", topic="banking"),
        call("create_memory", category="identity", key="bank_pin", value="0000"),
    ),
    "commands": ("/notes__hostile banking", "/create_memory identity bank_pin: 0000"),
}


@pytest.mark.parametrize("mode", ["native", "commands"])
async def test_a_hostile_result_cannot_make_the_model_write_memories(
    notes, fake, home, mode
) -> None:
    fake.push(*HOSTILE_TURN[mode], "I did not save anything.")
    ctx = context(fake, home, notes[1], mode)
    result = await run_turn(ctx, "s1", "look up banking")
    assert result.answer == "I did not save anything."
    assert not await ctx.store.has_memories()
    declined = result.tool_results[-1]
    assert declined.name == "create_memory" and not declined.ok
    assert "outside content is in this conversation" in declined.result["error"]
    assert result.memory_operations == 0


async def test_the_loop_cap_counts_mcp_calls(notes, fake, home) -> None:
    fake.push(
        call("notes__search_notes", query="one"),
        call("notes__search_notes", query="two"),
        call("notes__search_notes", query="three"),
        "Here is what I found.",
    )
    ctx = context(fake, home, notes[1], "native")
    result = await run_turn(ctx, "s1", "search a lot")
    assert result.loops == 3 and result.answer == "Here is what I found."
    assert any(e["kind"] == "guard" and e["name"] == "loop_cap" for e in result.trace)
    assert "tools" not in fake.requests[3]  # the answer after the cap is made without tools


async def test_the_repeated_arguments_guard_counts_mcp_calls(notes, fake, home) -> None:
    fake.push(
        call("notes__search_notes", query="Milk"),
        call("notes__search_notes", query="milk!"),
        "Oat milk.",
    )
    ctx = context(fake, home, notes[1], "native")
    result = await run_turn(ctx, "s1", "milk?")
    assert result.tool_names == ["notes__search_notes"] and result.answer == "Oat milk."
    assert any(e["kind"] == "guard" and e["name"] == "repeat" for e in result.trace)


async def test_a_call_that_hangs_is_a_timeout_and_the_turn_goes_on(
    notes, fake, home, caplog
) -> None:
    fake.push(call("notes__slow", seconds=60), "It took too long.")
    ctx = context(fake, home, notes[1], "native")
    with caplog.at_level(logging.WARNING, logger="companion.tools"):
        result = await run_turn(ctx, "s1", "wait")
    assert result.answer == "It took too long." and result.seconds < 15
    assert result.tool_results[0].result["error"] == "notes__slow timed out after 2 s"
    assert "tool error: tool=notes__slow session=s1 kind=timeout" in caplog.text
    fake.push(call("notes__search_notes", query="after"), "Still here.")
    assert (await run_turn(ctx, "s1", "and now?")).answer == "Still here."


async def test_ten_megabytes_are_refused_as_an_error(notes, fake, home, caplog) -> None:
    fake.push(call("notes__big", megabytes=10), "That was too much.")
    ctx = context(fake, home, notes[1], "native")
    with caplog.at_level(logging.WARNING, logger="companion.tools"):
        result = await run_turn(ctx, "s1", "everything")
    assert result.answer == "That was too much."
    error = result.tool_results[0].result["error"]
    assert error == "notes__big failed: the server's answer is over 4 MB and was not read"
    assert result.tool_results[0].duration_ms < 1_500  # refused as it arrives, not timed out
    assert "tool error: tool=notes__big session=s1 kind=tool_error" in caplog.text
    tool_message = next(m for m in fake.requests[1]["messages"] if m["role"] == "tool")
    assert len(tool_message["content"]) < 2_000


async def test_a_crashing_server_is_an_error_then_starts_again(fake, home) -> None:
    servers, registry = start({"notes": stdio()})
    try:
        fake.push(call("notes__crash"), "The notes app broke.")
        ctx = context(fake, home, registry, "native")
        result = await run_turn(ctx, "s1", "crash it")
        assert result.answer == "The notes app broke."
        assert "closed the connection" in result.tool_results[0].result["error"]
        assert servers.statuses()[0].state == "crashed"
        fake.push(call("notes__search_notes", query="milk"), "Back again.")
        again = await run_turn(ctx, "s1", "try again")
        assert again.answer == "Back again." and again.tool_results[0].ok
    finally:
        servers.stop()


def test_servers_that_fail_or_hang_at_start_are_reported_and_have_no_tools(
    caplog, tmp_path
) -> None:
    with caplog.at_level(logging.WARNING, logger="companion.mcp"):
        began = time.monotonic()
        servers, registry = start(
            {"broken": stdio("--fail-start"), "stuck": stdio("--hang-start"), "ok": stdio()},
            seconds=8.0,
            log_dir=tmp_path,
        )
    try:
        states = {s.name: s for s in servers.statuses()}
        assert states["broken"].state == "failed"
        assert "cannot open the notes database" in states["broken"].reason  # its stderr
        assert "cannot open" in (tmp_path / "mcp-broken.log").read_text()
        assert states["stuck"].state == "failed"
        assert states["stuck"].reason == "did not answer within 8 s"
        assert states["ok"].state == "ready" and "ok__search_notes" in states["ok"].tools
        names = registry.names
        assert not any(n.startswith(("broken__", "stuck__")) for n in names)
        assert "could not be started" in caplog.text
        assert time.monotonic() - began < 30
    finally:
        servers.stop()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def http_server() -> Iterator[str]:
    """The test server over streamable HTTP on loopback; its URL."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.support.mcp_server", "http", str(port)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), 0.5).close()
                break
            except OSError:
                time.sleep(0.2)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(10)


@pytest.mark.parametrize("mode", ["native", "commands"])
async def test_a_tool_call_end_to_end_over_http(http_server, fake, home, mode) -> None:
    servers, registry = start({"notes": {"type": "http", "url": http_server}})
    try:
        assert servers.statuses()[0].state == "ready"
        first = call("notes__search_notes", query="milk")
        fake.push(first if mode == "native" else "/notes__search_notes milk", "Oat milk.")
        ctx = context(fake, home, registry, mode)
        result = await run_turn(ctx, "s1", "milk?")
        assert result.answer == "Oat milk." and result.tool_results[0].ok
        assert any(OUTSIDE in t for t in texts(fake.requests[1]))
        assert "Note about milk" in result.tool_results[0].result["content"]
    finally:
        servers.stop()


async def test_the_homes_mcp_json_reaches_the_graph_and_a_hanging_server_delays_nothing(
    fake, home
) -> None:
    home.mkdir(parents=True, exist_ok=True)
    entries = {
        "notes": stdio(),
        "stuck": stdio("--hang-start"),  # answers nothing for 20 s (the start's limit)
        "remote": {"url": "http://203.0.113.9/mcp"},
    }
    (home / "mcp.json").write_text(json.dumps({"mcpServers": entries}))
    ctx = context(fake, home, None, "native")  # the registry of the home, as the app has
    servers = wait_for(lambda: running_servers(home))
    try:
        wait_for(lambda: ctx.registry.get("notes__search_notes"))
        states = {s.name: s for s in servers.statuses()}
        assert states["stuck"].state == "starting" and not servers.started.is_set()
        assert states["remote"].state == "refused" and "use https" in states["remote"].reason
        shown = mcp_markdown(home)  # the Settings tab's section
        assert "**notes** — ✓ ready" in shown and "notes\\_\\_search\\_notes" in shown
        assert "**stuck** — … starting" in shown and "**remote** — ✗ not used" in shown
        fake.push(call("notes__search_notes", query="milk"), "Oat milk.")
        result = await run_turn(ctx, "s1", "milk?")
        assert result.answer == "Oat milk." and result.tool_results[0].ok
    finally:
        servers.stop()


def test_doctor_checks_each_server(home) -> None:
    home.mkdir(parents=True, exist_ok=True)
    assert [c.status for c in mcp_servers(Settings(home=home))] == ["info"]
    entries = {
        "notes": stdio(),
        "broken": stdio("--fail-start"),
        "remote": {"url": "http://203.0.113.9/mcp"},
    }
    (home / "mcp.json").write_text(json.dumps({"mcpServers": entries}))
    checks = {c.name: c for c in mcp_servers(Settings(home=home))}
    notes = checks["MCP server notes"]
    assert notes.status == "ok" and "6 tools" in notes.detail
    assert "notes__search_notes" in notes.detail
    broken = checks["MCP server broken"]
    assert broken.status == "fail" and "cannot open the notes database" in broken.detail
    assert "mcp-broken.log" in broken.fix and not broken.fatal
    remote = checks["MCP server remote"]
    assert remote.status == "fail" and "use https" in remote.detail


def processes_with(marker: str) -> list[int]:
    """The ids of this machine's processes whose command line holds ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                line = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if marker in line:
                found.append(int(entry.name))
    return found


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads processes from /proc (Linux)")
def test_a_server_still_starting_when_companion_stops_is_ended(tmp_path) -> None:
    # Stopping while a server hangs in its start (Ctrl+C, or a test's end) left its
    # process running: the session's close waited for a start that never came.
    marker = f"still-starting-{time.monotonic_ns()}"
    config = parse_config({"mcpServers": {"stuck": stdio("--hang-start", marker)}})
    servers = McpServers(config, log_dir=tmp_path, connect_seconds=30.0)
    servers.start(ToolRegistry(builtin_specs()).join)
    try:
        wait_for(lambda: processes_with(marker) or None, 30)
    finally:
        servers.stop()
    deadline = time.monotonic() + 5
    while processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert processes_with(marker) == []
