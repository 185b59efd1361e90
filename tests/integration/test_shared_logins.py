"""Two app processes behind one load balancer share their logins and their count of
failed logins, on both backends.

Gradio keeps login tokens in a dict of its own process, under a cookie name random per
process: a person logged in through one process would meet the login form on the next
request the balancer sends to the other. ``app.logins.SharedLogins`` keeps them in the
accounts registry instead (accounts.db, or Postgres's ``logins``). Here two apps, each
with its own ``People`` as two processes would have, serve one home (or one database).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gradio as gr
import httpx
import psycopg
import pytest

from app.logins import SharedLogins
from app.ui import launch_app
from graph.setup import People
from memory.rules.passwords import LOGIN_FREE_FAILURES
from tests.e2e.harness import free_port
from tests.support.chat_model import ScriptedChatModel
from tests.support.pg_people import BACKENDS, migrated_postgres, open_accounts
from tests.support.postgres import PostgresServer

PASSWORDS = {"ann": "ann-password-1", "bob": "bob-password-2"}


@dataclass
class Two:
    """Two running apps over one home (or database), and where logins are kept."""

    urls: tuple[str, str]
    demos: tuple[gr.Blocks, gr.Blocks]
    home: Path
    server: PostgresServer | None

    def stored_logins(self) -> list[tuple[str, str]]:
        """(token hash, name) of every login kept, read past the app."""
        query = "SELECT token_hash, name FROM logins ORDER BY name"
        if self.server is None:
            with closing(sqlite3.connect(self.home / "accounts.db")) as conn:
                return [tuple(row) for row in conn.execute(query)]  # type: ignore[misc]
        with psycopg.connect(self.server.admin_url) as conn:
            return [tuple(row) for row in conn.execute(query)]  # type: ignore[misc]

    def recheck_at_once(self) -> None:
        """Let each app ask the registry on every request (not once a minute)."""
        for demo in self.demos:
            tokens = demo.server_app.tokens
            assert isinstance(tokens, SharedLogins)
            tokens.RECHECK_SECONDS = 0


@pytest.fixture(scope="module")
def postgres() -> Iterator[PostgresServer]:
    with migrated_postgres() as server:
        yield server


@pytest.fixture(params=BACKENDS)
def two(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Two]:
    backend = request.param
    server = request.getfixturevalue("postgres") if backend == "postgres" else None
    if server is not None:
        with psycopg.connect(server.admin_url, autocommit=True) as conn:
            conn.execute("TRUNCATE users, logins, login_failures RESTART IDENTITY")
    home = tmp_path / "home"
    env, accounts = open_accounts(backend, home, server)
    for name, password in PASSWORDS.items():
        accounts.add(name, password)
    flags: dict[str, Any] = {"home": home, "provider": "openai-compatible"}
    launched = [
        launch_app(People(flags, env=env, chat_model=ScriptedChatModel(script=["hi"])), port=p)
        for p in (free_port(), free_port())
    ]
    try:
        yield Two(
            (launched[0][1].rstrip("/"), launched[1][1].rstrip("/")),
            (launched[0][0], launched[1][0]),
            home,
            server,
        )
    finally:
        for demo, _ in launched:
            demo.close()


def log_in(url: str, name: str, password: str | None = None) -> httpx.Client:
    client = httpx.Client(base_url=url, timeout=10, trust_env=False)
    answer = client.post("/login", data={"username": name, "password": password or PASSWORDS[name]})
    assert answer.status_code == 200, answer.text
    return client


def on(url: str, client: httpx.Client) -> httpx.Client:
    """The same browser (its cookies) sent to another process."""
    return httpx.Client(base_url=url, timeout=10, cookies=client.cookies, trust_env=False)


def logged_in(client: httpx.Client) -> bool:
    answer = client.get("/gradio_api/login_check")
    assert answer.status_code in (200, 401), answer.text
    return answer.status_code == 200


def test_a_login_through_one_process_is_known_to_the_other(two: Two) -> None:
    a, b = two.urls
    with closing(log_in(a, "bob")) as at_a, closing(on(b, at_a)) as at_b:
        assert logged_in(at_a) and logged_in(at_b)
        assert at_b.get("/gradio_api/user").json() == "bob"
    with httpx.Client(base_url=b, timeout=10, trust_env=False) as stranger:
        assert not logged_in(stranger)
    # Only a hash of the token is kept, never the cookie itself.
    stored = two.stored_logins()
    assert [name for _, name in stored] == ["bob"]
    assert all(len(digest) == 64 and digest not in str(at_a.cookies) for digest, _ in stored)


def test_a_made_up_cookie_is_nobody(two: Two) -> None:
    a, b = two.urls
    with closing(log_in(a, "ann")) as real:
        forged = httpx.Cookies()
        for cookie in real.cookies.jar:
            forged.set(cookie.name, "made-up-token", domain=cookie.domain)
    with httpx.Client(base_url=b, timeout=10, cookies=forged, trust_env=False) as client:
        assert not logged_in(client)


def test_logging_out_through_one_process_ends_the_login_everywhere(two: Two) -> None:
    two.recheck_at_once()
    a, b = two.urls
    with closing(log_in(a, "ann")) as at_a, closing(on(b, at_a)) as at_b:
        assert logged_in(at_b)
        at_b.get("/logout", follow_redirects=False)
        assert not logged_in(on(a, at_a))
    assert two.stored_logins() == []


def test_a_new_password_ends_every_login(two: Two) -> None:
    two.recheck_at_once()
    a, b = two.urls
    _, accounts = open_accounts("postgres" if two.server else "sqlite", two.home, two.server)
    with closing(log_in(a, "ann")) as ann, closing(log_in(b, "bob")) as bob:
        accounts.set_password("ann", "a brand new password")
        assert not logged_in(on(b, ann))
        assert logged_in(on(a, bob))  # bob's login is his own


def test_failed_logins_through_one_process_hold_back_the_other(two: Two) -> None:
    a, b = two.urls
    with httpx.Client(base_url=a, timeout=10, trust_env=False) as at_a:
        for _ in range(LOGIN_FREE_FAILURES):
            wrong = at_a.post("/login", data={"username": "ann", "password": "a guess"})
            assert wrong.status_code == 400
    with httpx.Client(base_url=b, timeout=10, trust_env=False) as at_b:
        right = at_b.post("/login", data={"username": "ann", "password": PASSWORDS["ann"]})
        assert right.status_code == 429
    with closing(log_in(b, "bob")) as bob:  # bob's own budget is untouched
        assert logged_in(bob)
