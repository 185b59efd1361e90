"""The running app against strangers, over raw HTTP: Host check, CSP, login throttle,
upload cap, another site's pages (CORS, cookies, framing, login CSRF), what a stranger
without a login reaches, streams per address; and the real ``companion`` command refusing
unsafe ways to serve."""

from __future__ import annotations

import os
import select
import socket
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from app.security import CONTENT_SECURITY_POLICY, MAX_STREAMS_PER_ADDRESS
from app.ui import MAX_UPLOAD_BYTES
from memory.rules.passwords import FIRST_LOCK_SECONDS, LOGIN_FREE_FAILURES

EVIL = "evil.example"
PASSWORD = "s3cret"


def http(url: str, host: str | None = None) -> httpx.Client:
    """A client on the app that sends ``Host: host`` (and a matching Origin), as a
    DNS-rebinding page in a browser would."""
    headers = {"Host": host, "Origin": f"http://{host}"} if host else {}
    return httpx.Client(base_url=url, headers=headers, timeout=30)


def history_via_api(client: httpx.Client) -> httpx.Response:
    """The latest conversation, read through the public API (Gradio's /call route)."""
    started = client.post("/gradio_api/call/load", json={"data": []})
    if started.status_code != 200:
        return started
    return client.get(f"/gradio_api/call/load/{started.json()['event_id']}")


def test_a_stranger_host_is_refused_on_every_route(launch) -> None:
    app = launch()
    app.store.add_message("victim", "user", "my PIN is 4321")
    with http(app.url, EVIL) as evil:
        for route in ("/", "/config", "/gradio_api/info", "/gradio_api/queue/data?session_hash=x"):
            refused = evil.get(route)
            assert refused.status_code == 400, route
            assert refused.text == "Invalid host header"
        assert evil.post("/gradio_api/queue/join", json={}).status_code == 400
        assert history_via_api(evil).status_code == 400
    with http(app.url, urlsplit(app.url).netloc) as own:
        assert own.get("/").status_code == 200
        assert "my PIN is 4321" in history_via_api(own).text


def test_allowed_hosts_and_localhost_are_answered(launch) -> None:
    app = launch(allowed_hosts=("companion.lan",))
    port = urlsplit(app.url).port
    for host in (f"companion.lan:{port}", f"localhost:{port}", f"[::1]:{port}", "127.0.0.1"):
        with http(app.url, host) as client:
            assert client.get("/config").status_code == 200, host
    with http(app.url, f"companion.lan.{EVIL}") as evil:
        assert evil.get("/config").status_code == 400


def test_every_response_carries_the_content_security_policy(launch) -> None:
    app = launch()
    with http(app.url) as client:
        for route in ("/", "/config", "/gradio_api/info"):
            policy = client.get(route).headers["content-security-policy"]
            assert policy == CONTENT_SECURITY_POLICY
    assert "img-src 'self' data: blob:" in CONTENT_SECURITY_POLICY


def login(client: httpx.Client, password: str) -> httpx.Response:
    return client.post("/login", data={"username": "companion", "password": password})


def test_failed_logins_lock_the_address_even_for_the_right_password(launch) -> None:
    app = launch(password=PASSWORD)
    with http(app.url) as client:
        failures = [login(client, "guess").status_code for _ in range(LOGIN_FREE_FAILURES)]
        assert failures == [400] * LOGIN_FREE_FAILURES
        refused = login(client, PASSWORD)  # the sixth attempt, well within the lock
        assert refused.status_code == 429
        assert "Too many failed logins" in refused.json()["detail"]
        time.sleep(FIRST_LOCK_SECONDS + 0.2)
        assert login(client, PASSWORD).status_code == 200


def upload_until_answered(url: str, total: int) -> tuple[int, bytes]:
    """Stream a ``total``-byte image upload over a raw socket, as a browser does (with a
    Content-Length), and stop at the server's first answer; (bytes sent, answer)."""
    parts = urlsplit(url)
    head = (
        b'--B\r\nContent-Disposition: form-data; name="files"; filename="big.png"\r\n'
        b"Content-Type: image/png\r\n\r\n\x89PNG\r\n\x1a\n"
    )
    tail = b"\r\n--B--\r\n"
    request = (
        f"POST /gradio_api/upload HTTP/1.1\r\nHost: {parts.netloc}\r\n"
        "Content-Type: multipart/form-data; boundary=B\r\n"
        f"Content-Length: {len(head) + total + len(tail)}\r\n\r\n"
    ).encode()
    chunk, sent = b"\0" * (1 << 20), 0
    with socket.create_connection((parts.hostname, parts.port), timeout=30) as sock:
        sock.sendall(request + head)
        try:
            while sent < total:
                if select.select([sock], [], [], 0)[0]:
                    break
                sock.sendall(chunk)
                sent += len(chunk)
        except OSError:  # the server hung up: it answered before reading everything
            pass
        return sent, _whole_answer(sock)


def _whole_answer(sock: socket.socket) -> bytes:
    """The HTTP answer, headers and body (which may come in later packets)."""
    answer = b""
    while b"\r\n\r\n" not in answer or len(answer.partition(b"\r\n\r\n")[2]) < _length(answer):
        try:
            more = sock.recv(65536)
        except OSError:
            break
        if not more:
            break
        answer += more
    return answer


def _length(answer: bytes) -> int:
    for line in answer.partition(b"\r\n\r\n")[0].split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value.strip())
    return 0


def test_an_upload_over_the_cap_is_refused_before_it_is_read_whole(launch) -> None:
    app = launch()
    total = 300 * (1 << 20)
    sent, answer = upload_until_answered(app.url, total)
    assert answer.startswith(b"HTTP/1.1 413")
    assert f"maximum allowed size of {MAX_UPLOAD_BYTES} bytes".encode() in answer
    assert sent < 2 * MAX_UPLOAD_BYTES < total


def companion(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The real ``companion`` command (it must refuse before it binds anything)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("COMPANION_", "OPENROUTER_"))}
    return subprocess.run(
        [sys.executable, "-m", "app.cli", "--home", str(home), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**clean, **env},
    )


def test_serving_beyond_loopback_without_a_password_is_refused(tmp_path: Path) -> None:
    done = companion(tmp_path, "--host", "0.0.0.0", "--port", "9")
    assert done.returncode == 2
    assert "refusing to serve on 0.0.0.0 without a password" in done.stderr
    # Refused before the bundled model's warm start: no server was started to outlive it.
    assert not list((tmp_path / "logs").glob("llama-server-*.log"))


@pytest.mark.parametrize("flag", ["--password=x", "--password="])
def test_there_is_no_password_flag_since_a_command_line_shows_in_ps(
    tmp_path: Path, flag: str
) -> None:
    done = companion(tmp_path, flag)  # COMPANION_PASSWORD replaces it
    assert done.returncode == 2 and f"unrecognized arguments: {flag}" in done.stderr


# -- another site's pages, logins and what a stranger may reach (issue 19) -----------------

COMPANION_TEST = "companion.test"  # a real host name: Gradio's CORS is lax beyond localhost
EVIL_ORIGIN = {"Origin": f"http://{EVIL}"}


def logged_in(url: str, host: str | None = None) -> httpx.Client:
    """A browser on the app's own page (``Host: host`` and its own Origin), logged in."""
    client = http(url, host)
    assert login(client, PASSWORD).status_code == 200
    return client


def test_another_sites_page_gets_no_credentialed_answer(launch) -> None:
    app = launch(password=PASSWORD, allowed_hosts=(COMPANION_TEST,))
    app.store.add_message("victim", "user", "my PIN is 4321")
    host = f"{COMPANION_TEST}:{urlsplit(app.url).port}"
    with closing(logged_in(app.url, host)) as client:
        preflight = client.options(
            "/gradio_api/call/load",
            headers={**EVIL_ORIGIN, "Access-Control-Request-Method": "POST"},
        )
        call = client.post("/gradio_api/call/load", json={"data": []}, headers=EVIL_ORIGIN)
        read = client.get("/gradio_api/info", headers=EVIL_ORIGIN)
        for answer in (preflight, call, read):
            assert answer.status_code == 403
            assert "access-control-allow-origin" not in answer.headers
            assert "access-control-allow-credentials" not in answer.headers
        assert "my PIN is 4321" in history_via_api(client).text  # the app's own page reads


def test_the_login_cookie_is_same_site_and_no_page_may_frame_the_app(launch) -> None:
    app = launch(password=PASSWORD)
    with http(app.url) as client:
        cookies = login(client, PASSWORD).headers.get_list("set-cookie")
        page = client.get("/")
    assert len(cookies) == 2
    assert all("samesite=lax" in cookie.lower() for cookie in cookies)
    assert page.headers["x-frame-options"] == "DENY"
    assert "frame-ancestors 'none'" in page.headers["content-security-policy"]


def test_a_login_or_a_logout_from_another_site_is_refused(launch) -> None:
    app = launch(password=PASSWORD)
    form = {"username": "companion", "password": PASSWORD}
    with httpx.Client(base_url=app.url, timeout=30) as browser:
        forged = browser.post("/login", data=form, headers=EVIL_ORIGIN)
        blind = browser.post("/login", data=form, headers={"Sec-Fetch-Site": "cross-site"})
        for answer in (forged, blind):
            assert answer.status_code == 403 and "set-cookie" not in answer.headers
    with closing(logged_in(app.url)) as client:
        away = client.get("/logout", headers={"Sec-Fetch-Site": "cross-site"})
        assert away.status_code == 403
        assert client.get("/gradio_api/login_check").status_code == 200


def test_without_a_login_only_the_login_page_and_its_files(launch) -> None:
    app = launch(password=PASSWORD)
    with http(app.url) as stranger:
        with stranger.stream("GET", "/gradio_api/heartbeat/any") as beat:
            assert beat.status_code == 401
        for route in ("/config", "/gradio_api/info", "/gradio_api/queue/data?session_hash=x"):
            assert stranger.get(route).status_code == 401, route
        page = stranger.get("/")
        assert page.status_code == 200 and '"/load"' not in page.text  # no API schema
        assert stranger.get("/theme.css").status_code == 200
        assert login(stranger, PASSWORD).status_code == 200
        assert '"/load"' in stranger.get("/").text


def open_heartbeat(url: str, cookie: str) -> socket.socket:
    """A heartbeat stream held open on a raw connection, once its answer has begun."""
    parts = urlsplit(url)
    sock = socket.create_connection((parts.hostname, parts.port), timeout=30)
    sock.sendall(
        f"GET /gradio_api/heartbeat/{time.monotonic_ns()} HTTP/1.1\r\nHost: {parts.netloc}\r\n"
        f"Cookie: {cookie}\r\n\r\n".encode()
    )
    assert sock.recv(4096).startswith(b"HTTP/1.1 200"), "a heartbeat within the cap"
    return sock


def test_an_address_may_hold_only_so_many_streams_open(launch) -> None:
    app = launch(password=PASSWORD)
    with closing(logged_in(app.url)) as client:
        cookie = "; ".join(f"{c.name}={c.value}" for c in client.cookies.jar)
        held = [open_heartbeat(app.url, cookie) for _ in range(MAX_STREAMS_PER_ADDRESS)]
        try:
            with client.stream("GET", "/gradio_api/heartbeat/one-more") as refused:
                assert refused.status_code == 429
            assert client.get("/gradio_api/login_check").status_code == 200  # not a stream
        finally:
            for sock in held:
                sock.close()
