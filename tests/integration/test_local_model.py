"""The embedded local model: llama.cpp's server with the bundled SmolLM2 GGUF, for real.

Started once for the module on a free loopback port, reached through the same
ChatOpenAI path as any endpoint, stopped at the end. Also drives the real CLI.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from graph.context import load_settings
from graph.models import LOCAL_BANNER, LocalServer, local_model_path, local_server
from graph.runner import run_turn
from graph.setup import context_for
from memory.store import Store

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
    ctx = context_for(settings, Store.open_home(tmp_path))
    result = await run_turn(ctx, "s1", "Hi! Say hello back in one short sentence.")
    assert result.answer.strip()
    stored = ctx.store.messages("s1")
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
    assert LOCAL_BANNER in done.stderr
    assert done.stdout.strip()
    store = Store.open_home(tmp_path)
    session = store.list_sessions()[0]
    assert store.messages(session.id)[0].role == "user"
