"""Take the README screenshots: a weather question answered after an open tool step, on
a desktop (1440×900, with the chats sidebar) and on a phone (390×844, sidebar closed).

Run: ``.venv/bin/python -m tests.e2e.screenshot [FOLDER]`` (default docs/); it writes
``screenshot-1440.png`` and ``screenshot-390.png``, and on the desktop the search across
chats (``screenshot-search-1440.png``) and the Graph tab (``screenshot-graph-1440.png``).
The app runs on the scripted policy with the Open-Meteo fixture and Tokyo as the saved
location, in a throwaway home; nothing leaves 127.0.0.1.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

from playwright.sync_api import expect

from tests.e2e.harness import chromium, open_app, running_app, send

DEFAULT_OUT = Path(__file__).resolve().parents[2] / "docs"
SIZES = {"1440": (1440, 900), "390": (390, 844)}


def _open_last_step(page: Any) -> None:
    step = page.locator("#chatbot .thought-group").last
    step.locator(".title").click()
    expect(step.locator(".content")).to_contain_text('"temperature": 14.2')
    page.wait_for_timeout(500)  # the accordion's opening animation


def _more(page: Any, folder: Path) -> list[Path]:
    """The desktop's search across chats and its Graph tab (the last turn, kept)."""
    search = page.get_by_role("textbox", name="Search chats")
    search.fill("jasmine")
    search.press("Enter")
    results = page.locator("#chats .chat-results")
    expect(results).to_contain_text("favourite tea", timeout=15_000)
    found = folder / "screenshot-search-1440.png"
    page.screenshot(path=found)
    search.fill("")
    page.get_by_role("tab", name="Graph").click()
    expect(page.locator("#turn-trace")).to_contain_text("weather", timeout=15_000)
    page.wait_for_timeout(500)
    graph = folder / "screenshot-graph-1440.png"
    page.screenshot(path=graph, full_page=True)
    return [found, graph]


def take(folder: Path) -> list[Path]:
    """Chat in a fresh app and save a screenshot per size in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    shots = []
    with tempfile.TemporaryDirectory() as scratch:
        home = Path(scratch) / "home"
        with running_app(home) as app, chromium() as browser:
            from memory.sqlite.store import SqliteStore

            store = SqliteStore.open_home(home)
            store.set_profile({"latitude": 35.68, "longitude": 139.69, "timezone": "Asia/Tokyo"})
            store.close()
            for name, (width, height) in SIZES.items():
                page = browser.new_page(viewport={"width": width, "height": height})
                open_app(page, app.url)
                if name == "1440":
                    send(page, "Remember that my favourite tea is jasmine.")
                    expect(page.locator("#stop-turn")).to_be_hidden()
                    page.locator("#new-session").click()
                    send(page, "How's the weather outside?")
                bot = page.locator("#chatbot [data-testid='bot']").last
                expect(bot).to_contain_text("14.2")
                expect(page.locator("#stop-turn")).to_be_hidden()  # the turn is over
                _open_last_step(page)
                page.evaluate("window.scrollTo(0, 0)")
                shot = folder / f"screenshot-{name}.png"
                page.screenshot(path=shot)
                shots.append(shot)
                if name == "1440":
                    shots += _more(page, folder)
                page.close()
    return shots


if __name__ == "__main__":
    print(*take(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_OUT), sep="\n")
