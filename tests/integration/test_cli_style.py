"""The real ``companion chat`` CLI with a style note: ``--style`` for one message,
``--amend`` to keep it for the rest of that session; the persona's identity stays first."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from memory.sqlite.store import SqliteStore
from prompts.templates import persona_text
from tests.support.fake_openai import FakeOpenAIServer


def chat(home: Path, server: FakeOpenAIServer, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COMPANION_", "OPENROUTER_"))}
    env.update(
        COMPANION_HOME=str(home),
        COMPANION_BASE_URL=server.url,
        COMPANION_API_KEY="chat-key",
        COMPANION_CHAT_MODEL="fake-chat",
    )
    return subprocess.run(
        [sys.executable, "-m", "app.cli", "chat", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def system_of(request: dict) -> str:
    return str(request["messages"][0]["content"])


def test_style_for_one_message_and_amend_for_the_session(tmp_path: Path) -> None:
    home = tmp_path / "home"
    yuzuki = persona_text("yuzuki")
    with FakeOpenAIServer(default="Sure.") as server:
        once = chat(home, server, "-m", "one", "--style", "Answer in haiku.")
        assert once.returncode == 0, once.stderr
        assert once.stdout.strip() == "Sure."
        store = SqliteStore.open_home(home)
        (session,) = store.list_sessions()
        assert store.style_note(session.id) is None  # one message only

        kept = chat(
            home,
            server,
            "--session",
            session.id,
            "-m",
            "two",
            "--style",
            "Reply formally.",
            "--amend",
        )
        assert kept.returncode == 0, kept.stderr
        later = chat(home, server, "--session", session.id, "-m", "three")
        assert later.returncode == 0, later.stderr
        assert store.style_note(session.id) == "Reply formally."
        assert store.profile() == {}  # the persona's identity is never overwritten

        refused = chat(home, server, "--session", session.id, "-m", "four", "--amend")
        assert refused.returncode == 2 and "--amend keeps a --style note" in refused.stderr
        removed = chat(
            home, server, "--session", session.id, "-m", "five", "--style", "", "--amend"
        )
        assert removed.returncode == 0, removed.stderr
        assert store.style_note(session.id) is None
        store.close()

    one, two, three, five = (system_of(r) for r in server.requests)
    assert one.startswith(f"{yuzuki}\n\nFor this reply: Answer in haiku.\n")
    assert two.startswith(f"{yuzuki}\n\nFor this reply: Reply formally.\n")
    assert three.startswith(f"{yuzuki}\n\nFor this reply: Reply formally.\n")
    assert five.startswith(yuzuki) and "For this reply" not in five
    users = [
        m.content for m in SqliteStore.open_home(home).messages(session.id) if m.role == "user"
    ]
    assert users == ["one", "two", "three", "five"]  # the transcript holds no note
