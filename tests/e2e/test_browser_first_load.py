"""First load in a real headless chromium: an empty chat greets in the persona's voice with
example prompts (never stored, never sent to the model), a clicked example is sent as the
message, and Settings warns while no vision model is set."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from app.chat_handlers import DRAW_EXAMPLE, EXAMPLES
from graph.routing import NO_VISION_NOTICE
from memory.sqlite.store import SqliteStore
from prompts.templates import persona_greeting, persona_text
from tests.e2e.harness import RunningApp, open_app

TIMEOUT_MS = 15_000


@pytest.fixture
def fresh(browser: Any, app: RunningApp) -> Iterator[Any]:
    """A browser page on the app, as loaded (no "New chat" clicked)."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    open_app(page, app.url)
    yield page
    context.close()


def placeholder(page: Any) -> Any:
    return page.locator("#chatbot .placeholder-content")


def examples(page: Any) -> Any:
    return page.locator("#chatbot .placeholder-content .example")


def stored_texts(app: RunningApp) -> list[str]:
    store = SqliteStore.open_home(app.home)
    return [m.content for s in store.list_sessions() for m in store.messages(s.id)]


def test_the_first_load_greets_and_an_example_is_sent(
    fresh: Any, app: RunningApp, artifacts: Path
) -> None:
    expect(placeholder(fresh)).to_contain_text("Yuzuki")
    expect(placeholder(fresh)).to_contain_text(persona_greeting("yuzuki"))
    expect(examples(fresh)).to_have_count(len(EXAMPLES))
    for text in EXAMPLES:
        expect(examples(fresh).filter(has_text=text)).to_be_visible()
    expect(examples(fresh).filter(has_text=DRAW_EXAMPLE)).to_have_count(0)  # no image backend
    fresh.screenshot(path=artifacts / "chat-first-load.png")

    remember = EXAMPLES[2]
    examples(fresh).filter(has_text=remember).click()
    expect(fresh.locator("#chatbot [data-testid='user']").last).to_have_text(remember)
    bot = fresh.locator("#chatbot [data-testid='bot'] .message-content").last
    expect(bot).to_contain_text(f"You said: {remember}", timeout=TIMEOUT_MS)
    expect(placeholder(fresh)).to_have_count(0)

    system = str(app.model.calls[-1]["messages"][0].content)
    assert system.startswith(f"{persona_text('yuzuki')}\n\n")
    assert persona_greeting("yuzuki") not in system
    stored = stored_texts(app)
    assert remember in stored
    assert not any(persona_greeting("yuzuki") in text for text in stored)


def test_new_chat_greets_again_in_the_voice_of_the_saved_persona(fresh: Any) -> None:
    fresh.locator("#new-session").click()
    expect(placeholder(fresh)).to_contain_text(persona_greeting("yuzuki"))
    expect(examples(fresh)).to_have_count(len(EXAMPLES))

    fresh.get_by_role("tab", name="Settings").click()
    fresh.locator("#set-persona input").fill("journal")
    fresh.locator("#set-persona input").press("Enter")
    expect(fresh.locator("#set-identity textarea")).to_have_value(persona_text("journal"))
    fresh.locator("#save-settings").click()
    expect(fresh.locator("#settings-status")).to_contain_text("persona journal.")
    fresh.get_by_role("tab", name="Chat").click()
    fresh.locator("#new-session").click()
    expect(placeholder(fresh)).to_contain_text("Journal")
    expect(placeholder(fresh)).to_contain_text(persona_greeting("journal"))
    expect(placeholder(fresh)).not_to_contain_text(persona_greeting("yuzuki"))


def test_settings_warns_until_a_vision_model_is_set(fresh: Any, artifacts: Path) -> None:
    fresh.get_by_role("tab", name="Settings").click()
    warning = fresh.locator("#no-vision-warning")
    expect(warning).to_contain_text(NO_VISION_NOTICE)
    fresh.screenshot(path=artifacts / "settings-no-vision.png", full_page=True)
    fresh.locator("#set-vision-model input").fill("scripted-vision")
    fresh.locator("#set-vision-model input").press("Enter")
    fresh.locator("#save-settings").click()
    expect(fresh.locator("#settings-status")).to_contain_text("Saved")
    expect(warning).to_be_hidden()
