"""A known failure at the terminal is one line on stderr and an exit code (2: what the
command was given is wrong; 1: something it needs failed), never a traceback; the
traceback is in ``companion.log``, and ``--log-level debug`` shows it on stderr too.

Each path runs the real ``companion`` as a subprocess: a provider answering HTTP 500 (a
tiny local server), a Postgres database that is down (nothing listens) or was never
migrated (tests/support/postgres.py's server), and a bad setting; for the terminal chat,
the app's start-up, ``doctor``, ``user add``/``list``, ``undo-sql``, ``memory reindex``
and ``db migrate``."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.support.postgres import PostgresServer

DOWN = "postgresql://companion@127.0.0.1:1/companion"  # nothing listens on port 1
PASSWORD = "a long enough password\n"  # what `companion user add` reads from stdin
SERVE = ("--port", "0")  # the app: it must stop before it serves
COMMANDS = {
    "chat": ("chat", "-m", "hi"),
    "serve": SERVE,
    "user add": ("user", "add", "ann"),
    "user list": ("user", "list"),
    "undo-sql": ("undo-sql",),
    "memory reindex": ("memory", "reindex"),
}


class Answers500(BaseHTTPRequestHandler):
    """Every request fails as a provider's outage does: HTTP 500 with an error body."""

    def _fail(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = b'{"error": {"message": "the provider is down"}}'
        self.send_response(500)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _fail

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the test reads the CLI's stderr, not the server's."""


@pytest.fixture(scope="module")
def failing() -> Iterator[str]:
    """The base URL of an OpenAI-compatible endpoint that answers everything with 500."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), Answers500)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def never_migrated() -> Iterator[str]:
    """The app role's URL of a Postgres database nobody ran `companion db migrate` on."""
    with PostgresServer(vector=False) as server:
        yield server.url


def companion(home: Path, failing: str, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The real ``companion`` in ``home`` against the failing endpoint (every outside URL
    is that local server: nothing leaves the machine), with ``env`` on top."""
    full = {k: v for k, v in os.environ.items() if not k.startswith(("COMPANION_", "OPENROUTER"))}
    full |= {
        "COMPANION_HOME": str(home),
        "COMPANION_BASE_URL": failing,
        "COMPANION_API_KEY": "chat-key",
        "COMPANION_CHAT_MODEL": "fake-chat",
        "COMPANION_EMBEDDING_MODEL": "off",
        "COMPANION_WEB_SEARCH_URL": failing,
        "COMPANION_WEATHER_URL": failing,
        "COMPANION_GEOCODING_URL": failing,
        **env,
    }
    return subprocess.run(
        [sys.executable, "-m", "app.cli", *args],
        input=PASSWORD,
        capture_output=True,
        text=True,
        timeout=120,
        env=full,
    )


def said_once(done: subprocess.CompletedProcess[str], code: int, words: str) -> str:
    """The one line stderr says the failure in (the chat's ``[model: …]`` banner aside),
    after checking the exit code and that no traceback reached stderr."""
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == code, done.stderr
    lines = [line for line in done.stderr.splitlines() if not line.startswith("[")]
    assert len(lines) == 1, done.stderr
    assert words in lines[0], done.stderr
    return lines[0]


def logged_traceback(home: Path, words: str) -> None:
    """The log file has the failure with its traceback."""
    log = (home / "logs" / "companion.log").read_text()
    assert "Traceback (most recent call last)" in log
    assert words in log


def test_a_provider_error_is_one_line_and_its_traceback_is_in_the_log(
    tmp_path: Path, failing: str
) -> None:
    done = companion(tmp_path, failing, "chat", "-m", "hi")
    assert "HTTP 500" in done.stdout  # the answer says what happened
    line = said_once(done, 1, "the provider failed")
    assert "500" in line
    logged_traceback(tmp_path, "the provider is down")
    assert "chat-key" not in (tmp_path / "logs" / "companion.log").read_text()


def test_log_level_debug_shows_the_traceback(tmp_path: Path, failing: str) -> None:
    done = companion(tmp_path, failing, "--log-level", "debug", "chat", "-m", "hi")
    assert done.returncode == 1
    assert "Traceback (most recent call last)" in done.stderr


@pytest.mark.parametrize("command", [*COMMANDS, "db migrate"])
def test_a_database_that_is_down_is_one_line(tmp_path: Path, failing: str, command: str) -> None:
    admin = {"COMPANION_DATABASE_ADMIN_URL": DOWN.replace("companion@", "admin@")}
    args = ("db", "migrate") if command == "db migrate" else COMMANDS[command]
    done = companion(tmp_path, failing, *args, COMPANION_DATABASE_URL=DOWN, **admin)
    said_once(done, 1, "Connection refused")
    logged_traceback(tmp_path, "Connection refused")


@pytest.mark.parametrize("command", COMMANDS)
def test_a_database_never_migrated_is_one_line_naming_the_command(
    tmp_path: Path, failing: str, never_migrated: str, command: str
) -> None:
    done = companion(tmp_path, failing, *COMMANDS[command], COMPANION_DATABASE_URL=never_migrated)
    said_once(done, 1, "run `companion db migrate`")
    logged_traceback(tmp_path, "companion db migrate")


@pytest.mark.parametrize("url", [DOWN, "never migrated"])
def test_doctor_marks_the_database_and_exits_1(
    tmp_path: Path, failing: str, never_migrated: str, url: str
) -> None:
    url = never_migrated if url == "never migrated" else url
    done = companion(tmp_path, failing, "doctor", COMPANION_DATABASE_URL=url)
    said_once(done, 1, "the chat path cannot answer")
    database = [line for line in done.stdout.splitlines() if line.startswith("✗ database")]
    assert len(database) == 1, done.stdout
    logged_traceback(tmp_path, "doctor: ")


@pytest.mark.parametrize("command", ["chat", "serve", "doctor", "memory reindex"])
def test_a_bad_setting_is_one_line_and_exit_2(tmp_path: Path, failing: str, command: str) -> None:
    args = ("doctor",) if command == "doctor" else COMMANDS[command]
    done = companion(tmp_path, failing, *args, COMPANION_TIMEZONE="Mars/Olympus_Mons")
    said_once(done, 2, "COMPANION_TIMEZONE")
    logged_traceback(tmp_path, "Mars/Olympus_Mons")


@pytest.mark.parametrize("args", [("user", "add", "ann"), ("db", "migrate")])
def test_a_bad_database_url_is_one_line_and_exit_2(
    tmp_path: Path, failing: str, args: tuple[str, ...]
) -> None:
    done = companion(tmp_path, failing, *args, COMPANION_DATABASE_URL="mysql://db/companion")
    said_once(done, 2, "only a Postgres URL")
    logged_traceback(tmp_path, "only a Postgres URL")
