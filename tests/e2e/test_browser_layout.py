"""The chats sidebar and the layout, in a real headless chromium: chats listed by last
activity with rename and a confirmed delete from a row's menu, "New chat" storing nothing
until the first message; on a phone (390 px) the sidebar starts closed and nothing runs
off the side; on a desktop (1440 px) the sidebar is open and the chat fits the window."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from memory import Session
from memory.sqlite.store import SqliteStore
from tests.e2e.harness import RunningApp, send

TIMEOUT_MS = 15_000
WHEN = re.compile(r"^(now|\d+ min)$")  # a chat just used
OPEN = re.compile(r"\bopen\b")
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1440, "height": 900}


def hello(text: str) -> str:
    return f"Hello! You said: {text}. Nice to hear from you today."


def last_answer(page: Any) -> Any:
    return page.locator("#chatbot [data-testid='bot'] .message-content").last


def loaded(page: Any) -> None:
    """Wait until the page's load events have run (the model line is filled in last)."""
    expect(page.locator("#model-line")).to_contain_text("model:", timeout=TIMEOUT_MS)


def chat(page: Any, text: str) -> None:
    """Send ``text`` and wait until its turn is over (the rows update when it ends)."""
    send(page, text)
    expect(last_answer(page)).to_have_text(hello(text), timeout=TIMEOUT_MS)
    expect(page.locator("#stop-turn")).to_be_hidden()


def rows(page: Any) -> Any:
    """The sidebar's chat list (app.chat_list): one row per chat."""
    return page.locator("#chat-list .chat-row")


def row(page: Any, title: str) -> Any:
    return rows(page).filter(has_text=title)


def opener(found: Any) -> Any:
    """A row's button that opens its chat (its title and last activity)."""
    return found.locator(".chat-open")


def menu_item(page: Any, title: str, item: str) -> Any:
    """Open the menu of the row titled ``title`` and return its item ``item``."""
    page.get_by_role("button", name=f"Options for “{title}”").click()
    return row(page, title).get_by_role("button", name=item, exact=True)


def current(page: Any) -> Any:
    """The row of the chat in view (its button is marked aria-current)."""
    return rows(page).filter(has=page.locator("[aria-current='true']"))


def sessions(app: RunningApp) -> list[Session]:
    store = SqliteStore.open_home(app.home)
    try:
        return store.list_sessions()
    finally:
        store.close()


def test_the_sidebar_lists_chats_by_last_activity(page: Any) -> None:
    chat(page, "the older chat")
    page.locator("#new-session").click()
    expect(page.locator("#chatbot [data-testid='bot']")).to_have_count(0)
    chat(page, "the newer chat")
    expect(rows(page).nth(0)).to_contain_text("the newer chat")
    expect(rows(page).nth(1)).to_contain_text("the older chat")
    expect(current(page)).to_contain_text("the newer chat")
    expect(rows(page).nth(0).locator(".chat-when")).to_have_text(WHEN)

    opener(row(page, "the older chat")).click()  # its last activity moves it up
    expect(page.locator("#chatbot [data-testid='user']")).to_have_text(["the older chat"])
    chat(page, "back to the older chat")
    expect(rows(page).nth(0)).to_contain_text("the older chat")
    expect(current(page)).to_contain_text("the older chat")
    expect(rows(page).nth(1)).to_contain_text("the newer chat")


def test_a_chat_is_renamed_from_its_row(page: Any, app: RunningApp) -> None:
    chat(page, "a chat to rename")
    menu_item(page, "a chat to rename", "Rename").click()
    name = page.locator("#rename-box input, #rename-box textarea").first
    expect(name).to_have_value("a chat to rename")
    name.fill("Tea talk")
    page.locator("#rename-save").click()
    expect(rows(page).nth(0)).to_contain_text("Tea talk")
    expect(page.locator("#rename-chat")).to_be_hidden()
    assert sessions(app)[0].title == "Tea talk"


def test_a_chat_is_deleted_only_when_confirmed(page: Any, app: RunningApp) -> None:
    chat(page, "a chat to delete")
    expect(rows(page).nth(0)).to_contain_text("a chat to delete")
    menu_item(page, "a chat to delete", "Delete").click()
    expect(page.locator("#delete-chat")).to_contain_text("Delete “a chat to delete”?")
    page.locator("#delete-no").click()
    expect(page.locator("#delete-chat")).to_be_hidden()
    assert "a chat to delete" in [s.title for s in sessions(app)]

    menu_item(page, "a chat to delete", "Delete").click()
    page.locator("#delete-yes").click()
    expect(row(page, "a chat to delete")).to_have_count(0)
    assert "a chat to delete" not in [s.title for s in sessions(app)]


def test_new_chat_twice_then_one_message_makes_one_chat(page: Any, app: RunningApp) -> None:
    chat(page, "before the new chats")
    before = len(sessions(app))
    page.locator("#new-session").click()
    expect(page.locator("#chatbot [data-testid='bot']")).to_have_count(0)
    page.locator("#new-session").click()
    chat(page, "only one new chat")
    assert len(sessions(app)) == before + 1
    assert sessions(app)[0].title == "only one new chat"
    expect(row(page, "only one new chat")).to_have_count(1)


@pytest.fixture
def located(app: RunningApp) -> Iterator[None]:
    """Tokyo as the saved location, so the weather tool answers (from the fixture)."""
    store = SqliteStore.open_home(app.home)
    store.set_profile({"latitude": 35.68, "longitude": 139.69})
    try:
        yield
    finally:
        store.set_profile({"latitude": None, "longitude": None})
        store.close()


def open_at(browser: Any, app: RunningApp, viewport: dict[str, int]) -> Any:
    page = browser.new_context(viewport=viewport).new_page()
    page.goto(app.url)
    loaded(page)
    # Clicked from script: on a phone the sidebar that holds it starts closed.
    page.locator("#new-session").dispatch_event("click")
    expect(page.locator("#chatbot [data-testid='bot']")).to_have_count(0)
    return page


def weather_with_its_step_open(page: Any) -> None:
    """Ask for the weather, then open the tool step to show its output."""
    send(page, "How's the weather outside?")
    expect(last_answer(page)).to_contain_text("14.2", timeout=TIMEOUT_MS)
    step = page.locator("#chatbot .thought-group").last
    step.locator(".title").click()
    expect(step.locator(".content")).to_contain_text('"temperature": 14.2')


def no_sideways_scroll(page: Any) -> dict[str, list[int]]:
    """(scrollWidth, clientWidth) of the chat, its scrolling log and the page."""
    return dict(
        page.evaluate(
            """() => Object.fromEntries(
                [['chatbot', '#chatbot'], ['log', '#chatbot .bubble-wrap'],
                 ['page', 'html']].map(([name, selector]) => {
                    const element = document.querySelector(selector);
                    return [name, element ? [element.scrollWidth, element.clientWidth] : null];
                }).filter(([, sizes]) => sizes))"""
        )
    )


def test_on_a_phone_the_sidebar_is_closed_and_nothing_runs_off_the_side(
    browser: Any, app: RunningApp, located: None, artifacts: Path
) -> None:
    page = open_at(browser, app, PHONE)
    try:
        expect(page.locator("#chats")).not_to_have_class(OPEN)
        composer = page.locator("#chat-input").bounding_box()
        assert composer is not None
        assert composer["x"] >= 0 and composer["y"] >= 0
        assert composer["x"] + composer["width"] <= PHONE["width"]
        assert composer["y"] + composer["height"] <= PHONE["height"]

        weather_with_its_step_open(page)
        sizes = no_sideways_scroll(page)
        assert {"chatbot", "page"} <= sizes.keys(), sizes
        for scroll_width, client_width in sizes.values():
            assert scroll_width <= client_width + 1, sizes
        page.screenshot(path=artifacts / "layout-390.png")

        page.get_by_role("tab", name="Graph").click()
        # the turn as kept in the store (app.graph_tab), not the one the chat wrote first
        expect(page.locator("#turn-trace")).to_contain_text("Asked:", timeout=TIMEOUT_MS)
        table = page.locator("#turn-trace table")
        expect(table).to_be_visible(timeout=TIMEOUT_MS)
        box = table.bounding_box()
        assert box is not None and box["width"] >= 300, box
        widths = table.locator("th, td").evaluate_all(
            "cells => cells.map(cell => cell.getBoundingClientRect().width)"
        )
        assert widths and min(widths) >= 40, widths
    finally:
        page.context.close()


# Records, each frame from the first, the furthest right the chats sidebar's list reached
# while it could be seen.
FURTHEST_RIGHT = """(() => {
  window.sidebarRight = -Infinity;
  const look = () => {
    const side = document.querySelector('#chat-list');
    if (side && getComputedStyle(side).visibility !== 'hidden') {
      window.sidebarRight = Math.max(window.sidebarRight, side.getBoundingClientRect().right);
    }
    requestAnimationFrame(look);
  };
  requestAnimationFrame(look);
})();"""


def test_on_a_phone_the_sidebar_never_comes_on_screen_as_the_page_loads(
    browser: Any, app: RunningApp
) -> None:
    context = browser.new_context(viewport=PHONE)
    try:
        context.add_init_script(FURTHEST_RIGHT)
        page = context.new_page()
        page.goto(app.url)
        loaded(page)
        page.wait_for_timeout(1000)  # a close that came late would have slid it in by now
        expect(page.locator("#chats")).not_to_have_class(OPEN)
        assert page.evaluate("window.sidebarRight") <= 0
    finally:
        context.close()


def test_on_a_desktop_the_sidebar_is_open_and_the_chat_fits(
    browser: Any, app: RunningApp, located: None, artifacts: Path
) -> None:
    page = open_at(browser, app, DESKTOP)
    try:
        expect(page.locator("#chats")).to_have_class(OPEN)
        weather_with_its_step_open(page)
        chatbot = page.locator("#chatbot").bounding_box()
        composer = page.locator("#chat-input").bounding_box()
        assert chatbot is not None and composer is not None
        assert chatbot["y"] + chatbot["height"] <= composer["y"] + 1
        assert composer["y"] + composer["height"] <= DESKTOP["height"]
        page.screenshot(path=artifacts / "layout-1440.png")
    finally:
        page.context.close()
