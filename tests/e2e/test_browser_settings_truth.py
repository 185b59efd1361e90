"""Settings that tell the truth (issue 25, item 4), in chromium at 390 and 1440 px, on a
real ``companion`` process: after Save every field, the endpoint's status, the chat's
banner and its model line show the configuration in effect, without a reload; a place
typed by name is found by the geocoder (a loopback Open-Meteo fixture) and fills
latitude, longitude and time zone; and the weather step's "set it in Settings" link opens
Settings at the place box."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from evals.fixtures import OpenMeteoFixture
from memory.sqlite.store import SqliteStore
from tests.e2e.harness import SETTLED, free_port, open_app, send
from tests.e2e.test_browser_processes import _environment, _wait_until_serving
from tests.support.fake_openai import FakeOpenAIServer

TIMEOUT_MS = 20_000
WIDTHS = [390, 1440]
NO_LOCATION_ANSWER = "Tell me where you are and I'll check."


def _serve(home: Path, **companion: str) -> tuple[subprocess.Popen[str], str]:
    """``companion`` on a free port with only ``companion``'s settings; (process, URL)."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "--port", str(port)],
        env=_environment(COMPANION_HOME=str(home), **companion),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    _wait_until_serving(process)
    return process, f"http://127.0.0.1:{port}/"


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Any]:
    """Start ``companion`` with the given settings (stopped after the test)."""
    started: list[subprocess.Popen[str]] = []

    def serve(**companion: str) -> str:
        process, url = _serve(tmp_path / "home", **companion)
        started.append(process)
        return url

    yield serve
    for process in started:
        process.terminate()
        process.wait(timeout=30)


def _page(browser: Any, width: int) -> Any:
    return browser.new_context(viewport={"width": width, "height": 900}).new_page()


def _field(page: Any, elem_id: str) -> Any:
    return page.locator(f"#{elem_id} textarea, #{elem_id} input").first


@pytest.mark.parametrize("width", WIDTHS)
def test_after_save_the_form_the_endpoint_the_banner_and_the_model_line_agree(
    browser: Any, served: Any, width: int
) -> None:
    with FakeOpenAIServer(default="Hello from the other model") as server:
        server.model_ids = ["fake-model", "other-model"]
        url = served(GRADIO_ANALYTICS_ENABLED="False")  # the embedded default: local model
        page = _page(browser, width)
        open_app(page, url)
        expect(page.locator("#local-banner")).to_be_visible()
        expect(page.locator("#model-line")).to_contain_text("(local)")

        page.get_by_role("tab", name="Settings").click()
        # The page's own form fill (a load event of the Settings tab, not waited for by
        # open_app) must land first: landing after the typing, it put the local model
        # back and Verify checked that (CI, once).
        page.wait_for_function(SETTLED, timeout=TIMEOUT_MS)
        _field(page, "set-base-url").fill(server.url)
        expect(_field(page, "set-base-url")).to_have_value(server.url)
        page.locator("#check-endpoint").click()
        expect(page.locator("#endpoint-status")).to_contain_text("2 models", timeout=TIMEOUT_MS)
        _field(page, "set-chat-model").click()
        page.get_by_role("option", name="other-model").click()
        page.locator("#save-settings").click()
        expect(page.locator("#settings-status")).to_contain_text("Saved", timeout=TIMEOUT_MS)

        expect(_field(page, "set-chat-model")).to_have_value("other-model")
        expect(page.locator("#endpoint-status")).not_to_contain_text(
            "not in its list", timeout=TIMEOUT_MS
        )
        expect(page.locator("#endpoint-status")).not_to_contain_text("SmolLM2")
        page.get_by_role("tab", name="Chat").click()
        expect(page.locator("#local-banner")).to_be_hidden(timeout=TIMEOUT_MS)
        expect(page.locator("#model-line")).to_have_text("model: other-model")
        send(page, "hi there")
        answer = page.locator("#chatbot [data-testid='bot'] .message-content").last
        expect(answer).to_have_text("Hello from the other model", timeout=TIMEOUT_MS)
        page.context.close()


@pytest.mark.parametrize("width", WIDTHS)
def test_a_place_found_by_name_fills_the_location_the_weather_link_opens(
    browser: Any, served: Any, tmp_path: Path, width: int
) -> None:
    with FakeOpenAIServer(default=NO_LOCATION_ANSWER) as server, OpenMeteoFixture() as meteo:
        server.push("/weather", NO_LOCATION_ANSWER)
        url = served(
            GRADIO_ANALYTICS_ENABLED="False",
            COMPANION_BASE_URL=server.url,
            COMPANION_CHAT_MODEL="fake-model",
            COMPANION_TOOL_MODE="commands",
            COMPANION_WEATHER_URL=meteo.forecast_url,
            COMPANION_GEOCODING_URL=meteo.geocoding_url,
        )
        page = _page(browser, width)
        open_app(page, url)
        send(page, "what's the weather?")
        link = page.locator("#chatbot a[href='#set-location']")
        expect(link).to_have_text("set it in Settings", timeout=TIMEOUT_MS)
        link.click()
        place = _field(page, "set-place")
        expect(place).to_be_focused(timeout=TIMEOUT_MS)
        expect(place).to_be_in_viewport()

        place.fill("Springfield")  # four matches: the person picks one
        page.locator("#find-place").click()
        expect(page.locator("#place-status")).to_contain_text("Pick", timeout=TIMEOUT_MS)
        expect(_field(page, "set-latitude")).to_have_value("0")
        _field(page, "place-matches").click()
        page.get_by_role("option", name="Springfield, Illinois, United States").click()
        expect(_field(page, "set-latitude")).to_have_value("39.80172", timeout=TIMEOUT_MS)
        expect(_field(page, "set-longitude")).not_to_have_value("0")
        expect(_field(page, "set-timezone")).to_have_value("America/Chicago")

        place.fill("Bandung")  # one match: filled at once
        place.press("Enter")
        expect(_field(page, "set-timezone")).to_have_value("Asia/Jakarta", timeout=TIMEOUT_MS)
        expect(_field(page, "set-latitude")).to_have_value("-6.90389")
        place.fill("Atlantis")
        place.press("Enter")
        expect(page.locator("#place-status")).to_contain_text("No place called “Atlantis”")
        expect(_field(page, "set-timezone")).to_have_value("Asia/Jakarta")  # kept

        page.locator("#save-settings").click()
        expect(page.locator("#settings-status")).to_contain_text("Saved", timeout=TIMEOUT_MS)
        store = SqliteStore.open_home(tmp_path / "home")
        try:
            profile = store.profile()
        finally:
            store.close()
        assert profile["timezone"] == "Asia/Jakarta"
        assert float(profile["latitude"]) == pytest.approx(-6.90389)
        page.context.close()
