"""Logins as ``app.logins`` makes them: the throttle's budgets over the real SQLite
registry (each name from each address, each address, each name from strangers), what the
gate answers over HTTP (Starlette's TestClient), and ``SharedLogins``' memory of refused
tokens."""

from __future__ import annotations

from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from app.logins import (
    MAX_LOGIN_BODY,
    LoggedIn,
    LoginGate,
    Logins,
    SharedLogins,
    Throttled,
    WrongPassword,
    is_public,
    single_password,
    without_api_info,
)
from memory.rules.passwords import (
    ACCOUNT_FREE_FAILURES,
    ADDRESS_FREE_FAILURES,
    FIRST_LOCK_SECONDS,
    LOGIN_FREE_FAILURES,
    MAX_LOCK_SECONDS,
    lock_seconds,
)
from memory.sqlite.accounts import SqliteAccounts

PASSWORDS = {"ann": "ann-password-1", "bob": "bob-password-2"}
HOME = "10.0.0.1"  # the address ann and bob log in from
ATTACKER = "10.6.6.6"


class Clock:
    """A wall clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


def check(name: str, password: str) -> bool:
    return PASSWORDS.get(name.lower()) == password


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def logins(tmp_path: Path, clock: Clock) -> Logins:
    registry = SqliteAccounts.open_home(tmp_path)
    made = Logins.over(registry, check, str(tmp_path))
    made.clock = clock
    return made


def guess(logins: Logins, name: str, address: str, times: int = 1) -> list[object]:
    return [logins.attempt(name, "a guess", address) for _ in range(times)]


def test_a_lock_starts_after_the_free_failures_doubles_and_is_capped() -> None:
    assert lock_seconds(LOGIN_FREE_FAILURES - 1, LOGIN_FREE_FAILURES) == 0
    assert lock_seconds(LOGIN_FREE_FAILURES, LOGIN_FREE_FAILURES) == FIRST_LOCK_SECONDS
    assert lock_seconds(LOGIN_FREE_FAILURES + 1, LOGIN_FREE_FAILURES) == 2 * FIRST_LOCK_SECONDS
    assert lock_seconds(10**9, LOGIN_FREE_FAILURES) == MAX_LOCK_SECONDS


def test_after_five_failures_even_the_right_password_waits(logins: Logins, clock: Clock) -> None:
    assert guess(logins, "ann", HOME, LOGIN_FREE_FAILURES) == [WrongPassword()] * 5
    assert logins.attempt("ann", PASSWORDS["ann"], HOME) == Throttled(FIRST_LOCK_SECONDS)
    clock.now += FIRST_LOCK_SECONDS
    assert guess(logins, "ann", HOME) == [WrongPassword()]  # the sixth: locked twice as long
    clock.now += FIRST_LOCK_SECONDS
    assert isinstance(logins.attempt("ann", PASSWORDS["ann"], HOME), Throttled)
    clock.now += FIRST_LOCK_SECONDS
    assert isinstance(logins.attempt("ann", PASSWORDS["ann"], HOME), LoggedIn)
    assert guess(logins, "ann", HOME) == [WrongPassword()]  # her success forgave her failures


def test_another_persons_logins_never_reset_the_guesses_at_ann(logins: Logins) -> None:
    """The attack of issue 19: guesses at ann interleaved with bob's real logins, from
    one address (one process here; the registry is what every process shares)."""
    outcomes = []
    for _ in range(3 * LOGIN_FREE_FAILURES):
        outcomes.extend(guess(logins, "ann", HOME))
        assert isinstance(logins.attempt("bob", PASSWORDS["bob"], HOME), LoggedIn)
    assert outcomes.count(WrongPassword()) == LOGIN_FREE_FAILURES
    assert all(isinstance(o, Throttled) for o in outcomes[LOGIN_FREE_FAILURES:])


def test_guesses_at_many_names_from_one_address_lock_that_address(logins: Logins) -> None:
    for n in range(ADDRESS_FREE_FAILURES):
        assert guess(logins, f"name{n}", ATTACKER) == [WrongPassword()]
    assert isinstance(logins.attempt("bob", PASSWORDS["bob"], ATTACKER), Throttled)
    assert isinstance(logins.attempt("bob", PASSWORDS["bob"], HOME), LoggedIn)


def test_guesses_from_many_addresses_lock_out_strangers_but_not_ann_at_home(
    logins: Logins,
) -> None:
    assert isinstance(logins.attempt("ann", PASSWORDS["ann"], HOME), LoggedIn)
    for n in range(ACCOUNT_FREE_FAILURES):
        assert guess(logins, "ANN", f"10.9.{n // 250}.{n % 250}") == [WrongPassword()]
    assert isinstance(logins.attempt("ann", PASSWORDS["ann"], "10.1.1.1"), Throttled)
    assert isinstance(logins.attempt("ann", PASSWORDS["ann"], HOME), LoggedIn)


def test_failures_are_forgotten_after_a_quiet_hour(logins: Logins, clock: Clock) -> None:
    guess(logins, "ann", HOME, LOGIN_FREE_FAILURES)
    clock.now += 3601
    assert guess(logins, "ann", HOME, LOGIN_FREE_FAILURES - 1) == [WrongPassword()] * 4


def test_one_password_for_one_user() -> None:
    one = single_password("companion", "s3cret")
    assert one("companion", "s3cret")
    assert not one("companion", "s3cret!") and not one("ann", "s3cret")


def app_behind_the_gate(logins: Logins) -> Starlette:
    """A stand-in for Gradio: every route answers who asked."""

    async def whoami(request: Request) -> PlainTextResponse:
        return PlainTextResponse(str(request.scope["state"].get("companion_user")))

    async def page(request: Request) -> PlainTextResponse:
        html = '<script>window.gradio_api_info = {"named_endpoints": {"/memories": 1}};</script>'
        return PlainTextResponse(html, media_type="text/html")

    routes = [
        Route("/", page),
        Route("/gradio_api/heartbeat/{x}", whoami),
        Route("/gradio_api/queue/data", whoami),
        Route("/assets/app.js", whoami),
    ]
    return Starlette(routes=routes, middleware=[Middleware(LoginGate, logins=logins)])


def test_the_gate_logs_in_with_lax_cookies_and_names_the_user(logins: Logins) -> None:
    client = TestClient(app_behind_the_gate(logins))
    wrong = client.post("/login", data={"username": "ann", "password": "nope"})
    assert wrong.status_code == 400
    answer = client.post(
        "/login", files={"username": (None, "ann"), "password": (None, PASSWORDS["ann"])}
    )
    assert answer.status_code == 200
    cookies = answer.headers.get_list("set-cookie")
    assert len(cookies) == 2 and all("samesite=lax" in c.lower() for c in cookies)
    assert all("httponly" in c.lower() for c in cookies)
    assert client.get("/gradio_api/queue/data").text == "ann"
    out = client.get("/logout", follow_redirects=False)
    assert out.status_code == 302
    assert logins.registry.login_name(answer.cookies[logins.cookie_names[1]]) is None


def test_the_gate_answers_a_throttled_login_with_429(logins: Logins) -> None:
    client = TestClient(app_behind_the_gate(logins))
    for _ in range(LOGIN_FREE_FAILURES):
        client.post("/login", data={"username": "ann", "password": "nope"})
    held = client.post("/login", data={"username": "ann", "password": PASSWORDS["ann"]})
    assert held.status_code == 429 and held.headers["retry-after"] == "2"
    huge = client.post("/login", data={"username": "ann", "password": "x" * MAX_LOGIN_BODY})
    assert huge.status_code == 413


def test_without_a_login_only_the_login_page_and_its_files(logins: Logins) -> None:
    client = TestClient(app_behind_the_gate(logins))
    assert client.get("/gradio_api/heartbeat/x").status_code == 401
    assert client.get("/gradio_api/queue/data").status_code == 401
    assert client.get("/assets/app.js").text == "None"
    page = client.get("/")
    assert page.status_code == 200 and "/memories" not in page.text
    assert "window.gradio_api_info = {" in page.text
    assert [is_public(p) for p in ("/", "/login", "/config", "/gradio_api/info")] == [
        True,
        False,
        False,
        False,
    ]


def test_the_api_description_is_cut_from_a_page() -> None:
    page = b'<p>x</p><script>window.gradio_api_info = {"a": "\\u003c/script\\u003e"};</script>'
    assert without_api_info(page) == (
        b'<p>x</p><script>window.gradio_api_info = {"named_endpoints": {}, '
        b'"unnamed_endpoints": {}};</script>'
    )
    assert without_api_info(b"<p>no script</p>") == b"<p>no script</p>"


class Counting(SqliteAccounts):
    """The real SQLite registry, counting its token lookups."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.lookups = 0

    def login_name(self, token: str) -> str | None:
        self.lookups += 1
        return super().login_name(token)


def test_a_refused_token_is_remembered_for_a_while(tmp_path: Path) -> None:
    now = [0.0]
    registry = Counting(tmp_path / "accounts.db")
    logins = SharedLogins(registry, clock=lambda: now[0])
    assert logins.get("made-up") is None and logins.get("made-up") is None
    assert registry.lookups == 1
    now[0] += SharedLogins.REFUSED_SECONDS
    assert logins.get("made-up") is None and registry.lookups == 2


def test_the_memory_of_tokens_is_bounded(tmp_path: Path) -> None:
    logins = SharedLogins(Counting(tmp_path / "accounts.db"))
    logins.MAX_REMEMBERED = 3
    for n in range(10):
        logins.get(f"made-up-{n}")
        logins[f"token-{n}"] = "ann"
    assert len(logins._refused) == 3 and list(logins) == ["token-7", "token-8", "token-9"]
