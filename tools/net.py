"""HTTP helpers shared by the tools that reach outside the machine.

Each request gets a time limit that ends before the tool's own limit, so the tool reports
what went wrong instead of being cut off by the registry. Bodies are streamed under a size
cap that counts decoded bytes: gzip and deflate are decoded here, in steps no larger than
the room left, so a small compression bomb never grows past the cap in memory.

URLs a user, a model or a backend supplies are fetched through ``guarded_client``: its
transport resolves each request's host once, refuses the request when any resolved
address is not public (loopback, private, link-local, multicast, reserved, unspecified,
or an IPv4 address carried inside IPv6 that is one of these), and then connects to that
checked address itself — the URL is rewritten to the IP while the Host header and the TLS
name (SNI and certificate check) stay the original host. A second lookup that answers
differently (DNS rebinding) is never made, and every redirect hop is a new request through
the same transport, so it is checked too. ``Settings.allow_private_urls`` lifts the address
rule (tests, a home network); origins the user configured (an image backend) can be
trusted as configured.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import socket
import zlib
from collections.abc import Awaitable, Callable, Iterable

import httpx

from config.settings import Settings

REQUEST_TIMEOUT = 10.0
MAX_REDIRECTS = 3
USER_AGENT = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"
# The encodings read_limited decodes itself, in bounded steps; a server is asked for no other.
ACCEPT_ENCODING = "gzip, deflate"
REFUSED = (
    "refused: {host} resolves to a private or local address ({address}); "
    "only public addresses are fetched"
)
UNRESOLVED = "cannot resolve the host {host}"

# IPv6 ranges whose low 32 bits are an IPv4 address the packet really goes to.
IPV4_COMPATIBLE = ipaddress.IPv6Network("::/96")
NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
# Local-use NAT64 (RFC 8215) embeds IPv4 at a network's own choice of bits: never public.
NAT64_LOCAL = ipaddress.IPv6Network("64:ff9b:1::/48")

Resolver = Callable[[str, int], Awaitable[list[str]]]
Origin = tuple[str, str, int]


class TooLarge(Exception):
    """A response body over the allowed size (the read was aborted)."""


class Refused(httpx.RequestError):
    """A request the address guard would not send; the message says why."""


def time_budget(settings: Settings, ceiling: float = REQUEST_TIMEOUT) -> float:
    """Seconds a request may take: at most ``ceiling``, and inside the tool's own limit."""
    return max(0.1, min(ceiling, settings.tool_timeout * 0.8))


def request_timeout(settings: Settings, ceiling: float = REQUEST_TIMEOUT) -> httpx.Timeout:
    """The httpx limits (connect, each read, write) for one request."""
    return httpx.Timeout(time_budget(settings, ceiling))


def describe_http_error(exc: httpx.HTTPError, what: str) -> str:
    """A short, user-readable sentence for a failed request to ``what``."""
    if isinstance(exc, Refused):
        return str(exc)
    if isinstance(exc, httpx.TimeoutException):
        return f"{what} did not answer in time"
    if isinstance(exc, httpx.ConnectError):
        return f"could not connect to {what}"
    if isinstance(exc, httpx.TooManyRedirects):
        return f"{what} redirected too many times (more than {MAX_REDIRECTS})"
    return f"request to {what} failed ({type(exc).__name__}: {exc})"


Decode = Callable[[bytes, int], bytes]


def _identity(data: bytes, room: int) -> bytes:
    return data


def _decoder(content_encoding: str) -> Decode:
    """A decoder that returns at most ``room`` bytes per call (the rest is over the cap)."""
    name = content_encoding.strip().lower()
    if name in ("", "identity"):
        return _identity
    if name in ("gzip", "x-gzip", "deflate"):
        # 32 + MAX_WBITS: zlib reads the gzip or zlib header, whichever the body has.
        inflater = zlib.decompressobj(32 + zlib.MAX_WBITS)
        return inflater.decompress
    raise httpx.DecodingError(f"unsupported Content-Encoding {content_encoding!r}")


async def read_limited(response: httpx.Response, limit: int) -> bytes:
    """The decoded body of a streamed response, aborting as soon as it passes ``limit`` bytes."""
    encoding = response.headers.get("content-encoding", "")
    declared = response.headers.get("content-length", "")
    if not encoding and declared.isdigit() and int(declared) > limit:
        raise TooLarge(f"{int(declared)} bytes announced")
    decode = _decoder(encoding)
    body = bytearray()
    async for chunk in response.aiter_raw():
        try:
            body += decode(chunk, limit + 1 - len(body))
        except zlib.error as exc:
            raise httpx.DecodingError(f"the {encoding} body is corrupt: {exc}") from exc
        if len(body) > limit:
            raise TooLarge(f"more than {limit} bytes")
    return bytes(body)


def embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address inside an IPv4-mapped, IPv4-compatible, NAT64 or 6to4 address."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip in NAT64 or ip in IPV4_COMPATIBLE:
        return ipaddress.IPv4Address(int(ip) & 0xFFFF_FFFF)
    return None


def is_public(address: str) -> bool:
    """Whether ``address`` is on the public internet, not this machine or a local network."""
    try:
        ip: ipaddress.IPv4Address | ipaddress.IPv6Address = ipaddress.ip_address(
            address.split("%", 1)[0]
        )
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address):
        if ip in NAT64_LOCAL or ip.is_site_local:
            return False
        ip = embedded_ipv4(ip) or ip
    return ip.is_global and not (
        ip.is_private
        or ip.is_loopback
        or ip.is_link_local
        or ip.is_multicast
        or ip.is_reserved
        or ip.is_unspecified
    )


async def resolve_host(host: str, port: int) -> list[str]:
    """Every address ``host`` resolves to, in the system resolver's order (off the loop)."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def url_problem(url: str) -> str | None:
    """Why ``url`` cannot be fetched at all (scheme, no host), or None if it may be tried."""
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL:
        return f"not a valid URL: {url}"
    if parsed.scheme not in ("http", "https"):
        return f"only http and https URLs can be fetched, not {parsed.scheme or 'this'}"
    if not parsed.host:
        return f"the URL has no host: {url}"
    return None


def origin_of(url: httpx.URL | str) -> Origin:
    """Scheme, host and port (the default one filled in) of a URL."""
    parsed = httpx.URL(url)
    default = 443 if parsed.scheme == "https" else 80
    return parsed.scheme, parsed.host, parsed.port or default


class GuardedTransport(httpx.AsyncBaseTransport):
    """Sends each request to an address that passed the check, never to a second lookup's."""

    def __init__(
        self,
        *,
        allow_private: bool = False,
        trusted: Iterable[str] = (),
        resolver: Resolver | None = None,
        inner: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._allow_private = allow_private
        self._trusted = frozenset(origin_of(url) for url in trusted)
        self._resolver = resolver
        # No kept-alive connections: a pooled connection is keyed by the IP, and must not
        # carry a request for another host name than the one its TLS session checked.
        self._inner = inner or httpx.AsyncHTTPTransport(
            limits=httpx.Limits(max_keepalive_connections=0)
        )

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Check the request's host, then send it to the checked address."""
        problem = url_problem(str(request.url))
        if problem:
            raise Refused(problem, request=request)
        origin = origin_of(request.url)
        if origin in self._trusted:
            return await self._inner.handle_async_request(request)
        *others, last = await self._checked_addresses(request, origin)
        for address in others:
            with contextlib.suppress(httpx.ConnectError):
                # Nothing was sent yet: the next checked address may answer (IPv6, then IPv4).
                return await self._inner.handle_async_request(_pinned(request, address))
        return await self._inner.handle_async_request(_pinned(request, last))

    async def _checked_addresses(self, request: httpx.Request, origin: Origin) -> list[str]:
        _, host, port = origin
        try:
            addresses = [str(ipaddress.ip_address(host))]
        except ValueError:
            # Looked up at call time, so a test can stand in for the system resolver.
            resolver = self._resolver or resolve_host
            try:
                addresses = await resolver(host, port)
            except OSError as exc:
                raise httpx.ConnectError(UNRESOLVED.format(host=host), request=request) from exc
        if not addresses:
            raise httpx.ConnectError(UNRESOLVED.format(host=host), request=request)
        if not self._allow_private:
            for address in addresses:
                if not is_public(address):
                    raise Refused(REFUSED.format(host=host, address=address), request=request)
        return addresses

    async def aclose(self) -> None:
        """Close the connections of the inner transport."""
        await self._inner.aclose()


def _pinned(request: httpx.Request, address: str) -> httpx.Request:
    """``request`` aimed at ``address``, still naming its host in Host and TLS."""
    return httpx.Request(
        request.method,
        request.url.copy_with(host=address),
        headers=request.headers,
        stream=request.stream,
        extensions={**request.extensions, "sni_hostname": request.url.host},
    )


def guarded_client(
    settings: Settings,
    *,
    timeout: httpx.Timeout,
    headers: dict[str, str] | None = None,
    trusted: Iterable[str] = (),
    resolver: Resolver | None = None,
) -> httpx.AsyncClient:
    """A client for URLs from outside: every hop address-checked and pinned (see above).

    Proxies from the environment are not used: a proxy resolves names itself, out of the
    guard's sight.
    """
    transport = GuardedTransport(
        allow_private=settings.allow_private_urls, trusted=trusted, resolver=resolver
    )
    return httpx.AsyncClient(
        transport=transport,
        timeout=timeout,
        headers={"User-Agent": USER_AGENT, "Accept-Encoding": ACCEPT_ENCODING, **(headers or {})},
        follow_redirects=True,
        max_redirects=MAX_REDIRECTS,
        trust_env=False,
    )
