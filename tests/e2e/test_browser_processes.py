"""Two real ``companion`` processes on one database, in chromium: a turn started through
one is followed from the other after a reload (its answer so far is read back from the
store as it grows), and Stop pressed in the other process stops it.

Every case runs on both backends: the home's SQLite file, and a Postgres database
(``tests.support.postgres.PostgresServer``, one per module, made by ``companion db
migrate``) that both processes reach through COMPANION_DATABASE_URL.

The chat model is a loopback OpenAI-compatible server (``FakeOpenAIServer``) that streams
every answer slowly. A test that must meet a turn still running in the other process
holds the answer after its first words (``Processes.held``) until it has seen what it
needs, so a page that loads slowly on a busy machine cannot miss it.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from graph.setup import OWNER
from memory import Message
from memory.sqlite.store import SqliteStore
from tests.e2e.harness import free_port, new_chat, open_app, send
from tests.support.fake_openai import FakeOpenAIServer, Step
from tests.support.postgres import PostgresServer

TIMEOUT_MS = 20_000
STORY = " ".join(f"tale{n}" for n in range(1, 41)) + " fin."
WORD_DELAY = 0.15  # about 6 s for STORY, unless held


def teller(going: threading.Event) -> Any:
    """The fake endpoint's answer: the story, held after its first words while ``going``
    is clear."""

    def told(request: dict[str, Any]) -> Step:
        return Step(content=STORY, word_delay=WORD_DELAY, hold=going)

    return told


@dataclass
class Processes:
    home: Path
    urls: tuple[str, str]
    database_url: str | None  # the Postgres database they share; None: the home's SQLite file
    going: threading.Event  # set: answers stream on; clear: they wait after their 6th word

    @contextmanager
    def held(self) -> Iterator[None]:
        """Answers started inside wait after their first words until the block ends (or
        a minute has passed): the turn is surely still running while the block checks."""
        self.going.clear()
        try:
            yield
        finally:
            self.going.set()


def _environment(**companion: str) -> dict[str, str]:
    """This environment without any Companion or OpenRouter setting, plus ``companion``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COMPANION_", "OPENROUTER_"))}
    env.update(companion)
    return env


def _migrated(server: PostgresServer) -> str:
    """Make the schema with ``companion db migrate`` as the admin; the app role's URL."""
    env = _environment(
        COMPANION_DATABASE_ADMIN_URL=server.admin_url, COMPANION_DATABASE_URL=server.url
    )
    done = subprocess.run(
        [sys.executable, "-m", "app.cli", "db", "migrate"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return server.url


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def database_url(request: pytest.FixtureRequest) -> Iterator[str | None]:
    """The processes' shared database: None for the home's SQLite file, or the URL of a
    migrated Postgres database (one server for the module's Postgres cases)."""
    if request.param == "sqlite":
        yield None
        return
    with PostgresServer() as server:
        yield _migrated(server)


def _serve(
    home: Path, port: int, server: FakeOpenAIServer, database_url: str | None
) -> subprocess.Popen[str]:
    env = _environment(
        COMPANION_HOME=str(home),
        COMPANION_BASE_URL=server.url,
        COMPANION_API_KEY="chat-key",
        COMPANION_CHAT_MODEL="fake-chat",
        COMPANION_TOOL_MODE="commands",
    )
    if database_url is not None:
        env["COMPANION_DATABASE_URL"] = database_url
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
def processes(
    tmp_path_factory: pytest.TempPathFactory, database_url: str | None
) -> Iterator[Processes]:
    home = tmp_path_factory.mktemp("processes") / "home"
    going = threading.Event()
    going.set()
    with FakeOpenAIServer(responder=teller(going)) as server:
        ports = (free_port(), free_port())
        started = [_serve(home, port, server, database_url) for port in ports]
        try:
            for process in started:
                _wait_until_serving(process)
            urls = (f"http://127.0.0.1:{ports[0]}/", f"http://127.0.0.1:{ports[1]}/")
            yield Processes(home, urls, database_url, going)
        finally:
            for process in started:
                process.terminate()
            for process in started:
                process.wait(timeout=30)


def newest_chat(processes: Processes) -> list[Message]:
    """The messages of the newest session in the processes' database."""
    if processes.database_url is None:
        store = SqliteStore.open_home(processes.home)
        try:
            return store.messages(store.list_sessions()[0].id)
        finally:
            store.close()
    # Playwright's sync API keeps its event loop running in this thread: read in another.
    with ThreadPoolExecutor(max_workers=1) as thread:
        return thread.submit(asyncio.run, _newest_pg_chat(processes.database_url)).result()


async def _newest_pg_chat(url: str) -> list[Message]:
    from memory.postgres.store import PgStore

    store = await PgStore.open(url, OWNER)
    try:
        return await store.messages((await store.list_sessions())[0].id)
    finally:
        await store.close()


def answer(page: Any) -> Any:
    return page.locator("#chatbot [data-testid='bot'] .message-content").last


def test_a_turn_started_in_one_process_is_followed_from_the_other(
    browser: Any, processes: Processes
) -> None:
    one = browser.new_context().new_page()
    open_app(one, processes.urls[0])
    one.locator("#new-session").click()
    other = browser.new_context().new_page()
    with processes.held():
        send(one, "tell me a story")
        expect(answer(one)).to_contain_text("tale3", timeout=TIMEOUT_MS)
        one.context.close()  # the page goes away; the turn goes on in process one

        open_app(other, processes.urls[1])
        expect(answer(other)).to_contain_text("tale", timeout=TIMEOUT_MS)  # the text so far
        expect(other.locator("#stop-turn")).to_be_visible()
    expect(answer(other)).to_have_text(STORY, timeout=TIMEOUT_MS)  # then the whole answer
    expect(other.locator("#stop-turn")).to_be_hidden(timeout=TIMEOUT_MS)
    stored = newest_chat(processes)
    assert [(m.role, m.content) for m in stored] == [
        ("user", "tell me a story"),
        ("assistant", STORY),
    ]
    other.context.close()


def test_stop_in_the_other_process_stops_the_turn(browser: Any, processes: Processes) -> None:
    one = browser.new_context().new_page()
    open_app(one, processes.urls[0])
    one.locator("#new-session").click()
    other = browser.new_context().new_page()
    with processes.held():
        send(one, "another story, please")
        expect(answer(one)).to_contain_text("tale3", timeout=TIMEOUT_MS)
        open_app(other, processes.urls[1])
        expect(other.locator("#stop-turn")).to_be_visible(timeout=TIMEOUT_MS)
        other.locator("#stop-turn").click()
        expect(answer(one)).to_contain_text("Stopped", timeout=TIMEOUT_MS)
        expect(answer(other)).to_contain_text("Stopped", timeout=TIMEOUT_MS)
    expect(one.locator("#stop-turn")).to_be_hidden(timeout=TIMEOUT_MS)
    expect(other.locator("#stop-turn")).to_be_hidden(timeout=TIMEOUT_MS)
    stopped = newest_chat(processes)[-1]
    assert stopped.meta == {"stopped": True}
    assert stopped.content and STORY.startswith(stopped.content)
    assert stopped.content != STORY
    one.context.close()
    other.context.close()


def rename_newest(processes: Processes, title: str) -> None:
    """Rename the newest chat in the processes' database, as a third writer would."""
    if processes.database_url is None:
        store = SqliteStore.open_home(processes.home)
        try:
            store.rename_session(store.list_sessions()[0].id, title)
        finally:
            store.close()
        return
    with ThreadPoolExecutor(max_workers=1) as thread:
        thread.submit(asyncio.run, _rename_pg(processes.database_url, title)).result()


async def _rename_pg(url: str, title: str) -> None:
    from memory.postgres.store import PgStore

    store = await PgStore.open(url, OWNER)
    try:
        await store.rename_session((await store.list_sessions())[0].id, title)
    finally:
        await store.close()


@pytest.mark.parametrize("width", [390, 1440])
def test_an_open_page_shows_turns_retries_and_renames_made_elsewhere(
    browser: Any, processes: Processes, width: int
) -> None:
    """Issue 25, live tabs: a page left open on process two, never reloaded, shows the
    message sent through process one, follows its answer, follows a retry, and shows a
    rename made by a third writer, each within a few seconds."""
    size = {"width": width, "height": 900}
    one = browser.new_context(viewport=size).new_page()
    two = browser.new_context(viewport=size).new_page()
    open_app(one, processes.urls[0])
    # A chat of its own: in the newest chat, an earlier test's answer would pass for this
    # one's, and the next message would queue behind the turn still running (5 s, once).
    new_chat(one)
    send(one, f"first words at {width}")  # a chat for both pages to show
    expect(answer(one)).to_have_text(STORY, timeout=TIMEOUT_MS)
    open_app(two, processes.urls[1])  # it opens the newest chat: the same one
    said = f"live from one at {width}"
    with processes.held():
        send(one, said)
        asked = two.locator("#chatbot [data-testid='user']").last
        expect(asked).to_have_text(said, timeout=5_000)  # the poll is every second
        expect(two.locator("#stop-turn")).to_be_visible(timeout=5_000)
    expect(answer(two)).to_have_text(STORY, timeout=TIMEOUT_MS)
    expect(two.locator("#stop-turn")).to_be_hidden(timeout=TIMEOUT_MS)
    expect(answer(one)).to_have_text(STORY, timeout=TIMEOUT_MS)
    answers = two.locator("#chatbot [data-testid='bot']")
    shown = answers.count()

    with processes.held():
        one.locator("#chatbot button[aria-label='Retry']").last.click()
        expect(two.locator("#stop-turn")).to_be_visible(timeout=5_000)
    expect(answer(two)).to_have_text(STORY, timeout=TIMEOUT_MS)
    expect(two.locator("#stop-turn")).to_be_hidden(timeout=TIMEOUT_MS)
    expect(answers).to_have_count(shown)  # the answer replaced, not added

    title = f"Renamed elsewhere {width}"
    rename_newest(processes, title)
    expect(two.locator("#chats")).to_contain_text(title, timeout=5_000)
    one.context.close()
    two.context.close()
