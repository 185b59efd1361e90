"""Logging in to a Companion with accounts, over real HTTP (issue 19): the password check
and the token lookups run off the event loop (a login or a lookup that takes its time
holds up no other request), guesses at one person are not forgiven by another's logins,
and a person's logins are capped."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gradio as gr
import httpx
import pytest

from app.ui import launch_app
from graph.setup import People
from memory.rules.passwords import LOGIN_FREE_FAILURES, MAX_LOGINS_PER_PERSON
from memory.sqlite.accounts import SqliteAccounts
from tests.e2e.harness import free_port
from tests.support.chat_model import ScriptedChatModel

PASSWORDS = {"ann": "ann-password-1", "bob": "bob-password-2"}
WAIT = 10.0  # seconds a held call waits at most


class Hold:
    """Holds a blocking call until the test lets it go."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()

    def __call__(self) -> None:
        self.entered.set()
        self.release.wait(WAIT)


class HeldPeople(People):
    """People whose password check for the name "held" waits on ``hold``."""

    hold: Hold | None = None

    def check(self, name: str, password: str) -> bool:
        if name == "held" and self.hold is not None:
            self.hold()
        return super().check(name, password)


@dataclass
class WithAccounts:
    url: str
    demo: gr.Blocks
    people: HeldPeople
    home: Path

    def login(self, name: str, password: str) -> int:
        with httpx.Client(base_url=self.url, timeout=WAIT * 2) as client:
            return client.post("/login", data={"username": name, "password": password}).status_code


@pytest.fixture
def with_accounts(tmp_path: Path) -> Iterator[WithAccounts]:
    home = tmp_path / "home"
    accounts = SqliteAccounts.open_home(home)
    for name, password in PASSWORDS.items():
        accounts.add(name, password)
    flags: dict[str, Any] = {"home": home, "provider": "openai-compatible"}
    people = HeldPeople(flags, env={}, chat_model=ScriptedChatModel(script=["hi"]))
    demo, url = launch_app(people, port=free_port())
    try:
        yield WithAccounts(url.rstrip("/"), demo, people, home)
    finally:
        demo.close()


def answered_meanwhile(with_accounts: WithAccounts, hold: Hold) -> int:
    """While ``hold`` holds a call inside the app, the status of an unrelated request."""
    assert hold.entered.wait(WAIT), "the held call never started"
    try:
        with httpx.Client(base_url=with_accounts.url, timeout=3) as other:
            return other.get("/theme.css").status_code
    finally:
        hold.release.set()


def test_a_password_check_holds_up_no_other_request(with_accounts: WithAccounts) -> None:
    with_accounts.people.hold = hold = Hold()
    with ThreadPoolExecutor(1) as pool:
        login = pool.submit(with_accounts.login, "held", "a guess")
        assert answered_meanwhile(with_accounts, hold) == 200
        assert login.result() == 400


def test_a_token_lookup_holds_up_no_other_request(with_accounts: WithAccounts) -> None:
    hold, registry = Hold(), with_accounts.people.accounts
    real = registry.login_name

    def slow(token: str) -> str | None:
        hold()
        return real(token)

    registry.login_name = slow  # type: ignore[method-assign]
    cookie = {f"access-token-unsecure-{with_accounts.demo.server_app.cookie_id}": "made-up"}
    with (
        ThreadPoolExecutor(1) as pool,
        httpx.Client(base_url=with_accounts.url, cookies=cookie, timeout=WAIT * 2) as forged,
    ):
        check = pool.submit(forged.get, "/gradio_api/login_check")
        assert answered_meanwhile(with_accounts, hold) == 200
        assert check.result().status_code == 401


def test_guesses_at_ann_between_bobs_logins_are_held_back(with_accounts: WithAccounts) -> None:
    """The attack of issue 19: a success of bob's used to wipe the address's failures."""
    guesses = []
    for _ in range(2 * LOGIN_FREE_FAILURES):
        guesses.append(with_accounts.login("ann", "a guess"))
        assert with_accounts.login("bob", PASSWORDS["bob"]) == 200
    assert guesses == [400] * LOGIN_FREE_FAILURES + [429] * LOGIN_FREE_FAILURES
    assert with_accounts.login("ann", PASSWORDS["ann"]) == 429


def test_a_persons_logins_are_capped(with_accounts: WithAccounts) -> None:
    for _ in range(MAX_LOGINS_PER_PERSON + 5):
        assert with_accounts.login("bob", PASSWORDS["bob"]) == 200
    assert with_accounts.login("ann", PASSWORDS["ann"]) == 200
    with closing(sqlite3.connect(with_accounts.home / "accounts.db")) as conn:
        rows = dict(conn.execute("SELECT name, COUNT(*) FROM logins GROUP BY name").fetchall())
    assert rows == {"bob": MAX_LOGINS_PER_PERSON, "ann": 1}
