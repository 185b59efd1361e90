"""Browser fixtures: the app around the scripted policy, and Debian's chromium.

Every browser test is marked ``browser`` and skipped (with the reason) only when
/usr/bin/chromium is missing. Pages record every request so a test can check that
nothing left 127.0.0.1.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.e2e.harness import (
    ARTIFACTS,
    CHROMIUM,
    RunningApp,
    chromium,
    new_chat,
    open_app,
    running_app,
)

SIZES = {"phone": (390, 844), "desktop": (1440, 900)}
# An expectation without a timeout of its own waits up to 15 s, not Playwright's 5: under
# CI's load (four workers, each with its app and chromium) a round trip to the app took
# over 5 s now and then (a save's "Saved", a second tab's Stop). A timeout given stays.
expect.set_options(timeout=15_000)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test here ``browser``; skip them all if chromium is not installed."""
    skip = pytest.mark.skip(reason=f"Debian chromium not found at {CHROMIUM}")
    for item in items:
        if Path(item.fspath).parent == Path(__file__).parent:
            item.add_marker(pytest.mark.browser)
            if not CHROMIUM.exists():
                item.add_marker(skip)


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningApp]:
    """One app per test module (tests start their own conversation)."""
    with running_app(tmp_path_factory.mktemp("e2e") / "home") as running:
        yield running


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One chromium per module: playwright's sync API keeps an event loop running in this
    thread while it lives, which async tests in later modules must not inherit."""
    with chromium() as launched:
        yield launched


@pytest.fixture
def artifacts() -> Path:
    """Where screenshots go (git-ignored)."""
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


@pytest.fixture
def page(browser: Any, app: RunningApp) -> Iterator[Any]:
    """A fresh browser context on the app, in a new conversation; requests recorded."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    tab = context.new_page()
    tab.requests = []
    tab.on("request", lambda request: tab.requests.append(request.url))
    open_app(tab, app.url)
    new_chat(tab)
    yield tab
    context.close()


@pytest.fixture(params=list(SIZES))
def sized_page(request: pytest.FixtureRequest, browser: Any, app: RunningApp) -> Iterator[Any]:
    """The app on a phone (390×844) and on a desktop (1440×900), in a new, empty chat (New
    chat pressed from the page: on a phone the sidebar that holds it is closed)."""
    width, height = SIZES[request.param]
    context = browser.new_context(viewport={"width": width, "height": height})
    tab = context.new_page()
    open_app(tab, app.url)
    tab.evaluate("document.querySelector('#new-session').click()")
    expect(tab.locator("#chatbot .message-row")).to_have_count(0, timeout=15_000)
    yield tab
    context.close()
