"""Turns that outlive the page, in a real headless chromium: a reload or a second tab
follows the running turn to its answer; Stop keeps the partial text; Retry answers again;
an edit asks before it deletes; the composer stays usable and queues; a turn a dead
process left running is shown interrupted and answered again by Retry."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from memory import Message
from memory.sqlite.store import SqliteStore
from tests.e2e.harness import (
    SETTLED,
    SLOW_STORY,
    RunningApp,
    bot_messages,
    launched_app,
    policy,
    send,
)

TIMEOUT_MS = 15_000
NAP_ANSWER = "That was a good nap."
STOPPED = "⏹ Stopped."
INTERRUPTED = "Interrupted"


def hello(text: str) -> str:
    return f"Hello! You said: {text}. Nice to hear from you today."


def wait_until(condition: Callable[[], bool], timeout: float = TIMEOUT_MS / 1000) -> None:
    """Poll ``condition`` (something the browser cannot be asked) until it holds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"still not {condition}"
        time.sleep(0.1)


def last_answer(page: Any) -> Any:
    return page.locator("#chatbot [data-testid='bot'] .message-content").last


def user_bubbles(page: Any) -> Any:
    return page.locator("#chatbot [data-testid='user']")


def loaded(page: Any) -> None:
    """Wait until the page's load events have run (the model line is filled in last)."""
    expect(page.locator("#model-line")).to_contain_text("model:", timeout=TIMEOUT_MS)


def reload(page: Any) -> None:
    page.reload()
    loaded(page)


def open_page(browser: Any, app: RunningApp) -> Any:
    """A new tab on the app, as loaded: it opens the most recently active chat."""
    tab = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    tab.goto(app.url)
    loaded(tab)
    return tab


def stored(app: RunningApp) -> list[Message]:
    """The messages of the most recently active chat."""
    store = SqliteStore.open_home(app.home)
    try:
        return store.messages(store.list_sessions()[0].id)
    finally:
        store.close()


def dialogue(app: RunningApp) -> list[tuple[str, str]]:
    """The most recent chat as (role, text), tool steps left out."""
    return [
        (m.role, m.content)
        for m in stored(app)
        if m.role in ("user", "assistant") and not m.meta.get("intermediate")
    ]


def test_a_reload_mid_answer_follows_the_turn_to_its_one_answer(page: Any, app: RunningApp) -> None:
    send(page, "tell me slowly")
    expect(last_answer(page)).to_contain_text("word3", timeout=TIMEOUT_MS)
    reload(page)
    expect(last_answer(page)).to_have_text(SLOW_STORY, timeout=TIMEOUT_MS)
    expect(page.locator("#stop-turn")).to_be_hidden()
    expect(bot_messages(page)).to_have_count(1)
    expect(user_bubbles(page)).to_have_count(1)
    assert dialogue(app) == [("user", "tell me slowly"), ("assistant", SLOW_STORY)]
    assert len(stored(app)) == 2


def test_a_reload_mid_tool_follows_the_step_to_the_answer(page: Any, app: RunningApp) -> None:
    send(page, "take a nap")
    title = page.locator("#chatbot .thought-group .title", has_text="nap").last
    expect(title.locator(".loading-spinner")).to_be_visible(timeout=TIMEOUT_MS)
    reload(page)
    expect(last_answer(page)).to_have_text(NAP_ANSWER, timeout=TIMEOUT_MS)
    title = page.locator("#chatbot .thought-group .title", has_text="nap").last
    expect(title).to_contain_text("Used nap")
    expect(title.locator(".loading-spinner")).to_have_count(0)
    expect(page.locator("#chatbot .thought-group")).to_have_count(1)
    assert dialogue(app) == [("user", "take a nap"), ("assistant", NAP_ANSWER)]


def test_a_second_tab_follows_the_running_turn(page: Any, browser: Any, app: RunningApp) -> None:
    send(page, "very slowly, for two tabs")
    expect(last_answer(page)).to_contain_text("word2", timeout=TIMEOUT_MS)
    other = open_page(browser, app)
    try:
        expect(user_bubbles(other)).to_have_text(["very slowly, for two tabs"])
        expect(other.locator("#stop-turn")).to_be_visible()
        expect(last_answer(other)).to_have_text(SLOW_STORY, timeout=2 * TIMEOUT_MS)
        expect(last_answer(page)).to_have_text(SLOW_STORY, timeout=TIMEOUT_MS)
        expect(bot_messages(other)).to_have_count(1)
        expect(other.locator("#stop-turn")).to_be_hidden()
    finally:
        other.context.close()


def test_stop_keeps_the_partial_answer_marked_stopped(browser: Any, app: RunningApp) -> None:
    page = open_page(browser, app)
    shown = bot_messages(page).count()
    send(page, "tell me slowly, then stop")
    # The chat may end with another slow answer: wait for this turn's own bubble.
    expect(bot_messages(page)).to_have_count(shown + 1, timeout=TIMEOUT_MS)
    expect(last_answer(page)).to_contain_text("word4", timeout=TIMEOUT_MS)
    page.locator("#stop-turn").click()
    expect(last_answer(page)).to_contain_text(STOPPED, timeout=TIMEOUT_MS)
    expect(page.locator("#stop-turn")).to_be_hidden()
    answer = stored(app)[-1]
    assert answer.role == "assistant"
    assert answer.meta == {"stopped": True}
    assert "word4" in answer.content
    assert SLOW_STORY.startswith(answer.content) and answer.content != SLOW_STORY
    expect(last_answer(page)).to_contain_text(answer.content)
    expect(last_answer(page)).not_to_contain_text("the end.")

    reload(page)
    expect(last_answer(page)).to_contain_text(answer.content)
    expect(last_answer(page)).to_contain_text(STOPPED)
    expect(bot_messages(page)).to_have_count(shown + 1)
    assert stored(app)[-1] == answer  # the stopped answer is not completed behind our back
    page.context.close()


def test_retry_answers_the_last_message_again(page: Any, app: RunningApp) -> None:
    send(page, "hello retry")
    expect(last_answer(page)).to_have_text(hello("hello retry"), timeout=TIMEOUT_MS)
    old_answer = stored(app)[-1]
    calls = len(app.model.calls)

    page.locator("#chatbot button[aria-label='Retry']").click()
    wait_until(lambda: len(app.model.calls) == calls + 1)
    expect(last_answer(page)).to_have_text(hello("hello retry"), timeout=TIMEOUT_MS)
    expect(bot_messages(page)).to_have_count(1)
    expect(user_bubbles(page)).to_have_text(["hello retry"])
    messages = stored(app)
    assert [(m.role, m.content) for m in messages] == [
        ("user", "hello retry"),
        ("assistant", hello("hello retry")),
    ]
    assert old_answer.id not in {m.id for m in messages}


def edit_first_message(page: Any, text: str) -> None:
    """Open the first user bubble's editor, type ``text`` and submit it. The page is let
    settle first: the chat the Cancel before sent is drawn after the confirm row hides,
    and drawn over an open editor it closes it (CI, under load, once)."""
    page.wait_for_function(SETTLED, timeout=TIMEOUT_MS)
    first = user_bubbles(page).first
    first.hover()
    page.locator("#chatbot button[aria-label='Edit']").first.click()
    editor = page.locator("#chatbot textarea")
    expect(editor).to_be_visible(timeout=TIMEOUT_MS)
    editor.fill(text)
    page.locator("#chatbot button[aria-label='Submit']").click()


def test_an_edit_asks_first_then_replaces_what_followed(page: Any, app: RunningApp) -> None:
    send(page, "first words")
    expect(last_answer(page)).to_have_text(hello("first words"), timeout=TIMEOUT_MS)
    send(page, "second words")
    expect(last_answer(page)).to_have_text(hello("second words"), timeout=TIMEOUT_MS)
    before = stored(app)

    edit_first_message(page, "first words, edited")
    confirm = page.locator("#confirm-edit")
    expect(confirm).to_be_visible(timeout=TIMEOUT_MS)
    expect(confirm).to_contain_text("The 3 messages after it will be replaced")
    page.locator("#cancel-edit").click()
    expect(confirm).to_be_hidden()
    expect(user_bubbles(page)).to_have_text(["first words", "second words"])
    expect(bot_messages(page)).to_have_count(2)
    assert stored(app) == before

    edit_first_message(page, "first words, edited")
    expect(confirm).to_be_visible(timeout=TIMEOUT_MS)
    page.locator("#resend-edit").click()
    expect(last_answer(page)).to_have_text(hello("first words, edited"), timeout=TIMEOUT_MS)
    expect(user_bubbles(page)).to_have_text(["first words, edited"])
    expect(bot_messages(page)).to_have_count(1)
    assert dialogue(app) == [
        ("user", "first words, edited"),
        ("assistant", hello("first words, edited")),
    ]
    assert not {m.id for m in before} & {m.id for m in stored(app)}


def composer_focused(page: Any) -> bool:
    return bool(page.evaluate("() => !!document.activeElement?.closest('#chat-input')"))


def test_the_composer_is_focused_and_queues_while_a_turn_runs(page: Any, app: RunningApp) -> None:
    send(page, "hi there")
    expect(last_answer(page)).to_have_text(hello("hi there"), timeout=TIMEOUT_MS)
    send(page, "tell me slowly")
    expect(last_answer(page)).to_contain_text("word2", timeout=TIMEOUT_MS)
    box = page.locator("#chat-input textarea")
    expect(box).to_be_enabled()
    send(page, "and after that?")
    expect(box).to_have_value("", timeout=TIMEOUT_MS)  # queued: a loaded machine is slow
    page.evaluate("() => document.activeElement?.blur()")  # the answer brings focus back
    assert not composer_focused(page)
    expect(last_answer(page)).to_have_text(hello("and after that?"), timeout=TIMEOUT_MS)
    wait_until(lambda: composer_focused(page))
    assert dialogue(app) == [
        ("user", "hi there"),
        ("assistant", hello("hi there")),
        ("user", "tell me slowly"),
        ("assistant", SLOW_STORY),
        ("user", "and after that?"),
        ("assistant", hello("and after that?")),
    ]


def dead_owner() -> str:
    """A running_turns owner naming a process of this host that has exited."""
    child = subprocess.Popen(["true"])
    child.wait()
    return f"{socket.gethostname()}:{child.pid}:deadbeef"


@pytest.fixture
def interrupted_home(tmp_path: Path) -> Path:
    """A home whose last turn was left running by a process that died mid-answer."""
    home = tmp_path / "home"
    store = SqliteStore.open_home(home)
    session = store.create_session("Before the crash")
    asked = store.add_message(session.id, "user", "are you still there?")
    turn = store.begin_turn(session.id, asked.id, dead_owner())
    store.save_partial(turn, "I was just about to")
    store.close()
    return home


@pytest.fixture
def restarted(interrupted_home: Path) -> Iterator[RunningApp]:
    with launched_app(interrupted_home, policy, {}) as app:
        yield app


def test_a_turn_left_running_by_a_dead_process_is_interrupted_then_retried(
    browser: Any, restarted: RunningApp
) -> None:
    page = open_page(browser, restarted)
    try:
        expect(user_bubbles(page)).to_have_text(["are you still there?"])
        expect(last_answer(page)).to_contain_text("I was just about to")
        expect(last_answer(page)).to_contain_text(INTERRUPTED)
        assert stored(restarted)[-1].meta == {"interrupted": True}
        store = SqliteStore.open_home(restarted.home)
        assert not store.running_turns()
        store.close()

        page.locator("#chatbot button[aria-label='Retry']").click()
        expect(last_answer(page)).to_have_text(hello("are you still there?"), timeout=TIMEOUT_MS)
        expect(bot_messages(page)).to_have_count(1)
        assert dialogue(restarted) == [
            ("user", "are you still there?"),
            ("assistant", hello("are you still there?")),
        ]
    finally:
        page.context.close()
