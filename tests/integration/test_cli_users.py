"""The real ``companion user`` and ``companion chat --user`` commands: each person's chat
goes to their own database, and once accounts are on the terminal must say who it is."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from memory.sqlite.accounts import SqliteAccounts
from memory.sqlite.store import SqliteStore
from tests.support.fake_openai import FakeOpenAIServer


def companion(
    home: Path, *args: str, stdin: str = "", server: FakeOpenAIServer | None = None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COMPANION_", "OPENROUTER_"))}
    env["COMPANION_HOME"] = str(home)
    if server is not None:
        env.update(
            COMPANION_BASE_URL=server.url,
            COMPANION_API_KEY="chat-key",
            COMPANION_CHAT_MODEL="fake-chat",
        )
    return subprocess.run(
        [sys.executable, "-m", "app.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def user_texts(home: Path) -> set[str]:
    store = SqliteStore.open_home(home)
    try:
        return {
            message.content
            for session in store.list_sessions()
            for message in store.messages(session.id)
            if message.role == "user"
        }
    finally:
        store.close()


def test_add_and_list_people_with_the_password_from_stdin(tmp_path: Path) -> None:
    first = companion(tmp_path, "user", "add", "ann", stdin="ann's password\n")
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith("Added ann.")
    assert "owns the conversations already in" in first.stdout
    assert "asks everyone to log in" in first.stdout
    second = companion(tmp_path, "user", "add", "bob", stdin="bob's password\n")
    assert second.returncode == 0, second.stderr
    assert second.stdout.startswith("Added bob.") and "owns" not in second.stdout

    accounts = SqliteAccounts.open_home(tmp_path)
    assert accounts.check("ann", "ann's password") is not None  # the newline is not in it
    assert accounts.check("bob", "bob's password") is not None

    listed = companion(tmp_path, "user", "list")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines() == [f"ann\t{tmp_path}", f"bob\t{tmp_path / 'people' / '2'}"]


def test_user_errors_exit_2_with_the_reason(tmp_path: Path) -> None:
    short = companion(tmp_path, "user", "add", "ann", stdin="short\n")
    assert short.returncode == 2 and "at least 8" in short.stderr
    bad = companion(tmp_path, "user", "add", "a/b", stdin="long enough\n")
    assert bad.returncode == 2 and "not a valid name" in bad.stderr
    assert companion(tmp_path, "user", "add", "ann", stdin="long enough\n").returncode == 0
    taken = companion(tmp_path, "user", "add", "ANN", stdin="long enough\n")
    assert taken.returncode == 2 and "taken" in taken.stderr


def test_passwd_replaces_a_password(tmp_path: Path) -> None:
    assert companion(tmp_path, "user", "add", "ann", stdin="first password\n").returncode == 0
    done = companion(tmp_path, "user", "passwd", "ann", stdin="second password\n")
    assert done.returncode == 0, done.stderr
    accounts = SqliteAccounts.open_home(tmp_path)
    assert accounts.check("ann", "first password") is None
    assert accounts.check("ann", "second password") is not None
    unknown = companion(tmp_path, "user", "passwd", "nobody", stdin="third password\n")
    assert unknown.returncode == 2 and "no user nobody" in unknown.stderr


def test_each_person_chats_in_their_own_database(tmp_path: Path) -> None:
    with FakeOpenAIServer(default="Hello.") as server:
        before = companion(tmp_path, "chat", "-m", "from before accounts", server=server)
        assert before.returncode == 0, before.stderr
        assert companion(tmp_path, "user", "add", "ann", stdin="ann's password\n").returncode == 0
        assert companion(tmp_path, "user", "add", "bob", stdin="bob's password\n").returncode == 0

        ann = companion(tmp_path, "chat", "--user", "ann", "-m", "hi from ann", server=server)
        assert ann.returncode == 0, ann.stderr
        assert ann.stdout.strip() == "Hello."
        bob = companion(tmp_path, "chat", "--user", "BOB", "-m", "hi from bob", server=server)
        assert bob.returncode == 0, bob.stderr

    # ann adopted the home's database, with what was said before accounts existed
    assert user_texts(tmp_path) == {"from before accounts", "hi from ann"}
    assert (tmp_path / "people" / "2" / "companion.db").is_file()
    assert user_texts(tmp_path / "people" / "2") == {"hi from bob"}


def test_chat_as_an_unknown_user_is_refused(tmp_path: Path) -> None:
    done = companion(tmp_path, "chat", "--user", "nobody", "-m", "hi")
    assert done.returncode == 2
    assert "no user nobody (add one with `companion user add nobody`)" in done.stderr
    assert not (tmp_path / "companion.db").exists()  # refused before opening anything


def test_once_accounts_are_on_chat_needs_a_user(tmp_path: Path) -> None:
    assert companion(tmp_path, "user", "add", "ann", stdin="ann's password\n").returncode == 0
    assert companion(tmp_path, "user", "add", "bob", stdin="bob's password\n").returncode == 0
    done = companion(tmp_path, "chat", "-m", "hi")
    assert done.returncode == 2
    assert "ann, bob" in done.stderr and "--user NAME" in done.stderr
