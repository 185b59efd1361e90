"""Tool steps written for people and the person's time zone, in a real headless chromium:
step titles, a search answer's sources as links (the same after a reload), an invalid
time zone refused in Settings, and Tokyo time in the clock the model is told."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from playwright.sync_api import expect

from evals.fixtures import DuckDuckGoFixture
from memory.rules.temporal import clock_text
from tests.e2e.harness import RunningApp, launched_app, loaded, send
from tests.support.chat_model import tool_call
from tools.registry import ToolRegistry, builtin_specs

TIMEOUT_MS = 15_000
ANSWER = "About 154 yen to the dollar."
# What the DuckDuckGo fixture's currency page lists (web_search keeps the first five).
SOURCES = {
    "1 USD to JPY - US Dollars to Japanese Yen Exchange Rate - Xe": (
        "https://www.xe.com/currencyconverter/convert/?Amount=1&From=USD&To=JPY"
    ),
    "USD / JPY Currency Exchange Rate & Chart - Google Finance": (
        "https://www.google.com/finance/quote/USD-JPY"
    ),
}


def policy(messages: list[BaseMessage], kwargs: dict[str, Any]) -> str | AIMessage:
    """ "search" → web_search; a tool result → the answer; anything else → "Noted."."""
    last = messages[-1]
    if isinstance(last, ToolMessage):
        return ANSWER
    if isinstance(last, HumanMessage) and "search" in str(last.content).lower():
        return tool_call("web_search", {"query": "USD to JPY"})
    return "Noted."


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningApp]:
    """The app with the scripted policy, web_search pointed at the DuckDuckGo fixture."""
    home = tmp_path_factory.mktemp("e2e-steps") / "home"
    registry = ToolRegistry(builtin_specs())
    with (
        DuckDuckGoFixture() as search,
        launched_app(home, policy, search.settings_overrides(), registry) as app,
    ):
        yield app


def last_answer(page: Any) -> Any:
    return page.locator("#chatbot [data-testid='bot'] .message-content").last


def save_time_zone(page: Any, zone: str) -> Any:
    page.get_by_role("tab", name="Settings").click()
    page.locator("#set-timezone textarea, #set-timezone input").first.fill(zone)
    page.locator("#save-settings").click()
    return page.locator("#settings-status")


def assert_search_step_and_sources(page: Any) -> None:
    title = page.locator("#chatbot .thought-group .title").last
    expect(title.locator("p")).to_have_text("Searched the web for “USD to JPY”")
    expect(title.locator(".duration")).to_have_text(re.compile(r"^\s*[\d.]+ s\s*$"))
    answer = last_answer(page)
    expect(answer).to_contain_text(ANSWER)
    expect(answer).to_contain_text("Sources")
    for text, url in SOURCES.items():
        expect(answer.get_by_role("link", name=text)).to_have_attribute("href", url)
    expect(answer.locator("a")).to_have_count(5)


def test_a_search_step_reads_for_people_and_lists_its_sources(page: Any, artifacts: Path) -> None:
    send(page, "search the yen rate")
    expect(last_answer(page)).to_contain_text(ANSWER, timeout=TIMEOUT_MS)
    assert_search_step_and_sources(page)
    page.locator("#chatbot .thought-group .title").last.click()  # the raw output, inside
    expect(page.locator("#chatbot .thought-group").last).to_contain_text('"snippet"')
    page.screenshot(path=artifacts / "chat-search-sources.png")
    page.reload()
    loaded(page)
    assert_search_step_and_sources(page)  # after a reload, the same


def test_an_invalid_time_zone_is_refused_and_tokyo_is_the_models_clock(
    page: Any, app: RunningApp
) -> None:
    status = save_time_zone(page, "Mars/Olympus")
    expect(status).to_contain_text("Not saved", timeout=TIMEOUT_MS)
    expect(status).to_contain_text("'Mars/Olympus' is not in the IANA time zone database")
    status = save_time_zone(page, "Asia/Tokyo")
    expect(status).to_contain_text("✅ Saved", timeout=TIMEOUT_MS)
    try:
        page.get_by_role("tab", name="Chat").click()
        before = datetime.now(UTC)
        send(page, "what time is it for me?")
        expect(last_answer(page)).to_have_text("Noted.", timeout=TIMEOUT_MS)
        system = str(app.model.calls[-1]["messages"][0].content)
        told = [clock_text(before + timedelta(minutes=m), "Asia/Tokyo") for m in (0, 1)]
        assert any(f"Current date and time: {clock}." in system for clock in told), system
    finally:
        expect(save_time_zone(page, "UTC")).to_contain_text("✅ Saved", timeout=TIMEOUT_MS)
