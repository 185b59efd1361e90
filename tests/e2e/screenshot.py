"""Take the README screenshot: a weather question answered after an open tool step.

Run: ``.venv/bin/python -m tests.e2e.screenshot [OUT]`` (default docs/screenshot.png).
The app runs on the scripted policy with the Open-Meteo fixture and Tokyo as the saved
location, in a throwaway home; nothing leaves 127.0.0.1.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from playwright.sync_api import expect

from tests.e2e.harness import chromium, running_app, send

DEFAULT_OUT = Path(__file__).resolve().parents[2] / "docs" / "screenshot.png"


def take(out: Path) -> Path:
    """Chat about the weather in a fresh app and save a screenshot of it to ``out``."""
    with tempfile.TemporaryDirectory() as folder:
        home = Path(folder) / "home"
        with running_app(home) as app, chromium() as browser:
            from memory.store import Store

            store = Store.open_home(home)
            store.set_profile({"latitude": 35.68, "longitude": 139.69, "timezone": "Asia/Tokyo"})
            store.close()
            page = browser.new_page(viewport={"width": 1100, "height": 900})
            page.goto(app.url)
            page.locator("#chat-input textarea").wait_for()
            send(page, "How's the weather outside?")
            step = page.locator("#chatbot .thought-group").last
            expect(page.locator("#chatbot [data-testid='bot']").last).to_contain_text("14.2")
            expect(page.locator("#chat-input textarea")).to_be_enabled()  # the turn is over
            step.locator(".title").click()
            expect(step.locator(".content")).to_contain_text('"temperature": 14.2')
            page.wait_for_timeout(500)  # the accordion's opening animation
            page.evaluate("window.scrollTo(0, 0)")
            out.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=out)
    return out


if __name__ == "__main__":
    print(take(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_OUT))
