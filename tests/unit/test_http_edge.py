"""``app.security``'s guards on their own: which origins are the app's, what another
site's page may send, the headers every answer carries, whose files a request may name,
and the caps on what one address keeps open (Starlette's TestClient, no server)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from app.logins import USER_KEY
from app.security import (
    MAX_STREAMS_PER_ADDRESS,
    ConnectionCaps,
    CrossOrigin,
    FileOwners,
    InFlight,
    SecurityHeaders,
    Uploads,
    own_origin,
)


@pytest.mark.parametrize(
    ("origin", "host", "own"),
    [
        ("http://127.0.0.1:7860", "127.0.0.1:7860", True),
        ("https://companion.test", "companion.test", True),
        ("https://companion.test", "companion.test:443", True),
        ("http://COMPANION.test:80", "companion.test", True),
        ("http://[::1]:7860", "[::1]:7860", True),
        ("https://companion.test", "127.0.0.1:7860", True),  # an allowed name, via a proxy
        ("https://app.tail.example", "127.0.0.1:7860", True),  # *.tail.example is allowed
        ("http://evil.example", "companion.test", False),
        ("http://127.0.0.1:9999", "127.0.0.1:7860", False),  # another port, another origin
        ("http://localhost:7860", "127.0.0.1:7860", False),
        ("https://127.0.0.1:7860", "127.0.0.1:7860", True),  # one port serves one scheme
        ("http://companion.test.evil.example", "companion.test", False),
        ("null", "companion.test", False),
        ("file://", "companion.test", False),
        ("http://x:99999", "x:99999", False),
    ],
)  # fmt: skip
def test_own_origins(origin: str, host: str, own: bool) -> None:
    assert own_origin(origin, host, ("companion.test", "*.tail.example")) is own


def echo_app(*middleware: Middleware) -> Starlette:
    """Routes that answer "ok" (or who asked), behind ``middleware``."""

    async def ok(request: Request) -> PlainTextResponse:
        return PlainTextResponse("ok")

    methods = ["GET", "POST", "OPTIONS"]
    routes = [Route("/gradio_api/call/memories", ok, methods=methods), Route("/logout", ok)]
    return Starlette(routes=routes, middleware=list(middleware))


@pytest.mark.parametrize(
    ("method", "headers", "status"),
    [
        ("POST", {"Origin": "http://evil.example"}, 403),
        ("GET", {"Origin": "http://evil.example"}, 403),
        ("OPTIONS", {"Origin": "http://evil.example", "Access-Control-Request-Method": "GET"}, 403),
        ("POST", {"Origin": "null"}, 403),
        ("POST", {"Sec-Fetch-Site": "cross-site"}, 403),  # a browser that sent no Origin
        ("POST", {"Sec-Fetch-Site": "same-site"}, 403),
        ("GET", {"Sec-Fetch-Site": "cross-site"}, 200),  # a link followed from elsewhere
        ("POST", {"Origin": "http://testserver"}, 200),
        ("POST", {"Sec-Fetch-Site": "same-origin"}, 200),
        ("POST", {}, 200),  # not a browser: a script, gradio_client
    ],
)  # fmt: skip
def test_another_sites_requests_are_refused(
    method: str, headers: dict[str, str], status: int
) -> None:
    client = TestClient(echo_app(Middleware(CrossOrigin)))
    answer = client.request(method, "/gradio_api/call/memories", headers=headers)
    assert answer.status_code == status
    assert "access-control-allow-origin" not in answer.headers


def test_a_logout_from_another_site_is_refused() -> None:
    client = TestClient(echo_app(Middleware(CrossOrigin)))
    assert client.get("/logout", headers={"Sec-Fetch-Site": "cross-site"}).status_code == 403
    assert client.get("/logout", headers={"Sec-Fetch-Site": "same-origin"}).status_code == 200


def test_every_answer_forbids_framing() -> None:
    client = TestClient(echo_app(Middleware(SecurityHeaders)))
    headers = client.get("/logout").headers
    assert "frame-ancestors 'none'" in headers["content-security-policy"]
    assert headers["x-frame-options"] == "DENY"
    assert headers["x-content-type-options"] == "nosniff"


@pytest.fixture
def folders(tmp_path: Path) -> dict[str, Path]:
    made = {name: tmp_path / name for name in ("ann", "bob", "uploads", "elsewhere")}
    for folder in made.values():
        folder.mkdir()
        (folder / "x.png").write_bytes(b"png")
    return made


def owners(folders: dict[str, Path], uploads: Uploads) -> FileOwners:
    media = {"ann": folders["ann"], "bob": folders["bob"]}
    return FileOwners(echo_app(), media, folders["uploads"], uploads)


def test_a_person_may_name_their_own_files_only(folders: dict[str, Path]) -> None:
    uploads = Uploads()
    uploads.record((folders["uploads"] / "x.png").resolve(), "Ann")
    guard = owners(folders, uploads)
    ann_image, upload = str(folders["ann"] / "x.png"), str(folders["uploads"] / "x.png")
    assert guard.may_name(ann_image, "ann") and guard.may_name(ann_image, "ANN")
    assert not guard.may_name(ann_image, "bob") and not guard.may_name(ann_image, None)
    sneaky = folders["bob"] / ".." / "ann" / "x.png"
    assert not guard.may_name(str(sneaky), "bob")
    assert guard.may_name(upload, "ann") and not guard.may_name(upload, "bob")
    assert not guard.may_name(str(folders["uploads"] / "other.png"), "ann")  # nobody's
    assert guard.may_name(str(folders["elsewhere"] / "x.png"), "bob")  # Gradio decides
    assert not guard.may_name("http://127.0.0.1:9/x.png", "ann")  # Gradio would fetch it
    assert not guard.may_name("a\0b", "ann")


def test_a_link_to_anothers_media_elsewhere_is_theirs(folders: dict[str, Path]) -> None:
    link = folders["bob"] / "link.png"
    link.symlink_to(folders["ann"] / "x.png")
    assert not owners(folders, Uploads()).may_name(str(link), "bob")


def file_app(folders: dict[str, Path], uploads: Uploads, user: str) -> TestClient:
    """The file guard behind a stand-in login gate that says ``user`` asks."""

    def as_user(app: Any) -> Any:
        async def gate(scope: Any, receive: Any, send: Any) -> None:
            scope.setdefault("state", {})[USER_KEY] = user
            await app(scope, receive, send)

        return gate

    async def ok(request: Request) -> PlainTextResponse:
        return PlainTextResponse(f"ok {len(await request.body())}")

    async def upload(request: Request) -> PlainTextResponse:
        return PlainTextResponse(f'["{folders["uploads"] / "x.png"}"]')

    routes = [
        Route("/gradio_api/file={path:path}", ok),
        Route("/gradio_api/file/{path:path}", ok),
        Route("/gradio_api/upload", upload, methods=["POST"]),
        Route("/gradio_api/queue/join", ok, methods=["POST"]),
    ]
    media = {"ann": folders["ann"], "bob": folders["bob"]}
    guarded = Middleware(FileOwners, owners=media, upload_dir=folders["uploads"], uploads=uploads)
    return TestClient(as_user(Starlette(routes=routes, middleware=[guarded])))


def test_both_file_routes_and_posted_json_are_checked(folders: dict[str, Path]) -> None:
    uploads = Uploads()
    bob = file_app(folders, uploads, "bob")
    ann_image = folders["ann"] / "x.png"
    assert bob.get(f"/gradio_api/file={ann_image}").status_code == 404
    assert bob.get(f"/gradio_api/file/{ann_image}").status_code == 404
    assert bob.get(f"/gradio_api/file/{folders['bob'] / 'x.png'}").status_code == 200
    named = {"data": [{"text": "hi", "files": [{"path": str(ann_image)}]}]}
    assert bob.post("/gradio_api/queue/join", json=named).status_code == 403
    escaped = '{"data": [{"path": "' + str(ann_image).replace("/", "\\/") + '"}]}'
    assert bob.post("/gradio_api/queue/join", content=escaped).status_code == 403
    body = b'{"data": ["hello"]}'
    answered = bob.post("/gradio_api/queue/join", content=body)
    assert answered.text == f"ok {len(body)}"  # the body still reaches the app


def test_an_upload_belongs_to_whoever_made_it(folders: dict[str, Path]) -> None:
    uploads = Uploads()
    upload = folders["uploads"] / "x.png"
    ann, bob = file_app(folders, uploads, "ann"), file_app(folders, uploads, "bob")
    assert ann.get(f"/gradio_api/file={upload}").status_code == 404  # not uploaded yet
    assert ann.post("/gradio_api/upload", files={"files": ("x.png", b"png")}).status_code == 200
    assert ann.get(f"/gradio_api/file={upload}").status_code == 200
    assert bob.get(f"/gradio_api/file={upload}").status_code == 404
    assert (
        bob.post("/gradio_api/queue/join", json={"data": [{"path": str(upload)}]}).status_code
        == 403
    )


async def test_an_address_may_keep_only_so_many_streams_open() -> None:
    release = asyncio.Event()

    async def stream(scope: Any, receive: Any, send: Any) -> None:
        await release.wait()
        await PlainTextResponse("done")(scope, receive, send)

    caps = ConnectionCaps(stream, in_flight=InFlight())
    answers: list[int] = []

    async def send(message: Any) -> None:
        if message["type"] == "http.response.start":
            answers.append(message["status"])

    async def receive() -> Any:
        return {"type": "http.request", "body": b""}

    def request(path: str, address: str = "10.0.0.1") -> Any:
        scope = {
            "type": "http",
            "method": "GET",
            "path": path,
            "headers": [],
            "client": (address, 1),
        }
        return asyncio.create_task(caps(scope, receive, send))

    held = [request(f"/gradio_api/heartbeat/{n}") for n in range(MAX_STREAMS_PER_ADDRESS)]
    await asyncio.sleep(0)
    await request("/gradio_api/heartbeat/one-more")
    assert answers == [429]
    held.append(request("/gradio_api/queue/data", "10.0.0.2"))  # another address
    await asyncio.sleep(0)
    assert answers == [429]
    release.set()
    await asyncio.gather(*held)
    assert answers.count(200) == MAX_STREAMS_PER_ADDRESS + 1
    assert caps.in_flight.streams == {} and caps.in_flight.requests == {}
