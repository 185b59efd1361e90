"""Two real ``companion`` processes on one database, in chromium: a turn started through
one is followed from the other after a reload (its answer so far is read back from the
store as it grows), and Stop pressed in the other process stops it.

The chat model is a loopback OpenAI-compatible server (``FakeOpenAIServer``) that streams
every answer slowly, so there is time to switch processes mid-answer.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from memory.store import Message, Store
from tests.e2e.harness import free_port, open_app, send
from tests.support.fake_openai import FakeOpenAIServer, Step

TIMEOUT_MS = 20_000
STORY = " ".join(f"tale{n}" for n in range(1, 41)) + " fin."
WORD_DELAY = 0.15  # about 6 s for STORY


@dataclass
class Processes:
    home: Path
    urls: tuple[str, str]


def _serve(home: Path, port: int, server: FakeOpenAIServer) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COMPANION_", "OPENROUTER_"))}
    env.update(
        COMPANION_HOME=str(home),
        COMPANION_BASE_URL=server.url,
        COMPANION_API_KEY="chat-key",
        COMPANION_CHAT_MODEL="fake-chat",
        COMPANION_TOOL_MODE="commands",
    )
    return subprocess.Popen(
        [sys.executable, "-m", "app.cli", "--port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _wait_until_serving(process: subprocess.Popen[str]) -> None:
    assert process.stdout is not None
    deadline = time.monotonic() + 60
    said: list[str] = []
    for line in process.stdout:
        if "Companion is running at" in line:
            return
        said.append(line)
        assert time.monotonic() < deadline, "the app did not start:\n" + "".join(said)
    raise AssertionError(f"the app exited with {process.wait()}:\n" + "".join(said))


@pytest.fixture(scope="module")
def processes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Processes]:
    home = tmp_path_factory.mktemp("processes") / "home"
    slow = Step(content=STORY, word_delay=WORD_DELAY)
    with FakeOpenAIServer(responder=lambda request: slow) as server:
        ports = (free_port(), free_port())
        started = [_serve(home, port, server) for port in ports]
        try:
            for process in started:
                _wait_until_serving(process)
            yield Processes(home, tuple(f"http://127.0.0.1:{port}/" for port in ports))  # type: ignore[arg-type]
        finally:
            for process in started:
                process.terminate()
            for process in started:
                process.wait(timeout=30)


def newest_chat(home: Path) -> list[Message]:
    store = Store.open_home(home)
    try:
        return store.messages(store.list_sessions()[0].id)
    finally:
        store.close()


def answer(page: Any) -> Any:
    return page.locator("#chatbot [data-testid='bot'] .message-content").last


def test_a_turn_started_in_one_process_is_followed_from_the_other(
    browser: Any, processes: Processes
) -> None:
    one = browser.new_context().new_page()
    open_app(one, processes.urls[0])
    one.locator("#new-session").click()
    send(one, "tell me a story")
    expect(answer(one)).to_contain_text("tale3", timeout=TIMEOUT_MS)
    one.context.close()  # the page goes away; the turn goes on in process one

    other = browser.new_context().new_page()
    open_app(other, processes.urls[1])
    expect(answer(other)).to_contain_text("tale", timeout=TIMEOUT_MS)  # the text so far
    expect(other.locator("#stop-turn")).to_be_visible()
    expect(answer(other)).to_have_text(STORY, timeout=TIMEOUT_MS)  # then the whole answer
    expect(other.locator("#stop-turn")).to_be_hidden()
    stored = newest_chat(processes.home)
    assert [(m.role, m.content) for m in stored] == [
        ("user", "tell me a story"),
        ("assistant", STORY),
    ]
    other.context.close()


def test_stop_in_the_other_process_stops_the_turn(browser: Any, processes: Processes) -> None:
    one = browser.new_context().new_page()
    open_app(one, processes.urls[0])
    one.locator("#new-session").click()
    send(one, "another story, please")
    expect(answer(one)).to_contain_text("tale3", timeout=TIMEOUT_MS)

    other = browser.new_context().new_page()
    open_app(other, processes.urls[1])
    expect(other.locator("#stop-turn")).to_be_visible(timeout=TIMEOUT_MS)
    other.locator("#stop-turn").click()
    expect(answer(one)).to_contain_text("Stopped", timeout=TIMEOUT_MS)
    expect(answer(other)).to_contain_text("Stopped", timeout=TIMEOUT_MS)
    stopped = newest_chat(processes.home)[-1]
    assert stopped.meta == {"stopped": True}
    assert stopped.content and STORY.startswith(stopped.content) and stopped.content != STORY
    one.context.close()
    other.context.close()
