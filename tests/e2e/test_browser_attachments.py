"""Attachments in the browser, on a desktop and a phone (issue 25, item 5): a refused
file is a notice just above the composer, in words (no exception name, nothing added to
the chat), and the message's text stays in the composer; a PDF's text reaches the model
with the message, while the chat shows the file's name as a chip, not its text; a long
paste stays text in the composer, and a message over the limit is explained above it,
with nothing in the chat to retry."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.e2e.harness import RunningApp, bot_messages
from tests.support.pdfs import pdf_bytes

PDF_FACT = "The secret ingredient of the soup is lemongrass."
ACCEPTED = "Only images, text, Markdown and PDF files can be attached"


@pytest.fixture
def page(sized_page: Any) -> Any:
    """The app at a phone's and a desktop's size, in a new, empty chat (conftest)."""
    return sized_page


def attach(page: Any, file: Path, text: str) -> None:
    """Attach ``file`` in the composer, type ``text`` and send."""
    page.locator('#chat-input input[type="file"]').set_input_files(str(file))
    expect(page.locator("#chat-input")).to_contain_text(file.name, timeout=15_000)
    box = page.locator("#chat-input textarea")
    box.fill(text)
    box.press("Enter")


def test_a_refused_file_is_a_notice_above_the_composer_and_the_text_stays(
    page: Any, tmp_path: Path
) -> None:
    archive = tmp_path / "holiday.zip"
    archive.write_bytes(b"PK\x03\x04 not something Companion reads")
    attach(page, archive, "what is in this archive?")
    notice = page.locator("#composer-notice")
    expect(notice).to_be_visible(timeout=15_000)
    expect(notice).to_contain_text("“holiday.zip” can't be attached")
    expect(notice).to_contain_text(f"{ACCEPTED}: PNG, JPEG, WebP, GIF, .txt, .md, .pdf")
    expect(notice).not_to_contain_text("Error")
    expect(page.locator("#chat-input textarea")).to_have_value("what is in this archive?")
    expect(page.locator("#chatbot .message-row")).to_have_count(0)
    # Near the composer: right above it, not somewhere in the chat.
    said, composer = notice.bounding_box(), page.locator("#chat-input").bounding_box()
    assert 0 <= composer["y"] - (said["y"] + said["height"]) <= 40, (said, composer)
    # The text is sent as it is once the file is gone; the notice goes.
    page.locator("#chat-input textarea").press("Enter")
    expect(bot_messages(page)).to_have_count(1, timeout=20_000)
    expect(notice).to_be_hidden()


def test_a_pdfs_text_reaches_the_model_and_the_chat_shows_its_name(
    page: Any, app: RunningApp, tmp_path: Path
) -> None:
    pdf = tmp_path / "recipe.pdf"
    pdf.write_bytes(pdf_bytes(["Soup for four.", PDF_FACT]))
    asked = f"what is the secret ingredient? ({page.viewport_size['width']})"
    attach(page, pdf, asked)
    expect(bot_messages(page)).to_have_count(1, timeout=20_000)
    sent = [m for m in app.model.calls[-1]["messages"] if m.type == "human"][-1]
    assert asked in sent.content
    assert PDF_FACT in sent.content
    assert "Attached file “recipe.pdf”, 2 pages" in sent.content
    user = page.locator("#chatbot .message-row.user-row")
    expect(user).to_contain_text("recipe.pdf · PDF, 2 pages")
    expect(user).to_contain_text(asked)
    expect(user).not_to_contain_text("lemongrass")
    # A reload shows the same chip, and the next turn still has the file's text.
    page.reload()
    expect(page.locator("#chatbot .message-row.user-row")).to_contain_text(
        "recipe.pdf · PDF, 2 pages", timeout=15_000
    )
    box = page.locator("#chat-input textarea")
    box.fill("and again?")
    box.press("Enter")
    expect(bot_messages(page)).to_have_count(2, timeout=20_000)
    replayed = " ".join(str(m.content) for m in app.model.calls[-1]["messages"])
    assert PDF_FACT in replayed


def test_a_long_paste_stays_text_and_a_too_long_message_is_explained(page: Any) -> None:
    box = page.locator("#chat-input textarea")
    pasted = "tea " * 1500  # 6,000 characters: Gradio made a paste over 1,000 a file
    box.evaluate(
        """(e, text) => { const data = new DataTransfer(); data.setData('text/plain', text);
          e.dispatchEvent(new ClipboardEvent('paste', {clipboardData: data, bubbles: true,
            cancelable: true})); }""",
        pasted,
    )
    page.wait_for_timeout(500)
    expect(page.locator("#chat-input [aria-label='File thumbnail']")).to_have_count(0)
    too_long = "x" * 100_001  # over COMPANION_MAX_MESSAGE_CHARS' 100,000
    box.fill(too_long)
    box.press("Enter")
    notice = page.locator("#composer-notice")
    expect(notice).to_contain_text(
        "That message is 100,001 characters long; the limit is 100,000", timeout=15_000
    )
    expect(box).to_have_value(too_long)
    expect(page.locator("#chatbot .message-row")).to_have_count(0)  # no answer, no Retry
