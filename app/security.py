"""What the web server checks before Gradio sees a request: where it comes from, how
many it sends, who is asking, and whose files it names.

``middleware`` gives the ASGI middleware that ``launch_app`` puts in front of Gradio's
own CORS middleware, outermost first: the Host check (``TrustedHostMiddleware``, 400),
``SecurityHeaders`` (a Content-Security-Policy with images and media from the app only,
no framing), ``CrossOrigin`` (403 for another site's requests), ``ConnectionCaps``
(requests and streams in flight per address, 429), with a login ``app.logins.LoginGate``,
and with accounts ``FileOwners`` (a file a request names must be the asker's: 404, 403
in a body). ``exposure_problem`` refuses to serve beyond loopback without a login.
Why each one: docs/security.md.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import logging
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from starlette.datastructures import Headers, MutableHeaders
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.logins import (
    LOGOUT_PATHS,
    LoginGate,
    Logins,
    client_address,
    read_body,
    replay,
    user_of,
)

log = logging.getLogger("companion.app")

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")
ANY_ADDRESS = ("0.0.0.0", "::", "")  # bind every interface: no name of its own
# Gradio's own page needs nothing more; everything else keeps the browser's defaults.
CONTENT_SECURITY_POLICY = (
    "img-src 'self' data: blob:; media-src 'self' data: blob:; object-src 'none'; "
    "frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Frame-Options": "DENY",  # frame-ancestors for browsers that predate it
    "X-Content-Type-Options": "nosniff",
}
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")
OTHER_SITES = ("cross-site", "same-site")  # Sec-Fetch-Site values of another origin
DEFAULT_PORTS = {"http": 80, "https": 443}
MAX_REQUESTS_PER_ADDRESS = 128
MAX_STREAMS_PER_ADDRESS = 32  # a browser tab holds two (heartbeat, queue)
STREAM_PREFIXES = (
    "/gradio_api/heartbeat/",
    "/gradio_api/queue/data",
    "/gradio_api/upload_progress",
    "/gradio_api/stream/",
    "/gradio_api/dev/reload",
)
RESULTS_PREFIX = "/gradio_api/call/"  # GET …/call/<name>/<event>: a result's event stream
FILE_ROUTES = ("/gradio_api/file=", "/gradio_api/file/")
UPLOAD_PATHS = ("/gradio_api/upload", "/gradio_api/upload/")
API_PREFIX = "/gradio_api/"
MAX_JSON_BODY = 8 * 1024 * 1024  # a message, its settings and file references
PARSE_ON_LOOP = 64 * 1024  # longer bodies are parsed in a worker thread
MAX_UPLOADS = 100_000  # uploads whose owner this process remembers


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


def own_origin(origin: str, host: str, allowed: Iterable[str] = ()) -> bool:
    """Is ``origin`` (a request's Origin header) the app's own: the origin of the page the
    browser addressed as ``host`` (the Host header), or a name in ``allowed``
    (COMPANION_ALLOWED_HOSTS, for a proxy that rewrites Host)? ``null`` never is."""
    try:
        parts = urlsplit(origin)
        served = urlsplit(f"//{host}")
        port, host_port = parts.port, served.port
    except ValueError:  # a port that is no number, an unclosed bracket
        return False
    if parts.scheme not in DEFAULT_PORTS or not parts.hostname:
        return False
    default = DEFAULT_PORTS[parts.scheme]
    if (parts.hostname, port or default) == (served.hostname, host_port or default):
        return True
    return any(_named(parts.hostname, name.lower()) for name in allowed)


def _named(hostname: str, pattern: str) -> bool:
    if pattern.startswith("*."):
        return hostname.endswith(pattern[1:])
    return hostname == pattern


def from_another_site(scope: Scope, allowed: Iterable[str] = ()) -> bool:
    """Did another site's page make this request? Its Origin is not the app's own; or,
    with no Origin, the browser says another site sent it (Sec-Fetch-Site) and it is not
    a plain read (a logout is not one)."""
    headers = Headers(scope=scope)
    origin = headers.get("origin")
    if origin is not None:
        return not own_origin(origin, headers.get("host", ""), allowed)
    if headers.get("sec-fetch-site") not in OTHER_SITES:
        return False
    return scope.get("method", "GET") not in SAFE_METHODS or scope["path"] in LOGOUT_PATHS


class SecurityHeaders:
    """Adds ``SECURITY_HEADERS`` (the policy, no framing) to every HTTP response."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_policy(message: Message) -> None:
            if message["type"] == "http.response.start":
                MutableHeaders(scope=message).update(SECURITY_HEADERS)
            await send(message)

        await self.app(scope, receive, send_with_policy)


class CrossOrigin:
    """Refuses (403) what another site's page sends (``from_another_site``), before Gradio
    sees it: no credentialed cross-origin call, read, preflight, login or logout."""

    def __init__(self, app: ASGIApp, allowed_hosts: Iterable[str] = ()) -> None:
        self.app = app
        self.allowed = tuple(allowed_hosts)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or not from_another_site(scope, self.allowed):
            await self.app(scope, receive, send)
            return
        origin = Headers(scope=scope).get("origin", "(none)")
        log.warning("refused %r from another site (Origin %r)", scope["path"][:200], origin[:200])
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        refusal = PlainTextResponse("Cross-origin request refused.", status_code=403)
        await refusal(scope, receive, send)


@dataclass
class InFlight:
    """The requests and streams each client address has open (shared by the middleware's
    instances: Starlette may build the stack again)."""

    requests: Counter[str] = field(default_factory=Counter)
    streams: Counter[str] = field(default_factory=Counter)


def is_stream(scope: Scope) -> bool:
    """Does this request stay open (a websocket, an event stream, a heartbeat)?"""
    path = scope["path"]
    results = scope.get("method") == "GET" and path.startswith(RESULTS_PREFIX)
    return scope["type"] == "websocket" or results or path.startswith(STREAM_PREFIXES)


class ConnectionCaps:
    """At most ``MAX_REQUESTS_PER_ADDRESS`` requests in flight per client address, of
    which ``MAX_STREAMS_PER_ADDRESS`` streams; 429 beyond."""

    def __init__(self, app: ASGIApp, in_flight: InFlight) -> None:
        self.app = app
        self.in_flight = in_flight

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        address = client_address(scope)
        counters = [(self.in_flight.requests, MAX_REQUESTS_PER_ADDRESS)]
        if is_stream(scope):
            counters.append((self.in_flight.streams, MAX_STREAMS_PER_ADDRESS))
        if any(counter[address] >= cap for counter, cap in counters):
            log.warning("refused %r from %s: too many open requests", scope["path"][:200], address)
            await _too_many(scope, receive, send)
            return
        for counter, _ in counters:
            counter[address] += 1
        try:
            await self.app(scope, receive, send)
        finally:
            for counter, _ in counters:
                counter[address] -= 1
                if counter[address] <= 0:
                    del counter[address]


async def _too_many(scope: Scope, receive: Receive, send: Send) -> None:
    if scope["type"] == "websocket":
        await send({"type": "websocket.close", "code": 1013})
        return
    response = JSONResponse(
        {"detail": "Too many open requests from your address."},
        status_code=429,
        headers={"Retry-After": "5"},
    )
    await response(scope, receive, send)


class Uploads:
    """Who uploaded each file of Gradio's upload folder, as this process saw it (at most
    ``MAX_UPLOADS`` files, the oldest forgotten first)."""

    def __init__(self) -> None:
        self._owners: dict[Path, set[str]] = {}

    def record(self, path: Path, name: str) -> None:
        owners = self._owners.pop(path, set())
        while len(self._owners) >= MAX_UPLOADS:
            del self._owners[next(iter(self._owners))]
        self._owners[path] = owners | {name.lower()}

    def owned(self, path: Path, name: str) -> bool:
        return name.lower() in self._owners.get(path, ())


def named_paths(data: Any) -> Iterator[str]:
    """Every file a request's JSON names (Gradio's FileData: a ``path`` key), at any depth."""
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            path = item.get("path")
            if isinstance(path, str):
                yield path
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


async def parsed_json(body: bytes) -> Any:
    """A request body's JSON (None when it is none): Gradio reads it with the same parser,
    so what fails here fails there. A long body is parsed in a worker thread."""
    try:
        if len(body) > PARSE_ON_LOOP:
            return await asyncio.to_thread(json.loads, body)
        return json.loads(body) if body else None
    except (ValueError, RecursionError):
        return None


class FileOwners:
    """Lets a request name only files that are the asker's (see the module's docstring).

    ``owners`` maps each person's name (lower case) to their media folder; ``upload_dir``
    is Gradio's upload folder, whose files belong to whoever ``uploads`` says uploaded them.
    The asker is the one ``LoginGate`` found (``app.logins.user_of``).
    """

    def __init__(
        self, app: ASGIApp, owners: Mapping[str, Path], upload_dir: Path, uploads: Uploads
    ) -> None:
        self.app = app
        self.owners = {name: folder.resolve() for name, folder in owners.items()}
        self.upload_dir = upload_dir.resolve()
        self.uploads = uploads

    def owner_of(self, target: Path) -> str | None:
        """The person whose media folder holds ``target`` (resolved), or None."""
        for name, folder in self.owners.items():
            if target.is_relative_to(folder):
                return name
        return None

    def may_name(self, path: str, user: str | None) -> bool:
        """May ``user`` have the file at ``path`` (as Gradio would read it) served or used?
        A URL never: Gradio would fetch it itself."""
        if "://" in path:
            return False
        try:
            target = Path(path).resolve()
        except (OSError, ValueError):  # a NUL byte, a loop of links
            return False
        owner = self.owner_of(target)
        if owner is not None:
            return owner == (user or "").lower()
        if target.is_relative_to(self.upload_dir):
            return user is not None and self.uploads.owned(target, user)
        return True

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path, user = scope["path"], user_of(scope)
        route = next((r for r in FILE_ROUTES if path.startswith(r)), None)
        if route is not None and not self.may_name(path[len(route) :], user):
            log.warning("refused %r a file that is not theirs", user)
            await JSONResponse({"detail": "Not Found"}, status_code=404)(scope, receive, send)
        elif scope["method"] == "POST" and path in UPLOAD_PATHS:
            recording = send if user is None else self._recording(send, user)
            await self.app(scope, receive, recording)
        elif scope["method"] == "POST" and path.startswith(API_PREFIX):
            await self._checked_body(scope, receive, send, user)
        else:
            await self.app(scope, receive, send)

    async def _checked_body(
        self, scope: Scope, receive: Receive, send: Send, user: str | None
    ) -> None:
        body = await read_body(receive, MAX_JSON_BODY)
        if body is None:
            await JSONResponse({"detail": "Request too large."}, status_code=413)(
                scope, receive, send
            )
            return
        data = await parsed_json(body)
        if any(not self.may_name(named, user) for named in named_paths(data)):
            log.warning("refused %r a request naming a file that is not theirs", user)
            await JSONResponse({"detail": "File not allowed."}, status_code=403)(
                scope, receive, send
            )
            return
        await self.app(scope, replay(body), send)

    def _recording(self, send: Send, user: str) -> Send:
        """A ``send`` that records ``user`` as the owner of the files Gradio answers an
        upload with, before the answer (and so the files' names) reaches them."""
        held: list[Message] = []

        async def record(message: Message) -> None:
            held.append(message)
            if message["type"] == "http.response.body" and message.get("more_body", False):
                return
            if message["type"] == "http.response.start":
                return
            if held[0].get("status") == 200:
                self._record_answer(b"".join(m.get("body", b"") for m in held[1:]), user)
            for message in held:
                await send(message)
            held.clear()

        return record

    def _record_answer(self, answer: bytes, user: str) -> None:
        try:
            paths = json.loads(answer)
        except ValueError:
            return
        for path in paths if isinstance(paths, list) else []:
            if isinstance(path, str):
                self.uploads.record(Path(path).resolve(), user)


def middleware(
    trusted: Iterable[str],
    *,
    allowed_hosts: Iterable[str] = (),
    logins: Logins | None = None,
    media_owners: Mapping[str, Path] | None = None,
    upload_dir: Path | None = None,
) -> list[Middleware]:
    """The app's middleware, outermost first: Host check, security headers, cross-origin
    refusal and connection caps; with a login (``logins``) the login gate; with accounts
    (``media_owners``, and Gradio's ``upload_dir``) each person's files to them only."""
    stack = [
        Middleware(TrustedHostMiddleware, allowed_hosts=list(trusted), www_redirect=False),
        Middleware(SecurityHeaders),
        Middleware(CrossOrigin, allowed_hosts=tuple(allowed_hosts)),
        Middleware(ConnectionCaps, in_flight=InFlight()),
    ]
    if logins is not None:
        stack.append(Middleware(LoginGate, logins=logins))
        if media_owners and upload_dir is not None:
            owners = dict(media_owners)
            stack.append(
                Middleware(FileOwners, owners=owners, upload_dir=upload_dir, uploads=Uploads())
            )
    return stack
