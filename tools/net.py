"""HTTP helpers shared by everything that reaches outside the machine.

``guarded_client`` (URLs a person, the model or a backend supplies), ``endpoint_client``
(configured endpoints: image backend, web search, weather, Verify) and ``model_clients``
(the chat endpoint) all send through the address guard (``GuardedTransport``,
``SyncGuardedTransport``): each host is resolved once, refused unless every address is
public, and the request is pinned to the checked address, every redirect hop included.
An operator-configured endpoint is trusted at its own origin; ``allow_private_urls``
lifts the rule. ``read_limited`` reads a body under a cap on decoded bytes, and
``time_budget`` ends a request before the tool's own limit. Why: docs/security.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import socket
import zlib
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import httpx

from config.settings import EndpointField, Settings

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


def _distinct(infos: Iterable[tuple[Any, ...]]) -> list[str]:
    """The addresses of ``getaddrinfo`` answers, each once, in the resolver's order."""
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


async def resolve_host(host: str, port: int) -> list[str]:
    """Every address ``host`` resolves to, in the system resolver's order (off the loop)."""
    return _distinct(
        await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    )


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
    parsed = url if isinstance(url, httpx.URL) else httpx.URL(url)
    default = 443 if parsed.scheme == "https" else 80
    return parsed.scheme, parsed.host, parsed.port or default


class AddressRule:
    """Which requests go out as they are, and which addresses the others may reach.

    A request to a trusted origin (an endpoint the operator configured) is sent as it is;
    any other request must name an http(s) URL whose every resolved address is public,
    unless private addresses are allowed (``Settings.allow_private_urls``).
    """

    def __init__(self, *, allow_private: bool = False, trusted: Iterable[str] = ()) -> None:
        self.allow_private = allow_private
        self.trusted = frozenset(origin_of(url) for url in trusted)

    def trusts(self, request: httpx.Request) -> bool:
        """True to send ``request`` unchanged; Refused when its URL cannot be fetched at all
        (its URL is parsed already: read, not parsed again, on every model request)."""
        url = request.url
        if url.scheme not in ("http", "https") or not url.host:
            raise Refused(url_problem(str(url)) or f"not a valid URL: {url}", request=request)
        return origin_of(url) in self.trusted

    def vetted(self, request: httpx.Request, addresses: list[str]) -> list[str]:
        """``addresses`` (the host's, in order) when every one may be reached, else raise."""
        host = request.url.host
        if not addresses:
            raise httpx.ConnectError(UNRESOLVED.format(host=host), request=request)
        if not self.allow_private:
            for address in addresses:
                if not is_public(address):
                    raise Refused(REFUSED.format(host=host, address=address), request=request)
        return addresses


def literal_address(host: str) -> list[str] | None:
    """The host as its one address when it is an IP literal (no lookup), else None."""
    try:
        return [str(ipaddress.ip_address(host))]
    except ValueError:
        return None


def _unresolved(request: httpx.Request, exc: OSError) -> httpx.ConnectError:
    error = httpx.ConnectError(UNRESOLVED.format(host=request.url.host), request=request)
    error.__cause__ = exc
    return error


def _no_keepalive() -> httpx.Limits:
    # A pooled connection is keyed by the IP, and must not carry a request for another
    # host name than the one its TLS session checked.
    return httpx.Limits(max_keepalive_connections=0)


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
        self._rule = AddressRule(allow_private=allow_private, trusted=trusted)
        self._resolver = resolver
        self._inner = inner or httpx.AsyncHTTPTransport(limits=_no_keepalive())
        # A trusted origin is reached by its name, so its connections may be kept alive.
        self._direct = inner or httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Check the request's host, then send it to the checked address."""
        if self._rule.trusts(request):
            return await self._direct.handle_async_request(request)
        *others, last = self._rule.vetted(request, await self._addresses(request))
        for address in others:
            with contextlib.suppress(httpx.ConnectError):
                # Nothing was sent yet: the next checked address may answer (IPv6, then IPv4).
                return await self._inner.handle_async_request(_pinned(request, address))
        return await self._inner.handle_async_request(_pinned(request, last))

    async def _addresses(self, request: httpx.Request) -> list[str]:
        _, host, port = origin_of(request.url)
        literal = literal_address(host)
        if literal is not None:
            return literal
        # Looked up at call time, so a test can stand in for the system resolver.
        try:
            return await (self._resolver or resolve_host)(host, port)
        except OSError as exc:
            raise _unresolved(request, exc) from exc

    async def aclose(self) -> None:
        """Close the connections of the inner transports."""
        await self._inner.aclose()
        if self._direct is not self._inner:
            await self._direct.aclose()


class SyncGuardedTransport(httpx.BaseTransport):
    """``GuardedTransport`` for blocking clients (the chat model's synchronous calls)."""

    def __init__(
        self,
        *,
        allow_private: bool = False,
        trusted: Iterable[str] = (),
        inner: httpx.BaseTransport | None = None,
    ) -> None:
        self._rule = AddressRule(allow_private=allow_private, trusted=trusted)
        self._inner = inner or httpx.HTTPTransport(limits=_no_keepalive())
        self._direct = inner or httpx.HTTPTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        """Check the request's host, then send it to the checked address."""
        if self._rule.trusts(request):
            return self._direct.handle_request(request)
        *others, last = self._rule.vetted(request, self._addresses(request))
        for address in others:
            with contextlib.suppress(httpx.ConnectError):
                return self._inner.handle_request(_pinned(request, address))
        return self._inner.handle_request(_pinned(request, last))

    def _addresses(self, request: httpx.Request) -> list[str]:
        _, host, port = origin_of(request.url)
        literal = literal_address(host)
        if literal is not None:
            return literal
        try:
            return _distinct(socket.getaddrinfo(host, port, type=socket.SOCK_STREAM))
        except OSError as exc:
            raise _unresolved(request, exc) from exc

    def close(self) -> None:
        """Close the connections of the inner transports."""
        self._inner.close()
        if self._direct is not self._inner:
            self._direct.close()


def _pinned(request: httpx.Request, address: str) -> httpx.Request:
    """``request`` aimed at ``address``, still naming its host in Host and TLS."""
    return httpx.Request(
        request.method,
        request.url.copy_with(host=address),
        headers=request.headers,
        stream=request.stream,
        extensions={**request.extensions, "sni_hostname": request.url.host},
    )


def _options(timeout: httpx.Timeout | float, headers: dict[str, str] | None) -> dict[str, Any]:
    """What every guarded client shares: redirects followed (each hop a new, checked
    request), at most MAX_REDIRECTS of them, and no proxy from the environment (a proxy
    resolves names itself, out of the guard's sight)."""
    return {
        "timeout": timeout,
        "headers": headers,
        "follow_redirects": True,
        "max_redirects": MAX_REDIRECTS,
        "trust_env": False,
    }


def guarded_client(
    settings: Settings,
    *,
    timeout: httpx.Timeout,
    headers: dict[str, str] | None = None,
    trusted: Iterable[str] = (),
    resolver: Resolver | None = None,
) -> httpx.AsyncClient:
    """A client for URLs from outside: every hop address-checked and pinned (see above)."""
    transport = GuardedTransport(
        allow_private=settings.allow_private_urls, trusted=trusted, resolver=resolver
    )
    browser = {"User-Agent": USER_AGENT, "Accept-Encoding": ACCEPT_ENCODING, **(headers or {})}
    return httpx.AsyncClient(transport=transport, **_options(timeout, browser))


def operator_urls(settings: Settings, fields: Iterable[EndpointField]) -> list[str]:
    """The URLs among the endpoint ``fields`` that the operator configured (flags, the
    environment, or the profile of a Companion without accounts), not a person."""
    urls = ((field, getattr(settings, field)) for field in fields)
    return [url for field, url in urls if url and field not in settings.personal_endpoints]


def endpoint_client(
    settings: Settings,
    *fields: EndpointField,
    timeout: httpx.Timeout,
    headers: dict[str, str] | None = None,
) -> httpx.AsyncClient:
    """A client for configured endpoints (``fields`` of Settings: the image backend, the
    search and weather services, the chat endpoint). The origin of an endpoint the
    operator configured is reached as configured, loopback and private networks
    included; a person's endpoint, and every other origin a redirect leads to, must
    resolve to public addresses."""
    trusted = operator_urls(settings, fields)
    return guarded_client(settings, timeout=timeout, headers=headers, trusted=trusted)


def model_clients(settings: Settings) -> tuple[httpx.Client, httpx.AsyncClient]:
    """The chat endpoint's clients (blocking and async, for the OpenAI client), under the
    rule of ``endpoint_client``; the OpenAI client sends its own headers and time limits."""
    private, trusted = settings.allow_private_urls, operator_urls(settings, ("base_url",))
    options = _options(settings.request_timeout, None)
    return (
        httpx.Client(
            transport=SyncGuardedTransport(allow_private=private, trusted=trusted), **options
        ),
        httpx.AsyncClient(
            transport=GuardedTransport(allow_private=private, trusted=trusted), **options
        ),
    )
