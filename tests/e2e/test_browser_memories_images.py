"""The Memories tab and image fidelity in a real headless chromium: a memory added by
hand reaches the next turn, the form clears after a delete, the no-vision notice shows
once, a drawing answered with silence gets no apology, and there is no Share button."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage
from playwright.sync_api import expect

from evals.fixtures import ImageFixture
from graph.routing import NO_VISION_NOTICE
from prompts.templates import EMPTY_ANSWER
from tests.e2e.harness import RunningApp, launched_app, send
from tests.support.chat_model import tool_call

TIMEOUT_MS = 15_000


def policy(messages: list[BaseMessage], kwargs: dict[str, Any]) -> Any:
    """ "draw" draws; after the drawing the model says nothing (the image is the answer)."""
    last = messages[-1]
    if isinstance(last, ToolMessage):
        return ""
    text = str(last.content) if isinstance(last, HumanMessage) else ""
    if "draw" in text:
        return tool_call("image_generate", {"prompt": "a black cat"})
    return f"You said: {text}."


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningApp]:
    """The app with an image backend on loopback and no vision model."""
    home = tmp_path_factory.mktemp("e2e-images") / "home"
    with ImageFixture() as images, launched_app(home, policy, images.settings_overrides()) as app:
        yield app


def open_tab(page: Any, name: str) -> None:
    page.get_by_role("tab", name=name).click()


def test_a_memory_added_by_hand_reaches_the_next_turn(
    page: Any, app: RunningApp, artifacts: Path
) -> None:
    open_tab(page, "Memories")
    page.locator("#memory-category input").click()
    page.get_by_role("option", name="identity").click()
    page.locator("#memory-key textarea, #memory-key input").first.fill("name")
    page.locator("#memory-value textarea").fill("Budi")
    page.locator("#save-memory").click()
    expect(page.locator("#memories-status")).to_contain_text("Saved", timeout=TIMEOUT_MS)
    table = page.locator("#memories-table")
    expect(table).to_contain_text("Budi")
    expect(table).to_contain_text("strong (100%)")
    page.screenshot(path=artifacts / "memories-added-by-hand.png")

    open_tab(page, "Chat")
    send(page, "who am I?")
    bot = page.locator("#chatbot [data-testid='bot'] .message-content").last
    expect(bot).to_contain_text("You said: who am I?", timeout=TIMEOUT_MS)
    assert "- name: Budi" in app.system_message()

    open_tab(page, "Memories")
    page.locator("#delete-memory").click()
    page.locator("#confirm-delete-memory").click()
    expect(page.locator("#memories-status")).to_contain_text("Deleted", timeout=TIMEOUT_MS)
    expect(page.locator("#memory-value textarea")).to_have_value("")
    expect(page.locator("#memory-key textarea, #memory-key input").first).to_have_value("")
    expect(table).not_to_contain_text("Budi")


def test_a_drawing_without_a_vision_model_says_so_once_and_never_apologises(
    page: Any, artifacts: Path
) -> None:
    send(page, "draw me a cat")
    chat = page.locator("#chatbot")
    expect(chat).to_contain_text(NO_VISION_NOTICE, timeout=TIMEOUT_MS)
    expect(chat.locator("img").last).to_be_visible(timeout=TIMEOUT_MS)
    expect(chat).not_to_contain_text(EMPTY_ANSWER)
    page.screenshot(path=artifacts / "chat-no-vision-notice.png")
    send(page, "draw another")
    expect(chat.locator("img")).to_have_count(2, timeout=TIMEOUT_MS)
    expect(chat).not_to_contain_text(NO_VISION_NOTICE)  # told once is enough
    expect(chat).not_to_contain_text(EMPTY_ANSWER)


def test_there_is_no_share_button(page: Any) -> None:
    send(page, "hello")
    expect(page.locator("#chatbot")).to_contain_text("You said: hello", timeout=TIMEOUT_MS)
    expect(page.locator("#chatbot").get_by_role("button", name="Share")).to_have_count(0)
    expect(
        page.locator("#chatbot [title*='Share' i], #chatbot [aria-label*='Share' i]")
    ).to_have_count(0)
