"""HTTP helpers shared by the tools that reach outside the machine.

Each request gets a time limit that ends before the tool's own limit, so the tool reports
what went wrong instead of being cut off by the registry; bodies are read under a size
cap; and URLs a user or model supplies are refused when their host resolves to a private,
loopback or link-local address (unless ``Settings.allow_private_urls``).
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket

import httpx

from graph.context import Settings

REQUEST_TIMEOUT = 10.0
USER_AGENT = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"


class TooLarge(Exception):
    """A response body over the allowed size (the read was aborted)."""


def time_budget(settings: Settings, ceiling: float = REQUEST_TIMEOUT) -> float:
    """Seconds a request may take: at most ``ceiling``, and inside the tool's own limit."""
    return max(0.1, min(ceiling, settings.tool_timeout * 0.8))


def request_timeout(settings: Settings, ceiling: float = REQUEST_TIMEOUT) -> httpx.Timeout:
    """The httpx limits (connect, each read, write) for one request."""
    return httpx.Timeout(time_budget(settings, ceiling))


def describe_http_error(exc: httpx.HTTPError, what: str) -> str:
    """A short, user-readable sentence for a failed request to ``what``."""
    if isinstance(exc, httpx.TimeoutException):
        return f"{what} did not answer in time"
    if isinstance(exc, httpx.ConnectError):
        return f"could not connect to {what}"
    return f"request to {what} failed ({type(exc).__name__}: {exc})"


async def read_limited(response: httpx.Response, limit: int) -> bytes:
    """The body of a streamed response, aborting as soon as it exceeds ``limit`` bytes."""
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise TooLarge(f"{int(declared)} bytes announced")
    chunks: list[bytes] = []
    total = 0
    async for chunk in response.aiter_bytes():
        total += len(chunk)
        if total > limit:
            raise TooLarge(f"more than {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def _is_public(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not ip.is_multicast


async def url_problem(url: str, allow_private: bool) -> str | None:
    """Why ``url`` must not be fetched (scheme, or a non-public host), or None if it may be."""
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL:
        return f"not a valid URL: {url}"
    if parsed.scheme not in ("http", "https"):
        return f"only http and https URLs can be fetched, not {parsed.scheme or 'this'}"
    host = parsed.host
    if not host:
        return f"the URL has no host: {url}"
    if allow_private:
        return None
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError:
        return f"cannot resolve the host {host}"
    for info in infos:
        address = str(info[4][0])
        if not _is_public(address):
            return (
                f"refused: {host} resolves to a private or local address ({address}); "
                "only public addresses are fetched"
            )
    return None
