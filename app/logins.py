"""Who is asking: logins made, checked and ended by the app itself, off the event loop.

``LoginGate``, ASGI middleware in front of Gradio, answers ``POST /login`` (the
registry's throttle, then the password, in a small thread pool with at most
``MAX_WAITING_LOGINS`` waiting; a success sets a new random token as an HttpOnly,
``SameSite=Lax`` cookie) and ``GET /logout`` (ends every login of the person in the
registry) itself. Any other request gets its login's name put in the scope
(``user_of``); without a login, only the login page (with no API description) and its
static files are served, 401 for the rest. ``SharedLogins`` keeps tokens in the accounts
registry, so every process knows every login. Why: docs/security.md.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import secrets
import time
from collections.abc import Callable, Iterator, MutableMapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol

from starlette.datastructures import Headers
from starlette.requests import Request, cookie_parser
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger("companion.app")

LOGIN_PATHS = ("/login", "/login/")
LOGOUT_PATHS = ("/logout", "/logout/")
# What a browser without a login may fetch: the login page and what it loads.
PUBLIC_PATHS = frozenset(
    {
        "/",
        "/favicon.ico",
        "/manifest.json",
        "/robots.txt",
        "/theme.css",
        "/gradio_api/theme.css",
        "/gradio_api/startup-events",  # Gradio's launch() asks it once, without a login
    }
)
PUBLIC_PREFIXES = ("/assets/", "/static/", "/svelte/", "/pwa_icon")
USER_KEY = "companion_user"  # in the scope's "state": the logged-in name, or None
MAX_LOGIN_BODY = 16 * 1024  # a login form is a name and a password
LOGIN_WORKERS = 2  # scrypt needs 16 MiB and a core for ~50 ms
MAX_WAITING_LOGINS = 16  # more at once are told to come back (503)
LOOKUP_WORKERS = 4  # token lookups: one short query each
TOKEN_BYTES = 32
# The login page gets an empty API description in place of Gradio's.
API_INFO_START = b"<script>window.gradio_api_info = "
API_INFO_END = b";</script>"
NO_API_INFO = b'{"named_endpoints": {}, "unnamed_endpoints": {}}'


class LoginRegistry(Protocol):
    """Where logins and failed logins are kept: the accounts registry (``memory.Accounts``)
    of either backend."""

    def add_login(self, token: str, name: str) -> None: ...

    def login_name(self, token: str) -> str | None: ...

    def end_login(self, token: str) -> None: ...

    def end_logins(self, name: str) -> None: ...

    def claim_login(self, name: str, address: str, now: float) -> float: ...

    def forgive_login(self, name: str, address: str, now: float) -> None: ...


class SharedLogins(MutableMapping[str, str]):
    """Login tokens (token -> user name) kept in the accounts registry, so every process of
    a Companion knows every login (only hashes are kept); Gradio reads them as
    ``App.tokens``.

    A token is looked up in the registry once per ``RECHECK_SECONDS`` per process, then
    answered from memory: one short query a minute per logged-in browser, not one per
    request; so a logout or a new password reaches the other processes within that time. A
    token the registry does not know is answered "nobody" from memory for
    ``REFUSED_SECONDS``. Both memories hold at most ``MAX_REMEMBERED`` tokens. Iterating
    gives the tokens this process remembers.
    """

    RECHECK_SECONDS = 60.0
    REFUSED_SECONDS = 30.0
    MAX_REMEMBERED = 10_000

    def __init__(self, registry: LoginRegistry, clock: Callable[[], float] = time.monotonic):
        self.registry = registry
        self.clock = clock
        self._seen: dict[str, tuple[str, float]] = {}  # token -> (name, when checked)
        self._refused: dict[str, float] = {}  # token -> when refused, oldest first

    def remembered(self, token: str) -> tuple[bool, str | None]:
        """(True, name or None) when memory answers for ``token``; (False, None) when the
        registry must be asked (``lookup``)."""
        now = self.clock()
        seen = self._seen.get(token)
        if seen is not None and now - seen[1] < self.RECHECK_SECONDS:
            return True, seen[0]
        refused = self._refused.get(token)
        if refused is not None and now - refused < self.REFUSED_SECONDS:
            return True, None
        return False, None

    def lookup(self, token: str) -> str | None:
        """Ask the registry whose ``token`` is (a blocking call), and remember the answer."""
        try:
            name = self.registry.login_name(token)
        except Exception:  # the registry is down: nobody is logged in, the app stays up
            log.exception("could not check a login token")
            return None
        if name is None:
            self._seen.pop(token, None)
            self._refused.pop(token, None)  # re-inserted last: the oldest go first
            _bounded(self._refused, self.MAX_REMEMBERED)
            self._refused[token] = self.clock()
        else:
            self._remember(token, name)
        return name

    def get(self, token: object, default: str | None = None) -> str | None:  # type: ignore[override]
        if not isinstance(token, str) or not token:
            return default
        known, name = self.remembered(token)
        if not known:
            name = self.lookup(token)
        return default if name is None else name

    def end_all(self, name: str) -> None:
        """End every login of ``name``, in the registry and in this process's memory."""
        self.registry.end_logins(name)
        seen = list(self._seen.items())  # one step: logins may be added meanwhile
        for token in [t for t, (n, _) in seen if n.lower() == name.lower()]:
            self._seen.pop(token, None)

    def _remember(self, token: str, name: str) -> None:
        self._refused.pop(token, None)
        self._seen.pop(token, None)
        _bounded(self._seen, self.MAX_REMEMBERED)
        self._seen[token] = (name, self.clock())

    def __getitem__(self, token: str) -> str:
        name = self.get(token)
        if name is None:
            raise KeyError(token)
        return name

    def __setitem__(self, token: str, name: str) -> None:
        self.registry.add_login(token, name)
        self._remember(token, name)

    def __delitem__(self, token: str) -> None:
        self.registry.end_login(token)
        self._seen.pop(token, None)

    def __contains__(self, token: object) -> bool:
        return self.get(token) is not None

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._seen))

    def __len__(self) -> int:
        return len(self._seen)


def _bounded(memory: dict[str, Any], limit: int) -> None:
    """Make room for one more entry in an insertion-ordered ``memory``: the oldest go."""
    while len(memory) >= limit:
        del memory[next(iter(memory))]


@dataclass(frozen=True)
class LoggedIn:
    """A login succeeded: the new token."""

    token: str


@dataclass(frozen=True)
class Throttled:
    """The throttle holds the attempt back for ``wait`` seconds (nothing was checked)."""

    wait: float


@dataclass(frozen=True)
class WrongPassword:
    """No such name, or not its password."""


LoginOutcome = LoggedIn | Throttled | WrongPassword


@dataclass
class Logins:
    """How this Companion logs people in: its registry, its password check (``check``:
    name, password -> bool; blocking, it runs in ``pool``), the cookie name its processes
    share, and its tokens."""

    registry: LoginRegistry
    check: Callable[[str, str], bool]
    cookie_id: str
    tokens: SharedLogins
    clock: Callable[[], float] = time.time  # wall clock: processes compare their times
    pool: ThreadPoolExecutor = field(
        default_factory=lambda: ThreadPoolExecutor(LOGIN_WORKERS, "login")
    )
    lookups: ThreadPoolExecutor = field(
        default_factory=lambda: ThreadPoolExecutor(LOOKUP_WORKERS, "login-lookup")
    )
    waiting: int = 0

    @classmethod
    def over(cls, registry: LoginRegistry, check: Callable[[str, str], bool], scope: str) -> Logins:
        """The logins of the Companion whose home or database is ``scope``: every process
        of it shares the cookie name."""
        cookie_id = hashlib.sha256(f"companion-login:{scope}".encode()).hexdigest()[:32]
        return cls(registry, check, cookie_id, SharedLogins(registry))

    @property
    def cookie_names(self) -> tuple[str, str]:
        """Gradio's two cookie names (over https, and over plain http), read in this order."""
        return f"access-token-{self.cookie_id}", f"access-token-unsecure-{self.cookie_id}"

    def install(self, app: Any) -> None:
        """Make a launched Gradio app read these logins (its ``tokens`` and cookie name)."""
        app.tokens = self.tokens
        app.cookie_id = self.cookie_id

    def token_of(self, scope: Scope) -> str | None:
        """The login token a request's cookies carry, as Gradio reads it."""
        header = Headers(scope=scope).get("cookie")
        if not header:
            return None
        cookies = cookie_parser(header)
        secure, plain = self.cookie_names
        return cookies.get(secure) or cookies.get(plain) or None

    async def user(self, token: str | None) -> str | None:
        """Whose ``token`` is: from memory, else from the registry in a thread."""
        if not token:
            return None
        known, name = self.tokens.remembered(token)
        if known:
            return name
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.lookups, self.tokens.lookup, token)

    def attempt(self, name: str, password: str, address: str) -> LoginOutcome:
        """One login attempt (blocking: the registry and scrypt): throttle, check, token."""
        now = self.clock()
        wait = self.registry.claim_login(name, address, now)
        if wait > 0:
            log.warning("login as %r from %s held back for %.0f s", name, address, wait)
            return Throttled(wait)
        if not self.check(name, password):
            log.warning("failed login as %r from %s", name, address)
            return WrongPassword()
        token = secrets.token_urlsafe(TOKEN_BYTES)
        self.tokens[token] = name
        self.registry.forgive_login(name, address, now)
        return LoggedIn(token)


def single_password(user: str, password: str) -> Callable[[str, str], bool]:
    """The check of a Companion with one user and one password (COMPANION_PASSWORD)."""

    def check(name: str, given: str) -> bool:
        same_name = hmac.compare_digest(name.encode(), user.encode())
        return hmac.compare_digest(given.encode(), password.encode()) and same_name

    return check


def user_of(scope: Scope) -> str | None:
    """The logged-in name ``LoginGate`` found for this request (None: nobody)."""
    state = scope.get("state") or {}
    name = state.get(USER_KEY)
    return str(name) if name else None


def client_address(scope: Scope) -> str:
    """The client's address as the server sees it (uvicorn honours X-Forwarded-For only
    from FORWARDED_ALLOW_IPS, loopback by default)."""
    client = scope.get("client")
    return str(client[0]) if client else "unknown"


def is_public(path: str) -> bool:
    """May a browser without a login fetch ``path`` (the login page and its files)?"""
    return path in PUBLIC_PATHS or path.startswith(PUBLIC_PREFIXES)


async def read_body(receive: Receive, limit: int) -> bytes | None:
    """The whole request body, or None when it is longer than ``limit`` bytes."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(chunks)  # the client left: what came is all there is
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def replay(body: bytes) -> Receive:
    """A ``receive`` that gives ``body`` again (to the app behind, after it was read)."""
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if sent:
            await asyncio.Event().wait()  # nothing more: wait for the disconnect forever
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return receive


def without_api_info(page: bytes) -> bytes:
    """Gradio's page with an empty API description in place of its own."""
    start = page.find(API_INFO_START)
    if start < 0:
        return page
    start += len(API_INFO_START)
    end = page.find(API_INFO_END, start)  # the JSON is escaped: it holds no "</script>"
    return page if end < 0 else page[:start] + NO_API_INFO + page[end:]


class LoginGate:
    """Answers ``/login`` and ``/logout`` itself, and lets through only what a request's
    login allows (see the module's docstring)."""

    def __init__(self, app: ASGIApp, logins: Logins) -> None:
        self.app = app
        self.logins = logins

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        path, method = scope["path"], scope.get("method", "GET")
        if scope["type"] == "http" and method == "POST" and path in LOGIN_PATHS:
            await self.login(scope, receive, send)
            return
        user = await self.logins.user(self.logins.token_of(scope))
        if scope["type"] == "http" and method == "GET" and path in LOGOUT_PATHS:
            await self.logout(user, scope, receive, send)
            return
        scope.setdefault("state", {})[USER_KEY] = user
        if user is not None:
            await self.app(scope, receive, send)
        elif not is_public(path):
            await self.refuse(scope, receive, send)
        elif path == "/" and method == "GET":
            await self.app(scope, receive, _scrubbing(send))
        else:
            await self.app(scope, receive, send)

    async def refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        response = JSONResponse({"detail": "Not authenticated"}, status_code=401)
        await response(scope, receive, send)

    async def login(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = await self._login_response(scope, receive)
        await response(scope, receive, send)

    async def _login_response(self, scope: Scope, receive: Receive) -> Response:
        body = await read_body(receive, MAX_LOGIN_BODY)
        if body is None:
            return JSONResponse({"detail": "The login form is too large."}, status_code=413)
        try:
            form = await Request(scope, replay(body)).form()
        except Exception as exc:  # a malformed form: whatever the parser raised
            log.info("unreadable login form: %s", exc)
            return JSONResponse({"detail": "Unreadable login form."}, status_code=400)
        name, password = str(form.get("username") or "").strip(), str(form.get("password") or "")
        if self.logins.waiting >= MAX_WAITING_LOGINS:
            log.warning("login refused: %d logins already waiting", self.logins.waiting)
            return _busy()
        self.logins.waiting += 1
        loop = asyncio.get_running_loop()
        try:
            outcome = await loop.run_in_executor(
                self.logins.pool, self.logins.attempt, name, password, client_address(scope)
            )
        except Exception:  # the registry is down: nobody can log in, the app stays up
            log.exception("could not log %r in", name)
            return _busy()
        finally:
            self.logins.waiting -= 1
        return self._answer(outcome)

    def _answer(self, outcome: LoginOutcome) -> Response:
        if isinstance(outcome, Throttled):
            wait = max(1, round(outcome.wait))
            return JSONResponse(
                {"detail": f"Too many failed logins: try again in {wait} s."},
                status_code=429,
                headers={"Retry-After": str(wait)},
            )
        if isinstance(outcome, WrongPassword):
            return JSONResponse({"detail": "Incorrect credentials."}, status_code=400)
        response = JSONResponse({"success": True})
        for cookie, secure in zip(self.logins.cookie_names, (True, False), strict=True):
            response.set_cookie(cookie, outcome.token, httponly=True, samesite="lax", secure=secure)
        return response

    async def logout(self, user: str | None, scope: Scope, receive: Receive, send: Send) -> None:
        if user is not None:
            loop = asyncio.get_running_loop()
            try:
                await loop.run_in_executor(self.logins.lookups, self.logins.tokens.end_all, user)
            except Exception:  # the registry is down: the cookies still go
                log.exception("could not end the logins of %r", user)
        response = RedirectResponse("./", status_code=302)
        for cookie, secure in zip(self.logins.cookie_names, (True, False), strict=True):
            response.delete_cookie(cookie, httponly=True, samesite="lax", secure=secure)
        await response(scope, receive, send)


def _busy() -> Response:
    return JSONResponse(
        {"detail": "Too many logins at once: try again in a moment."},
        status_code=503,
        headers={"Retry-After": "1"},
    )


def _scrubbing(send: Send) -> Send:
    """A ``send`` that holds an HTML page back until it is whole, then sends it without
    Gradio's API description (the login page)."""
    start: Message | None = None
    chunks: list[bytes] = []

    async def scrub(message: Message) -> None:
        nonlocal start
        if message["type"] == "http.response.start":
            kind = Headers(raw=message.get("headers", [])).get("content-type", "")
            if message["status"] == 200 and kind.startswith("text/html"):
                start = message
                return
        if start is None or message["type"] != "http.response.body":
            await send(message)
            return
        chunks.append(message.get("body", b""))
        if message.get("more_body", False):
            return
        page = without_api_info(b"".join(chunks))
        headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
        headers.append((b"content-length", str(len(page)).encode()))
        await send({**start, "headers": headers})
        await send({"type": "http.response.body", "body": page, "more_body": False})

    return scrub
