"""The embedded local model: llama.cpp's server with the bundled SmolLM2 GGUF, for real.

The server is the environment's chosen engine (the prebuilt xllamacpp unless bootstrap
fell back to the compiled one); tests/integration/test_local_engine.py covers the choice.

Started once for the module on a free loopback port, reached through the same
ChatOpenAI path as any endpoint, stopped at the end. Also drives the real CLI.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from app.cli import BANNER_LOCAL
from config.settings import load_settings
from graph.runner import run_turn
from graph.setup import context_for
from memory.sqlite.async_store import AsyncSqliteStore
from memory.sqlite.store import SqliteStore
from providers import (
    LocalServer,
    ProviderError,
    lazy_local_model,
    local_model_path,
    local_server,
)
from providers.llama_server import COMPILED, PREBUILT, Engine
from providers.local_smoke import FALLBACK_HINT, REBUILD_HINT, describe_exit, run_smoke

pytestmark = pytest.mark.local_model


@pytest.fixture(scope="module")
def server() -> Iterator[LocalServer]:
    running = local_server()
    running.ensure()
    yield running
    running.stop()


def test_bundled_model_file_is_found() -> None:
    path = local_model_path()
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert path.stat().st_size > 50_000_000


def test_server_is_health_checked_on_loopback(server: LocalServer) -> None:
    assert server.url is not None and server.url.startswith("http://127.0.0.1:")
    response = httpx.get(f"{server.url}/models", timeout=5, trust_env=False)
    assert response.status_code == 200


async def test_a_turn_through_the_graph(server: LocalServer, tmp_path: Path) -> None:
    settings = load_settings({"home": str(tmp_path)}, {}, {})
    assert settings.is_local and settings.tool_mode == "commands"
    ctx = context_for(settings, AsyncSqliteStore.open_home(tmp_path))
    result = await run_turn(ctx, "s1", "Hi! Say hello back in one short sentence.")
    assert result.answer.strip()
    stored = ctx.store.blocking.messages("s1")
    assert stored[0].role == "user" and stored[-1].role == "assistant"
    assert not stored[-1].meta.get("error"), stored[-1].content
    models = [e["detail"]["model"] for e in result.trace if e["kind"] == "model"]
    assert models and all("SmolLM2" in m for m in models)


def test_cli_one_shot_prints_banner_and_answer(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COMPANION_", "OPENROUTER_"))}
    env["COMPANION_HOME"] = str(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "app.cli", "chat", "-m", "What is 2+2?"],
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert BANNER_LOCAL in done.stderr
    assert done.stdout.strip()
    store = SqliteStore.open_home(tmp_path)
    session = store.list_sessions()[0]
    assert store.messages(session.id)[0].role == "user"


def _kill_local_server() -> int:
    """SIGKILL the running local server, as a crash or the OOM killer would; its pid."""
    server = local_server()
    server.ensure()
    assert server.process is not None
    pid = server.process.pid
    os.kill(pid, signal.SIGKILL)
    server.process.wait(timeout=10)
    return pid


async def test_server_killed_between_turns_is_restarted(tmp_path: Path) -> None:
    settings = load_settings({"home": str(tmp_path)}, {}, {})
    ctx = context_for(settings, AsyncSqliteStore.open_home(tmp_path))
    for turn in ("Say hi.", "Say hi again."):
        killed = _kill_local_server()
        result = await run_turn(ctx, "s1", turn)
        answer = ctx.store.blocking.get_message(result.answer_message_id)
        assert answer is not None and not answer.meta.get("error"), answer.content
        process = local_server().process
        assert process is not None and process.pid != killed and process.poll() is None


async def test_server_killed_mid_answer_is_named_in_the_error(tmp_path: Path) -> None:
    settings = load_settings({"home": str(tmp_path)}, {}, {})
    model = lazy_local_model(settings)
    server = local_server()
    _kill_local_server()  # a fresh port: pooled connections belong to earlier event loops
    chunks = 0
    with pytest.raises(ProviderError) as caught:
        async for _ in model.astream("Count from one to two hundred, in words."):
            chunks += 1
            if chunks == 1:
                assert server.process is not None
                os.kill(server.process.pid, signal.SIGKILL)
    message = str(caught.value)
    assert "the local model server stopped (signal 9)" in message
    assert f"its log is at {server.log_path}" in message


def test_server_that_exits_on_start_quotes_its_log(tmp_path: Path) -> None:
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"not a gguf file at all")
    server = LocalServer(broken)
    server.log_dir = tmp_path
    with pytest.raises(ProviderError) as caught:
        server.ensure(timeout=120)
    message = str(caught.value)
    assert "the local model server stopped (exit status" in message
    assert str(server.log_path) in message
    tail = server.log_tail().splitlines()[-1]
    assert tail and tail in message


def test_smoke_test_generates_tokens() -> None:
    result = run_smoke()
    assert result.ok, result.detail
    assert result.detail


@pytest.mark.parametrize(("engine", "fix"), [(COMPILED, REBUILD_HINT), (PREBUILT, FALLBACK_HINT)])
def test_smoke_test_names_a_crash_and_its_fix(engine: Engine, fix: str) -> None:
    crash = "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"
    result = run_smoke(child=crash, engine=engine)
    assert not result.ok and result.cause == "signal 11 (SIGSEGV)"
    assert "died while generating (signal 11 (SIGSEGV))" in result.detail
    assert fix in result.detail
    assert "GGML_NATIVE=OFF" in REBUILD_HINT and "falls back to compiling" in FALLBACK_HINT
    assert describe_exit(3) == "exit status 3"


async def test_two_sessions_asking_at_once_both_get_whole_answers(tmp_path: Path) -> None:
    """One local server serves every session: a second request waits rather than cutting
    the first answer off (llama-cpp-python interrupts by default)."""
    settings = load_settings({"home": str(tmp_path)}, {}, {})
    ctx = context_for(settings, AsyncSqliteStore.open_home(tmp_path))
    _kill_local_server()  # a fresh port: pooled connections belong to earlier event loops
    results = await asyncio.gather(
        run_turn(ctx, "a", "Write four sentences about the sea."),
        run_turn(ctx, "b", "Write four sentences about the mountains."),
    )
    for result in results:
        answer = ctx.store.blocking.get_message(result.answer_message_id)
        assert answer is not None and not answer.meta.get("error"), answer.content
