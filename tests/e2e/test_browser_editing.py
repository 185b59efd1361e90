"""Editing a message in the browser, on a desktop and a phone (issue 25, item 8): the
edit box spans the chat; Enter saves, Shift+Enter starts a new line, Esc cancels; one
confirmation names what will be replaced (Enter sends it, Esc cancels it); the chat's
title follows an edited first message, unless the person renamed the chat."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from memory.sqlite.store import SqliteStore
from tests.e2e.harness import RunningApp, bot_messages, send

TIMEOUT_MS = 20_000


@pytest.fixture
def page(sized_page: Any) -> Any:
    """The app at a phone's and a desktop's size, in a new, empty chat (conftest)."""
    return sized_page


def hello(text: str) -> str:
    return f"Hello! You said: {text}. Nice to hear from you today."


def user_bubbles(page: Any) -> Any:
    return page.locator("#chatbot [data-testid='user']")


def title_shown(page: Any) -> Any:
    """The title of the chat in view, in the sidebar's list."""
    return page.locator("#chats .chat-open[aria-current='true'] .chat-title")


def open_editor(page: Any) -> Any:
    """The first user message's edit box, opened with Gradio's pencil."""
    user_bubbles(page).first.hover()
    page.locator("#chatbot button[aria-label='Edit']").first.click()
    editor = page.locator("#chatbot .edit-textarea")
    expect(editor).to_be_visible(timeout=TIMEOUT_MS)
    return editor


def asked_and_answered(page: Any, text: str) -> None:
    send(page, text)
    expect(bot_messages(page).last).to_contain_text(hello(text), timeout=TIMEOUT_MS)


def test_enter_saves_esc_cancels_and_the_title_follows(page: Any) -> None:
    width = page.viewport_size["width"]
    first, edited = f"plan a picnic {width}", f"plan a beach day {width}"
    asked_and_answered(page, first)
    expect(title_shown(page)).to_have_text(first, timeout=TIMEOUT_MS)

    editor = open_editor(page)
    chat = page.locator("#chatbot").bounding_box()
    assert editor.bounding_box()["width"] >= 0.85 * chat["width"]  # not 160 px
    editor.press("Escape")
    expect(editor).to_have_count(0)
    expect(user_bubbles(page)).to_have_text([first])
    expect(page.locator("#confirm-edit")).to_be_hidden()

    editor = open_editor(page)
    editor.fill(edited)
    editor.press("Shift+Enter")  # a new line, not a save
    expect(editor).to_have_value(f"{edited}\n")
    editor.press("Enter")
    confirm = page.locator("#confirm-edit")
    expect(confirm).to_be_visible(timeout=TIMEOUT_MS)
    expect(confirm).to_contain_text(
        "Send the edited message? The 1 message after it will be replaced."
    )
    expect(page.locator("#resend-edit")).to_be_focused()
    page.keyboard.press("Escape")  # the confirmation is cancelled: nothing changes
    expect(confirm).to_be_hidden()
    expect(user_bubbles(page)).to_have_text([first])

    open_editor(page).fill(edited)
    page.locator("#chatbot .edit-textarea").press("Enter")
    expect(page.locator("#resend-edit")).to_be_focused(timeout=TIMEOUT_MS)
    page.keyboard.press("Enter")  # the one confirmation
    expect(bot_messages(page).last).to_contain_text(hello(edited), timeout=TIMEOUT_MS)
    expect(user_bubbles(page)).to_have_text([edited])
    expect(title_shown(page)).to_have_text(edited, timeout=TIMEOUT_MS)


def test_a_title_the_person_chose_stays_after_an_edit(page: Any, app: RunningApp) -> None:
    width = page.viewport_size["width"]
    asked_and_answered(page, f"first words {width}")
    store = SqliteStore.open_home(app.home)
    try:
        chat = store.list_sessions()[0]
        store.rename_session(chat.id, f"My trip {width}")
    finally:
        store.close()
    page.reload()
    expect(title_shown(page)).to_have_text(f"My trip {width}", timeout=TIMEOUT_MS)
    open_editor(page).fill(f"other words {width}")
    page.locator("#chatbot .edit-textarea").press("Enter")
    expect(page.locator("#resend-edit")).to_be_focused(timeout=TIMEOUT_MS)
    page.keyboard.press("Enter")
    expect(bot_messages(page).last).to_contain_text(
        hello(f"other words {width}"), timeout=TIMEOUT_MS
    )
    expect(title_shown(page)).to_have_text(f"My trip {width}")
