"""The Memories tab's "Your data" in a real headless chromium: an export uploaded shows
its progress while a message sent meanwhile is answered, then the importer's report, and
its chats appear in the sidebar; a file over the upload limit is refused by a message
that names the limit; "Export my data" gives a zip to download."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

from playwright.sync_api import expect

from app.exports import MANIFEST
from tests.e2e.harness import bot_messages, send

TIMEOUT_MS = 30_000
IMPORT_MS = 90_000  # the whole 60,000-message import: 2.5 times slower under a heavy load
CHATS, MESSAGES = 600, 100  # a few seconds of importing on this machine
OVER_LIMIT = 21 * 1024 * 1024  # the app refuses uploads over 20 MB


def claude_export(folder: Path) -> Path:
    """A Claude ``conversations.json`` (its export's shape: see app/imports/claude.py) of
    ``CHATS`` chats of ``MESSAGES`` messages each."""
    conversations = [
        {
            "uuid": f"chat-{n}",
            "name": f"Old chat {n}",
            "created_at": "2024-07-02T18:04:11Z",
            "chat_messages": [
                {
                    "uuid": f"chat-{n}-{m}",
                    "sender": "human" if m % 2 == 0 else "assistant",
                    "text": f"message {m} of chat {n}, about jasmine tea",
                    "created_at": "2024-07-02T18:04:12Z",
                }
                for m in range(MESSAGES)
            ],
        }
        for n in range(CHATS)
    ]
    path = folder / "conversations.json"
    path.write_text(json.dumps(conversations))
    return path


def test_a_history_is_imported_while_the_chat_goes_on_then_all_of_it_exported(
    page: Any, tmp_path: Path, artifacts: Path
) -> None:
    page.get_by_role("tab", name="Memories").click()
    help_text = page.locator("#import-help")
    expect(help_text).to_contain_text("Up to 20 MB per file")
    status = page.locator("#data-status")
    upload = page.locator("#import-file input[type=file]")

    too_big = tmp_path / "too-big.json"
    with too_big.open("wb") as out:
        out.truncate(OVER_LIMIT)
    upload.set_input_files(str(too_big))
    expect(page.get_by_text("maximum allowed size of 20")).to_be_visible(timeout=TIMEOUT_MS)

    upload.set_input_files(str(claude_export(tmp_path)))
    expect(status).to_contain_text("⏳ Importing conversations", timeout=TIMEOUT_MS)
    page.screenshot(path=artifacts / "import-progress.png")

    page.get_by_role("tab", name="Chat").click()
    send(page, "hello while importing")
    expect(bot_messages(page).last).to_contain_text(
        "You said: hello while importing", timeout=TIMEOUT_MS
    )

    page.get_by_role("tab", name="Memories").click()
    expect(status).to_contain_text(
        f"✅ Imported {CHATS} chats with {CHATS * MESSAGES:,} messages from Claude",
        timeout=IMPORT_MS,
    )
    expect(page.locator("#import-file")).to_contain_text("Drop File Here")  # for the next
    page.screenshot(path=artifacts / "import-report.png")
    expect(page.locator("#chat-list")).to_contain_text("Old chat 599", timeout=TIMEOUT_MS)

    page.locator("#export-data").click()
    zipped = page.locator("#export-zip")
    expect(zipped).to_contain_text("Download the zip", timeout=TIMEOUT_MS)
    expect(status).to_contain_text(f"✅ Exported {CHATS + 1} chats")  # and the one sent
    page.screenshot(path=artifacts / "export-ready.png")
    with page.expect_download() as downloading:
        zipped.click()
    with zipfile.ZipFile(downloading.value.path()) as archive:
        assert MANIFEST in archive.namelist()
