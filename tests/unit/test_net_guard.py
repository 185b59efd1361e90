"""tools.net: which addresses are public, the pinned transport, and bounded body reads.

The transport tests put httpx's own ``MockTransport`` where the sockets would be, so
they see exactly which address a request was sent to, without leaving the machine. The
endpoint tests use real loopback services: the operator's endpoint on 127.0.0.1 is
reached, a person's is not, and a redirect off the operator's origin is checked.
"""

from __future__ import annotations

import gzip
import shutil
import ssl
import subprocess
import threading
import zlib
from collections.abc import Callable, Iterator
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from config.settings import Settings
from evals.fixtures import FixtureServer, RecordedRequest, Reply
from tools.net import (
    GuardedTransport,
    Refused,
    TooLarge,
    endpoint_client,
    guarded_client,
    is_public,
    model_clients,
    operator_urls,
    read_limited,
)

PUBLIC_ADDRESS = "93.184.215.14"


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "127.8.9.10",
        "10.0.0.1",
        "172.16.0.1",
        "192.168.1.1",
        "169.254.169.254",
        "100.64.0.1",
        "0.0.0.0",
        "224.0.0.1",
        "240.0.0.1",
        "255.255.255.255",
        "::1",
        "::",
        "fe80::1",
        "fe80::1%eth0",
        "fc00::1",
        "fec0::1",
        "ff02::1",
        "2001:db8::1",
        "::ffff:127.0.0.1",
        "::127.0.0.1",  # IPv4-compatible
        "64:ff9b::7f00:1",  # NAT64 of 127.0.0.1
        "64:ff9b::a9fe:a9fe",  # NAT64 of 169.254.169.254
        "2002:7f00:1::",  # 6to4 of 127.0.0.1
        "2002:c0a8:101::1",  # 6to4 of 192.168.1.1
        "64:ff9b:1::a00:1",  # local-use NAT64
        "not an address",
    ],
)
def test_local_and_embedded_local_addresses_are_not_public(address: str) -> None:
    assert is_public(address) is False


@pytest.mark.parametrize(
    "address",
    ["93.184.215.14", "8.8.8.8", "2606:4700:4700::1111", "::ffff:8.8.8.8", "64:ff9b::808:808"],
)
def test_public_addresses_are_public(address: str) -> None:
    assert is_public(address) is True


Seen = list[dict[str, str | None]]


def recording(seen: Seen, reply: Callable[[httpx.Request], httpx.Response] | None = None):
    """A MockTransport that records where each request would have connected."""

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(
            {
                "connect_to": request.url.host,
                "host_header": request.headers["host"],
                "sni": request.extensions.get("sni_hostname"),
                "path": request.url.path,
            }
        )
        return reply(request) if reply else httpx.Response(200, content=b"ok")

    return httpx.MockTransport(handler)


def table_resolver(answers: dict[str, list[list[str]]], calls: list[str]):
    """A resolver answering each name from a script of successive answers (last repeats)."""

    async def resolve(host: str, port: int) -> list[str]:
        calls.append(host)
        script = answers[host]
        return script.pop(0) if len(script) > 1 else script[0]

    return resolve


async def test_connects_to_the_checked_address_not_a_second_lookup() -> None:
    """DNS rebinding: the name answers a public address, then 127.0.0.1."""
    seen: Seen = []
    calls: list[str] = []
    resolver = table_resolver({"rebind.example": [[PUBLIC_ADDRESS], ["127.0.0.1"]]}, calls)
    transport = GuardedTransport(resolver=resolver, inner=recording(seen))
    async with httpx.AsyncClient(transport=transport) as client:
        response = await client.get("https://rebind.example/cat.png")
        assert response.status_code == 200
        assert seen == [
            {
                "connect_to": PUBLIC_ADDRESS,
                "host_header": "rebind.example",
                "sni": "rebind.example",
                "path": "/cat.png",
            }
        ]
        assert calls == ["rebind.example"], "one lookup per request, and it is the one used"

        with pytest.raises(Refused, match=r"rebind\.example resolves to .*127\.0\.0\.1"):
            await client.get("https://rebind.example/cat.png")
    assert len(seen) == 1, "the rebound answer never reached a connection"


async def test_every_address_of_a_name_is_checked() -> None:
    seen: Seen = []
    resolver = table_resolver({"mixed.example": [[PUBLIC_ADDRESS, "127.0.0.1"]]}, [])
    transport = GuardedTransport(resolver=resolver, inner=recording(seen))
    async with httpx.AsyncClient(transport=transport) as client:
        with pytest.raises(Refused, match=r"127\.0\.0\.1"):
            await client.get("http://mixed.example/")
    assert seen == []


async def test_each_redirect_hop_is_checked_again() -> None:
    seen: Seen = []

    def reply(request: httpx.Request) -> httpx.Response:
        return httpx.Response(302, headers={"Location": "http://inner.example/secret.png"})

    resolver = table_resolver(
        {"public.example": [[PUBLIC_ADDRESS]], "inner.example": [["10.0.0.5"]]}, []
    )
    transport = GuardedTransport(resolver=resolver, inner=recording(seen, reply))
    async with httpx.AsyncClient(transport=transport, follow_redirects=True) as client:
        with pytest.raises(Refused, match=r"inner\.example resolves to .*10\.0\.0\.5"):
            await client.get("http://public.example/start.png")
    assert [hop["connect_to"] for hop in seen] == [PUBLIC_ADDRESS]


async def test_ipv6_literals_carrying_loopback_are_refused_without_a_lookup() -> None:
    seen: Seen = []
    calls: list[str] = []
    transport = GuardedTransport(resolver=table_resolver({}, calls), inner=recording(seen))
    async with httpx.AsyncClient(transport=transport) as client:
        for host in ("[::127.0.0.1]", "[64:ff9b::7f00:1]", "[2002:7f00:1::]", "[::ffff:7f00:1]"):
            with pytest.raises(Refused):
                await client.get(f"http://{host}:8080/cat.png")
    assert seen == [] and calls == []


async def test_allow_private_still_connects_to_the_resolved_address() -> None:
    seen: Seen = []
    resolver = table_resolver({"nas.local": [["192.168.1.20"]]}, [])
    transport = GuardedTransport(allow_private=True, resolver=resolver, inner=recording(seen))
    async with httpx.AsyncClient(transport=transport) as client:
        await client.get("http://nas.local:8000/cat.png")
    assert seen[0]["connect_to"] == "192.168.1.20"
    assert seen[0]["host_header"] == "nas.local:8000"


async def test_a_trusted_origin_is_sent_as_configured_and_only_that_origin() -> None:
    seen: Seen = []
    calls: list[str] = []
    resolver = table_resolver({"backend.lan": [["10.0.0.7"]]}, calls)
    transport = GuardedTransport(
        trusted=["http://backend.lan:7860/v1"], resolver=resolver, inner=recording(seen)
    )
    async with httpx.AsyncClient(transport=transport) as client:
        await client.get("http://backend.lan:7860/files/cat.png")
        with pytest.raises(Refused):
            await client.get("http://backend.lan:9999/files/cat.png")
    assert [hop["connect_to"] for hop in seen] == ["backend.lan"]
    assert calls == ["backend.lan"], "only the untrusted port was looked up"


async def test_other_schemes_are_refused_at_every_hop() -> None:
    def reply(request: httpx.Request) -> httpx.Response:
        return httpx.Response(302, headers={"Location": "file:///etc/passwd"})

    resolver = table_resolver({"public.example": [[PUBLIC_ADDRESS]]}, [])
    transport = GuardedTransport(resolver=resolver, inner=recording([], reply))
    async with httpx.AsyncClient(transport=transport, follow_redirects=True) as client:
        with pytest.raises(httpx.HTTPError):
            await client.get("http://public.example/")


async def test_guarded_client_refuses_loopback_by_default() -> None:
    async with guarded_client(Settings(), timeout=httpx.Timeout(1.0)) as client:
        with pytest.raises(Refused):
            await client.get("http://127.0.0.1:9/")
        with pytest.raises(Refused):
            await client.get("http://localhost:9/")


def body_response(body: bytes, encoding: str | None = None) -> httpx.Response:
    headers = {"Content-Encoding": encoding} if encoding else {}

    async def chunks():
        for start in range(0, len(body), 16 * 1024):
            yield body[start : start + 16 * 1024]

    return httpx.Response(200, headers=headers, content=chunks())


@pytest.mark.parametrize(
    ("encoding", "encode"),
    [(None, bytes), ("gzip", gzip.compress), ("deflate", zlib.compress)],
)
async def test_read_limited_decodes_what_fits(encoding, encode) -> None:
    page = b"<p>hello</p>" * 10_000
    assert await read_limited(body_response(encode(page), encoding), len(page)) == page


async def test_read_limited_stops_a_compression_bomb_at_the_cap() -> None:
    bomb = gzip.compress(bytes(20 * 1024 * 1024), compresslevel=9)
    assert len(bomb) < 40 * 1024
    with pytest.raises(TooLarge):
        await read_limited(body_response(bomb, "gzip"), 1024 * 1024)


async def test_read_limited_refuses_what_it_cannot_decode() -> None:
    with pytest.raises(httpx.DecodingError, match="unsupported Content-Encoding 'br'"):
        await read_limited(body_response(b"\x00\x01", "br"), 1024)
    with pytest.raises(httpx.DecodingError, match="corrupt"):
        await read_limited(body_response(b"not gzip at all", "gzip"), 1024)


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def tls_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, Path, list[str]]]:
    """An HTTPS server on 127.0.0.1 whose certificate names only ``cats.example``.

    Yields its port, the CA file that signed it, and the SNI names it was greeted with.
    """
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command to make a certificate")
    folder = tmp_path_factory.mktemp("tls")
    curve = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")
    _openssl("req", "-x509", *curve, "-keyout", "ca.key", "-out", "ca.pem", "-days", "1",
             "-subj", "/CN=Test CA", cwd=folder)  # fmt: skip
    _openssl("req", *curve, "-keyout", "site.key", "-out", "site.csr",
             "-subj", "/CN=cats.example", cwd=folder)  # fmt: skip
    (folder / "san.cnf").write_text("subjectAltName=DNS:cats.example\n")
    _openssl("x509", "-req", "-in", "site.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
             "-CAcreateserial", "-out", "site.pem", "-days", "1", "-extfile", "san.cnf",
             cwd=folder)  # fmt: skip

    greeted: list[str] = []
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(folder / "site.pem", folder / "site.key")
    context.sni_callback = lambda sock, name, ctx: greeted.append(str(name))

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = self.headers["Host"].encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            """Quiet."""

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield server.server_address[1], folder / "ca.pem", greeted
    finally:
        server.shutdown()
        server.server_close()


async def test_https_to_the_pinned_address_still_checks_the_certificate_for_the_name(
    tls_site: tuple[int, Path, list[str]],
) -> None:
    port, ca_file, greeted = tls_site
    resolver = table_resolver({"cats.example": [["127.0.0.1"]]}, [])
    verify = ssl.create_default_context(cafile=str(ca_file))
    transport = GuardedTransport(
        allow_private=True, resolver=resolver, inner=httpx.AsyncHTTPTransport(verify=verify)
    )
    async with httpx.AsyncClient(transport=transport) as client:
        response = await client.get(f"https://cats.example:{port}/cat.png")
    assert response.text == f"cats.example:{port}"
    assert greeted == ["cats.example"]

    unpinned = httpx.AsyncClient(verify=ssl.create_default_context(cafile=str(ca_file)))
    async with unpinned:
        with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
            await unpinned.get(f"https://127.0.0.1:{port}/cat.png")


class Service(FixtureServer):
    """A loopback HTTP service: ``/ok`` answers 200, ``/redirect?to=URL`` answers 302 to URL."""

    def handle(self, request: RecordedRequest) -> Reply:
        if request.path == "/redirect":
            return Reply(302, headers={"Location": request.param("to") or "/"})
        return Reply(200, b"ok", "text/plain")


@pytest.fixture
def services() -> Iterator[tuple[Service, Service]]:
    """The operator's endpoint, and an internal service nobody configured."""
    with Service() as endpoint, Service() as internal:
        yield endpoint, internal


def by_name(service: Service) -> str:
    """``service``'s ``/ok`` named as localhost: another origin than its 127.0.0.1 URL."""
    return f"{service.url.replace('127.0.0.1', 'localhost')}/ok"


def chat_endpoint(url: str, *, personal: bool = False) -> Settings:
    """Settings with ``url`` as the chat endpoint: the operator's, or a person's."""
    mine = frozenset({"base_url"}) if personal else frozenset()
    return Settings(provider="openai-compatible", base_url=url, personal_endpoints=mine)


async def test_the_operators_loopback_endpoint_is_reached_and_a_persons_is_not(services):
    endpoint, _ = services
    timeout = httpx.Timeout(5.0)
    async with endpoint_client(chat_endpoint(endpoint.url), "base_url", timeout=timeout) as c:
        assert (await c.get(f"{endpoint.url}/ok")).text == "ok"
    personal = chat_endpoint(endpoint.url, personal=True)
    async with endpoint_client(personal, "base_url", timeout=timeout) as client:
        with pytest.raises(Refused, match=r"127\.0\.0\.1 resolves to a private or local address"):
            await client.get(f"{endpoint.url}/ok")
    assert len(endpoint.requests) == 1, "the person's request never left"


@pytest.mark.parametrize("where", ["http://169.254.169.254/latest/meta-data/", "internal"])
async def test_a_redirect_off_the_operators_endpoint_is_checked(services, where):
    endpoint, internal = services
    target = (
        f"http://localhost:{internal.url.rsplit(':', 1)[1]}/ok" if where == "internal" else where
    )
    settings = chat_endpoint(endpoint.url)
    async with endpoint_client(settings, "base_url", timeout=httpx.Timeout(5.0)) as client:
        with pytest.raises(Refused, match="private or local address"):
            await client.get(f"{endpoint.url}/redirect", params={"to": target})
    assert internal.requests == []


def test_the_chat_models_blocking_client_follows_the_same_rule(services):
    endpoint, internal = services
    sync, _ = model_clients(chat_endpoint(endpoint.url))
    with sync:
        assert sync.get(f"{endpoint.url}/ok").text == "ok"
        with pytest.raises(Refused):
            sync.get(f"{endpoint.url}/redirect", params={"to": by_name(internal)})
    personal, _ = model_clients(chat_endpoint(endpoint.url, personal=True))
    with personal, pytest.raises(Refused):
        personal.get(f"{endpoint.url}/ok")
    assert internal.requests == []


async def test_the_chat_models_async_client_follows_the_same_rule(services):
    endpoint, _ = services
    _, operators = model_clients(chat_endpoint(endpoint.url))
    async with operators:
        assert (await operators.get(f"{endpoint.url}/ok")).text == "ok"
    _, persons = model_clients(chat_endpoint(endpoint.url, personal=True))
    async with persons:
        with pytest.raises(Refused):
            await persons.get(f"{endpoint.url}/ok")


def test_private_urls_allowed_by_the_operator_open_a_persons_endpoint_too(services):
    endpoint, _ = services
    settings = replace(chat_endpoint(endpoint.url, personal=True), allow_private_urls=True)
    sync, _ = model_clients(settings)
    with sync:
        assert sync.get(f"{endpoint.url}/ok").text == "ok"


def test_operator_urls_leave_out_a_persons_endpoints() -> None:
    settings = Settings(
        base_url="http://127.0.0.1:1/v1",
        image_base_url="http://127.0.0.1:2/v1",
        personal_endpoints=frozenset({"image_base_url"}),
    )
    fields = ("base_url", "image_base_url", "web_search_url")
    assert operator_urls(settings, fields) == [
        "http://127.0.0.1:1/v1",
        "https://html.duckduckgo.com/html/",
    ]
