"""In a real chromium: what a model writes never makes the browser fetch a remote URL,
and the app's own images still show under its Content-Security-Policy."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from evals.fixtures import ImageFixture, cat_image
from tests.e2e.harness import send

TIMEOUT_MS = 15_000


@pytest.fixture
def elsewhere() -> Iterator[ImageFixture]:
    """Another origin (a loopback port that is not the app's), recording what reaches it."""
    with ImageFixture() as server:
        yield server


def test_a_model_written_image_is_a_link_and_never_fetched(
    page: Any, elsewhere: ImageFixture
) -> None:
    pin_url = f"{elsewhere.image_url()}?pin=4321"
    send(page, f"show me a picture {pin_url}")
    answer = page.locator("#chatbot [data-testid='bot'] .message-content").last
    expect(answer).to_contain_text("Here it is:", timeout=TIMEOUT_MS)
    expect(answer.locator(f"a[href='{pin_url}']")).to_have_text("pin")
    expect(answer).to_contain_text('img src="')  # the tag is shown as text
    assert answer.locator("img").count() == 0
    page.wait_for_timeout(500)
    assert elsewhere.requests == []


def test_the_policy_blocks_a_remote_image_even_if_one_gets_in(
    page: Any, elsewhere: ImageFixture
) -> None:
    blocked = page.evaluate(
        """(url) => new Promise((resolve) => {
            document.addEventListener("securitypolicyviolation",
                (event) => resolve([event.violatedDirective, event.blockedURI]), {once: true});
            const img = document.createElement("img");
            img.src = url;
            document.body.appendChild(img);
        })""",
        f"{elsewhere.image_url()}?pin=4321",
    )
    assert blocked == ["img-src", f"{elsewhere.image_url()}?pin=4321"]
    page.wait_for_timeout(500)
    assert elsewhere.requests == []


def test_an_uploaded_image_still_shows(page: Any, tmp_path: Path) -> None:
    upload = tmp_path / "cat.png"
    upload.write_bytes(cat_image("black"))
    page.locator("#chat-input input[type='file']").set_input_files(str(upload))
    send(page, "what is this?")
    shown = page.locator("#chatbot [data-testid='user'] img").last
    expect(shown).to_be_visible(timeout=TIMEOUT_MS)
    expect(shown).to_have_js_property("complete", True)
    assert shown.evaluate("img => img.naturalWidth") > 0
