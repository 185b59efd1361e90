"""The app in a real headless chromium: chat, tool steps, settings, graph, two browsers."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from playwright.sync_api import expect

from tests.e2e.harness import ASK_LOCATION, bot_messages, open_app, send

TIMEOUT_MS = 15_000


def open_tab(page: Any, name: str) -> None:
    page.get_by_role("tab", name=name).click()


def last_answer(page: Any) -> Any:
    return page.locator("#chatbot [data-testid='bot'] .message-content").last


def step_title(page: Any, title: str) -> Any:
    return page.locator("#chatbot .thought-group .title", has_text=title).last


def assert_only_loopback(page: Any) -> None:
    hosts = {urlsplit(url).hostname for url in page.requests if url.startswith("http")}
    assert hosts == {"127.0.0.1"}, hosts


def test_a_message_gets_its_answer_and_the_model_line(page: Any, artifacts: Path) -> None:
    send(page, "hello")
    expect(last_answer(page)).to_have_text(
        "Hello! You said: hello. Nice to hear from you today.", timeout=TIMEOUT_MS
    )
    expect(page.locator("#chatbot [data-testid='user']").last).to_have_text("hello")
    expect(page.locator("#model-line")).to_have_text("model: scripted-chat")
    expect(page.locator("#local-banner")).to_be_hidden()
    page.screenshot(path=artifacts / "chat-hello.png")
    assert_only_loopback(page)


def test_a_tool_step_is_pending_then_collapses_with_its_output(page: Any) -> None:
    send(page, "take a nap")
    title = step_title(page, "nap")  # "Using nap", then "Used nap"
    spinner = title.locator(".loading-spinner")
    expect(spinner).to_be_visible(timeout=TIMEOUT_MS)  # pending, open, "running…"
    expect(page.locator("#chatbot .thought-group").last).to_contain_text("running…")
    expect(page.locator("#chat-input textarea")).to_be_editable()  # never locked by a turn
    expect(page.locator("#stop-turn")).to_be_visible()
    expect(last_answer(page)).to_have_text("That was a good nap.", timeout=TIMEOUT_MS)
    expect(page.locator("#stop-turn")).to_be_hidden()
    expect(spinner).to_have_count(0)
    step = page.locator("#chatbot .thought-group").last
    expect(step).not_to_contain_text("slept_seconds")  # collapsed
    title.click()
    expect(step).to_contain_text("slept_seconds")
    expect(title).to_contain_text("Used nap")
    expect(step.locator(".duration")).to_have_text(re.compile(r"^\s*4(\.\d)? s\s*$"))  # 4 s nap
    expect(page.locator("#chat-input textarea")).to_be_enabled()


def test_latitude_in_settings_changes_the_weather_answer(page: Any, artifacts: Path) -> None:
    send(page, "How's the weather?")
    expect(last_answer(page)).to_have_text(ASK_LOCATION, timeout=TIMEOUT_MS)
    expect(step_title(page, "Weather: needs your location → set it in Settings")).to_be_visible()

    open_tab(page, "Settings")
    page.locator("#set-latitude input").fill("123")
    page.locator("#save-settings").click()
    expect(page.locator("#settings-status")).to_contain_text("latitude must be between -90 and 90")
    page.locator("#set-latitude input").fill("35.68")
    page.locator("#set-longitude input").fill("139.69")
    page.locator("#save-settings").click()
    expect(page.locator("#settings-status")).to_contain_text("(35.68, 139.69)")
    expect(page.locator("#endpoint-status")).to_contain_text("unreachable")
    page.screenshot(path=artifacts / "settings.png", full_page=True)

    open_tab(page, "Chat")
    send(page, "And the weather now?")
    expect(last_answer(page)).to_contain_text("14.2 °C, overcast", timeout=TIMEOUT_MS)
    expect(last_answer(page)).to_contain_text("35.68, 139.7")
    page.screenshot(path=artifacts / "chat-weather.png")

    open_tab(page, "Settings")
    page.locator("#set-latitude input").fill("0")
    page.locator("#set-longitude input").fill("0")
    page.locator("#save-settings").click()
    expect(page.locator("#settings-status")).to_contain_text("(0.0, 0.0)")


def test_graph_tab_draws_the_diagram_and_the_last_turn(page: Any, artifacts: Path) -> None:
    send(page, "hello graph")
    expect(last_answer(page)).to_contain_text("hello graph", timeout=TIMEOUT_MS)
    open_tab(page, "Graph")
    diagram = page.locator("#graph-diagram svg")
    expect(diagram.first).to_be_visible(timeout=TIMEOUT_MS)
    expect(page.locator("#graph-diagram")).to_contain_text("execute_tool")
    expect(page.locator("#turn-trace")).to_contain_text("build_context → call_model")
    expect(page.locator("#turn-trace")).to_contain_text("scripted-chat")
    page.screenshot(path=artifacts / "graph.png", full_page=True)
    assert_only_loopback(page)


def test_two_browsers_chat_at_once(page: Any, browser: Any, app: Any) -> None:
    other = browser.new_context().new_page()
    open_app(other, app.url)
    other.locator("#new-session").click()
    expect(other.locator("#chatbot [data-testid='bot']")).to_have_count(0)

    send(page, "one more long nap")
    spinner = step_title(page, "Using nap").locator(".loading-spinner")
    expect(spinner).to_be_visible(timeout=TIMEOUT_MS)
    send(other, "hi from the other browser")
    expect(last_answer(other)).to_contain_text("hi from the other browser", timeout=TIMEOUT_MS)
    expect(spinner).to_be_visible()  # the nap is still running
    expect(bot_messages(other)).to_have_count(1)
    expect(last_answer(page)).to_have_text("That was a good nap.", timeout=2 * TIMEOUT_MS)
    other.context.close()
