"""The connection as a person meets it in chromium, against a loopback OpenAI-compatible
server (``FakeOpenAIServer``) and the real ChatOpenAI client, not a scripted model.

A refused key (HTTP 401) gives the key advice in the chat, never "try again in a
moment", and Retry works once the endpoint takes the key; in Settings, Verify tells a
refused key apart from an OK endpoint, whose models fill the model dropdown.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.e2e.harness import SETTLED, bot_messages, free_port, new_chat, open_app, send
from tests.support.fake_openai import FakeOpenAIServer, Step

TIMEOUT_MS = 15_000
WRONG_KEY = "sk-wrong-key-0000"


@dataclass
class Endpoint:
    """The app, and the server it sends its chat to."""

    url: str
    server: FakeOpenAIServer


@pytest.fixture(scope="module")
def endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Endpoint]:
    from app.ui import launch_app
    from graph.setup import ContextFactory

    home = tmp_path_factory.mktemp("connections") / "home"
    with FakeOpenAIServer() as server:
        server.model_ids = ["fake-model", "fake-vision"]
        make = ContextFactory({"home": home}, env={})
        make.store.blocking.set_profile(  # as saved in Settings
            {
                "provider": "openai-compatible",
                "base_url": server.url,
                "api_key": WRONG_KEY,
                "chat_model": "fake-model",
                "tool_mode": "commands",
            }
        )
        demo, url = launch_app(make, port=free_port())
        try:
            yield Endpoint(url, server)
        finally:
            demo.close()


@pytest.fixture
def page(browser: Any, endpoint: Endpoint) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    tab = context.new_page()
    open_app(tab, endpoint.url)
    new_chat(tab)
    yield tab
    context.close()


def test_a_refused_key_says_check_the_key_and_retry_answers_once_fixed(
    page: Any, endpoint: Endpoint, artifacts: Path
) -> None:
    endpoint.server.push(Step(status=401))
    send(page, "hello?")
    answer = bot_messages(page).last
    expect(answer).to_contain_text("refused the API key", timeout=TIMEOUT_MS)
    expect(answer).to_contain_text("Check the key in Settings")
    expect(answer).not_to_contain_text("try again in a moment")
    page.screenshot(path=artifacts / "chat-key-refused.png")

    endpoint.server.push(Step(content="Hello, I can hear you now."))
    page.locator("#chatbot button[aria-label='Retry']").click()
    expect(bot_messages(page).last).to_contain_text("I can hear you now", timeout=TIMEOUT_MS)
    expect(bot_messages(page)).to_have_count(1)  # the error bubble was replaced


def test_verify_tells_a_refused_key_from_an_endpoint_that_answers(
    page: Any, endpoint: Endpoint
) -> None:
    page.get_by_role("tab", name="Settings").click()
    status = page.locator("#endpoint-status")
    # The tab checks the endpoint in effect when it opens: let that check end first, or
    # it can run while the key is refused below and land after Verify's answer.
    expect(status).to_contain_text("OK, chat model fake-model", timeout=TIMEOUT_MS)
    endpoint.server.models_status = 401
    try:
        page.locator("#check-endpoint").click()
        expect(status).to_contain_text("the API key was refused (HTTP 401)", timeout=TIMEOUT_MS)
        # A click while Verify's event is still pending is dropped (Gradio's trigger_mode
        # "once"): under load its answer can show before the event has ended (CI, once).
        page.wait_for_function(SETTLED, timeout=TIMEOUT_MS)
    finally:
        endpoint.server.models_status = 200
    page.locator("#check-endpoint").click()
    expect(status).to_contain_text("OK, chat model fake-model", timeout=TIMEOUT_MS)
    assert WRONG_KEY not in page.content()  # write-only: never sent back to the browser

    page.locator("#set-vision-model input").click()
    options = page.locator("ul[role='listbox'] li")
    expect(options.filter(has_text="fake-vision")).to_be_visible()
