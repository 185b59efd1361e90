"""A model server running on this machine, as a person meets it on the bundled model in
chromium: the banner offers it by name, one click switches, and the next message is
answered by it; Settings then shows the new connection without a reload."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from providers import LocalServers, discovery
from tests.e2e.harness import bot_messages, free_port, new_chat, open_app, send
from tests.support.local_servers import FakeOllama, probes_for

TIMEOUT_MS = 15_000
ANSWER = "Hello from the Ollama on this machine!"


@dataclass
class Found:
    """The app on the bundled model, and the Ollama its discovery asks."""

    url: str
    ollama: FakeOllama


@pytest.fixture(scope="module")
def found(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Found]:
    from app.ui import launch_app
    from graph.setup import ContextFactory

    home = tmp_path_factory.mktemp("found") / "home"
    with (
        FakeOllama(["qwen2.5:3b"], default=ANSWER) as ollama,
        pytest.MonkeyPatch.context() as patch,
    ):
        patch.setattr(discovery, "_SERVERS", LocalServers(probes_for(ollama=ollama.port)))
        make = ContextFactory({"home": home, "embedding_model": "off"}, env={})
        demo, url = launch_app(make, port=free_port())
        try:
            yield Found(url, ollama)
        finally:
            demo.close()


@pytest.fixture
def page(browser: Any, found: Found) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    tab = context.new_page()
    open_app(tab, found.url)
    new_chat(tab)
    yield tab
    context.close()


def test_the_banner_offers_the_found_server_and_one_click_switches_to_it(
    page: Any, found: Found, artifacts: Path
) -> None:
    banner = page.locator("#local-banner")
    expect(banner).to_contain_text("can't search the web", timeout=TIMEOUT_MS)
    expect(banner).to_contain_text("Ollama is running with qwen2.5:3b — use it?")
    examples = page.locator("#chatbot").get_by_text("What is 17 + 25?")
    expect(examples).to_be_visible()
    page.screenshot(path=artifacts / "found-server-offer.png")

    page.locator("#banner-use").click()
    expect(page.locator("#model-line")).to_contain_text("model: qwen2.5:3b", timeout=TIMEOUT_MS)
    expect(banner).to_contain_text("Chatting with qwen2.5:3b on Ollama")
    expect(page.locator("#banner-back")).to_be_visible()
    send(page, "Hi!")
    expect(bot_messages(page).last).to_contain_text(ANSWER, timeout=TIMEOUT_MS)
    assert found.ollama.requests[-1]["model"] == "qwen2.5:3b"

    page.get_by_role("tab", name="Settings").click()
    expect(page.locator("#set-base-url input, #set-base-url textarea")).to_have_value(
        found.ollama.url, timeout=TIMEOUT_MS
    )
    page.screenshot(path=artifacts / "found-server-settings.png")
