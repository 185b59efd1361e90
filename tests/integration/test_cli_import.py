"""The real ``companion import``: each app's export goes in with a report, a second
import adds nothing, memory_search then finds what was said there, and a bad file is
one line and exit 2 with nothing added."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from memory.sqlite.store import SqliteStore
from tests.support.exports import CHATGPT, CLAUDE, OPENWEBUI
from tools.registry import aexecute_tool


def companion(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COMPANION_", "OPENROUTER_"))}
    env.update(COMPANION_HOME=str(home), COMPANION_EMBEDDING_MODEL="off")
    return subprocess.run(
        [sys.executable, "-m", "app.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def stored(home: Path) -> tuple[list[str], int, int]:
    """The titles of the home's chats, its message count and its segment count."""
    store = SqliteStore.open_home(home)
    try:
        segments = store.conn.execute("SELECT COUNT(*) FROM segments").fetchone()[0]
        titles = sorted(s.title for s in store.list_sessions())
        return titles, store.count_messages(), segments
    finally:
        store.close()


async def recalled(home: Path, query: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """What the real memory_search tool finds in the home's history."""
    for name in [n for n in os.environ if n.startswith("COMPANION_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("COMPANION_HOME", str(home))
    monkeypatch.setenv("COMPANION_EMBEDDING_MODEL", "off")
    return str(await aexecute_tool("memory_search", {"query": query}))


@pytest.mark.parametrize(
    ("export", "source", "titles", "messages", "query", "fact"),
    [
        (CHATGPT, "ChatGPT", ["Lisbon trip", "Sourdough starter"], 9, "sourdough starter", "Clint"),
        (
            CLAUDE,
            "Claude",
            ["Choosing a rescue dog", "Remind me: my passport expires in March 2027."],
            6,
            "greyhound",
            "Pixel",
        ),
        (OPENWEBUI, "Open WebUI", ["Family", "Marathon plan"], 6, "marathon", "Berlin"),
    ],
)
async def test_an_export_is_imported_once_and_recalled(
    export: Path,
    source: str,
    titles: list[str],
    messages: int,
    query: str,
    fact: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    home = tmp_path / "home"
    first = companion(home, "import", str(export))
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith(f"Imported 2 chats with {messages} messages from {source}")
    assert "importing [" in first.stderr
    found_titles, count, segments = stored(home)
    assert (found_titles, count) == (titles, messages)
    assert segments >= 2  # each imported chat is cut into segments at once

    again = companion(home, "import", str(export))
    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith(f"Imported 0 chats with 0 messages from {source}")
    assert "2 chats were imported before" in again.stdout
    assert stored(home)[:2] == (titles, messages)

    assert fact in await recalled(home, query, monkeypatch)


def test_the_chatgpt_zip_is_imported(tmp_path: Path) -> None:
    export = tmp_path / "chatgpt-export.zip"
    with zipfile.ZipFile(export, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("conversations.json", CHATGPT.read_bytes())
        archive.writestr("chat.html", "<html></html>")
        archive.writestr("user.json", "{}")
    done = companion(tmp_path / "home", "import", str(export))
    assert done.returncode == 0, done.stderr
    assert "skipped 3: tool output" in done.stdout.splitlines()
    assert stored(tmp_path / "home")[:2] == (["Lisbon trip", "Sourdough starter"], 9)


def test_a_bad_file_is_one_line_and_exit_2_with_nothing_added(tmp_path: Path) -> None:
    bad = tmp_path / "conversations.json"
    bad.write_text(CHATGPT.read_text(encoding="utf-8")[:-300], encoding="utf-8")
    done = companion(tmp_path / "home", "import", str(bad))
    assert done.returncode == 2
    assert (
        done.stderr.strip()
        .splitlines()[-1]
        .startswith(f"companion: cannot import {bad}: malformed JSON")
    )
    assert "Traceback" not in done.stderr
    assert stored(tmp_path / "home") == ([], 0, 0)
