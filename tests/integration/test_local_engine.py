"""The local model's engines: the prebuilt xllamacpp by default, the compiled
llama-cpp-python where the prebuilt one fails its smoke test, and real requests through
the prebuilt engine's server (the OpenAI-compatible HTTP path the app uses).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from providers import LocalServer, ProviderError
from providers.llama_server import COMPILED, PREBUILT, chosen_engine, server_command
from providers.local_smoke import NEEDS_COMPILE, choose_engine

pytestmark = pytest.mark.local_model

# An xllamacpp that dies as a wheel built for instructions this CPU lacks would (SIGILL).
DYING_ENGINE = "import os, signal\nos.kill(os.getpid(), signal.SIGILL)\n"
FALLBACK_LINE = (
    "! the prebuilt llama.cpp (xllamacpp) failed on this CPU (signal 4 (SIGILL)); "
    "compiling llama-cpp-python portably instead (about 5 minutes on 2 cores)"
)
WEATHER = {
    "type": "function",
    "function": {
        "name": "weather",
        "description": "The weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "maxLength": 80}},
            "required": ["city"],
        },
    },
}


@pytest.fixture
def failing_prebuilt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A PYTHONPATH whose xllamacpp dies on import; the path --choose records to."""
    fake = tmp_path / "fake" / "xllamacpp"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text(DYING_ENGINE)
    paths = [str(fake.parent), os.environ.get("PYTHONPATH", "")]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in paths if p))
    return tmp_path / "companion-llama-engine"


def test_a_failing_prebuilt_engine_falls_back_to_the_compiled_one(failing_prebuilt: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "providers.local_smoke", "--choose", "--record", failing_prebuilt],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == NEEDS_COMPILE, done.stderr
    assert done.stderr.strip().splitlines() == [FALLBACK_LINE]
    assert failing_prebuilt.read_text().strip() == COMPILED
    assert chosen_engine(failing_prebuilt) == COMPILED
    command = server_command(chosen_engine(failing_prebuilt), Path("m.gguf"), 8080, 512)
    assert command[1:3] == ["-m", "llama_cpp.server"]
    # one server for every session: a second request waits, it never cuts the first off
    assert command[command.index("--interrupt_requests") + 1] == "False"


def test_the_prebuilt_engine_passes_its_smoke_test_and_is_recorded(tmp_path: Path) -> None:
    record = tmp_path / "companion-llama-engine"
    engine, line = choose_engine(record)
    assert engine == PREBUILT and line.startswith("✓ local model smoke test (xllamacpp")
    assert chosen_engine(record) == PREBUILT
    assert chosen_engine(tmp_path / "never-written") == PREBUILT  # installed: the default
    command = server_command(PREBUILT, Path("m.gguf"), 8080, 512)
    assert command[1:3] == ["-m", "providers.llama_engine"]


@pytest.fixture(scope="module")
def prebuilt(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalServer]:
    server = LocalServer(engine=PREBUILT)
    server.log_dir = tmp_path_factory.mktemp("logs")
    server.ensure()
    yield server
    server.stop()


def chat(server: LocalServer, **body: Any) -> httpx.Response:
    assert server.url is not None
    body = {"model": "smollm2", "max_tokens": 32, "temperature": 0, **body}
    return httpx.post(f"{server.url}/chat/completions", json=body, timeout=120, trust_env=False)


def test_the_prebuilt_engine_answers_from_a_child_process(prebuilt: LocalServer) -> None:
    assert prebuilt.process is not None and prebuilt.process.pid != os.getpid()
    assert "providers.llama_engine" in prebuilt.process.args
    reply = chat(prebuilt, messages=[{"role": "user", "content": "What is the capital of France?"}])
    assert reply.status_code == 200, reply.text
    assert reply.json()["choices"][0]["message"]["content"].strip()


def test_native_tool_shapes_the_compiled_server_refused(prebuilt: LocalServer) -> None:
    """Streamed automatic tool choice, an assistant message with ``content: null`` and a
    ``tool`` message, and a schema with ``maxLength``: llama-cpp-python's server refused or
    died on each (issue 23); upstream's server answers them."""
    asked = {"role": "user", "content": "What's the weather in Paris?"}
    streamed = chat(prebuilt, messages=[asked], tools=[WEATHER], tool_choice="auto", stream=True)
    assert streamed.status_code == 200, streamed.text
    events = [line for line in streamed.text.splitlines() if line.startswith("data: ")]
    assert events[-1] == "data: [DONE]"
    assert json.loads(events[0][6:])["choices"]
    call = {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": "{}"}}
    history = [
        asked,
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": '{"temperature_c": 18}'},
    ]
    answered = chat(prebuilt, messages=history, tools=[WEATHER])
    assert answered.status_code == 200, answered.text
    assert prebuilt.process is not None and prebuilt.process.poll() is None


SYSTEM = "You are Companion, a friendly assistant. " * 40


def test_warming_loads_the_model_and_caches_the_system_prompt(tmp_path: Path) -> None:
    server = LocalServer(engine=PREBUILT)
    server.log_dir = tmp_path
    try:
        warming = server.warm(SYSTEM)
        seen_loading = False
        while warming.is_alive() and server.url is None:
            seen_loading = seen_loading or server.loading
            time.sleep(0.01)
        warming.join(timeout=180)
        assert seen_loading and not server.loading and server.url is not None
        first = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "Hello!"}]
        usage = chat(server, messages=first, max_tokens=4).json()["usage"]
        # everything up to the user's words came from the warming request's cache
        assert usage["prompt_tokens_details"]["cached_tokens"] >= usage["prompt_tokens"] - 8
    finally:
        server.stop()


def test_a_failed_warm_is_logged_and_the_first_message_says_why(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"not a gguf file at all")
    server = LocalServer(broken, engine=PREBUILT)
    server.log_dir = tmp_path
    server.warm(SYSTEM).join(timeout=180)
    warned = [r.getMessage() for r in caplog.records if r.name == "companion.local_server"]
    assert any(
        m.startswith("warming the local model failed: the local model server stopped")
        for m in warned
    ), warned
    with pytest.raises(ProviderError, match="its log is at"):
        server.ensure(timeout=60)
