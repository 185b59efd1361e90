"""In a real chromium: what a model writes never makes the browser fetch a remote URL,
and the app's own images still show under its Content-Security-Policy; with accounts, a
person logs in through the login form, and a page of another origin can neither read
their data through the API nor frame the app."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from app.ui import launch_app
from evals.fixtures import ImageFixture, cat_image
from graph.setup import People
from memory.sqlite.accounts import SqliteAccounts
from memory.sqlite.memories import create_memory
from memory.sqlite.store import SqliteStore
from tests.e2e.harness import free_port, loaded, policy, send, sidebar_open
from tests.support.chat_model import ScriptedChatModel

TIMEOUT_MS = 15_000


@pytest.fixture
def elsewhere() -> Iterator[ImageFixture]:
    """Another origin (a loopback port that is not the app's), recording what reaches it."""
    with ImageFixture() as server:
        yield server


def test_a_model_written_image_is_a_link_and_never_fetched(
    page: Any, elsewhere: ImageFixture
) -> None:
    pin_url = f"{elsewhere.image_url()}?pin=4321"
    send(page, f"show me a picture {pin_url}")
    answer = page.locator("#chatbot [data-testid='bot'] .message-content").last
    expect(answer).to_contain_text("Here it is:", timeout=TIMEOUT_MS)
    expect(answer.locator(f"a[href='{pin_url}']")).to_have_text("pin")
    expect(answer).to_contain_text('img src="')  # the tag is shown as text
    assert answer.locator("img").count() == 0
    page.wait_for_timeout(500)
    assert elsewhere.requests == []


def test_the_policy_blocks_a_remote_image_even_if_one_gets_in(
    page: Any, elsewhere: ImageFixture
) -> None:
    blocked = page.evaluate(
        """(url) => new Promise((resolve) => {
            document.addEventListener("securitypolicyviolation",
                (event) => resolve([event.violatedDirective, event.blockedURI]), {once: true});
            const img = document.createElement("img");
            img.src = url;
            document.body.appendChild(img);
        })""",
        f"{elsewhere.image_url()}?pin=4321",
    )
    assert blocked == ["img-src", f"{elsewhere.image_url()}?pin=4321"]
    page.wait_for_timeout(500)
    assert elsewhere.requests == []


def test_an_uploaded_image_still_shows(page: Any, tmp_path: Path) -> None:
    upload = tmp_path / "cat.png"
    upload.write_bytes(cat_image("black"))
    page.locator("#chat-input input[type='file']").set_input_files(str(upload))
    send(page, "what is this?")
    shown = page.locator("#chatbot [data-testid='user'] img").last
    expect(shown).to_be_visible(timeout=TIMEOUT_MS)
    expect(shown).to_have_js_property("complete", True)
    assert shown.evaluate("img => img.naturalWidth") > 0


PASSWORDS = {"ann": "ann-password-1", "bob": "bob-password-2"}
SECRET = "PIN-4321-diabetic"  # ann's memory


@pytest.fixture(scope="module")
def with_accounts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """An app with accounts (ann, bob); ann has a memory. Its URL."""
    home = tmp_path_factory.mktemp("accounts") / "home"
    accounts = SqliteAccounts.open_home(home)
    for name, password in PASSWORDS.items():
        accounts.add(name, password)
    store = SqliteStore.open_home(home)  # ann, the first person, owns the home's own store
    store.set_profile({"chat_model": "scripted-chat"})
    create_memory(store, "signals", "health", SECRET)
    store.close()
    flags: dict[str, Any] = {"home": home, "provider": "openai-compatible"}
    model = ScriptedChatModel(script=policy, name_="scripted-chat")
    demo, url = launch_app(People(flags, env={}, chat_model=model), port=free_port())
    try:
        yield url.rstrip("/")
    finally:
        demo.close()


def log_in(page: Any, url: str, name: str) -> None:
    """Log in through the app's login form, as a person does."""
    page.goto(url)
    page.locator("input[type=password]").wait_for(timeout=TIMEOUT_MS)
    page.locator("input:not([type=password])").first.fill(name)
    page.locator("input[type=password]").fill(PASSWORDS[name])
    page.get_by_role("button", name="Login").click()
    loaded(page)


READ_MEMORIES = """async (app) => {
    try {
        const started = await fetch(app + "/gradio_api/call/memories", {
            method: "POST", credentials: "include",
            headers: {"Content-Type": "application/json"}, body: JSON.stringify({data: []}),
        });
        const {event_id} = await started.json();
        const read = await fetch(app + "/gradio_api/call/memories/" + event_id,
                                 {credentials: "include"});
        return await read.text();
    } catch (error) {
        return "blocked: " + error;
    }
}"""


class AnotherOrigin(BaseHTTPRequestHandler):
    """A page of another origin: another port of the app's host (a real loopback server:
    chromium treats a page it did not fetch from loopback as a public one)."""

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        self.wfile.write(b"<p>another site</p>")

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def other_origin() -> Iterator[str]:
    """The URL of a page on another origin."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), AnotherOrigin)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/page"
    finally:
        server.shutdown()
        server.server_close()


def test_another_origins_page_cannot_read_a_logged_in_persons_memories(
    browser: Any, with_accounts: str, other_origin: str
) -> None:
    """Issue 19's H1 in chromium: ann is logged in; a page of another origin (another
    port of the same host: the same site, so her Lax cookie goes along) tries the API."""
    context = browser.new_context()
    try:
        page = context.new_page()
        log_in(page, with_accounts, "ann")
        assert SECRET in page.evaluate(READ_MEMORIES, with_accounts)  # her own page reads them
        page.goto(other_origin)
        answer = page.evaluate(READ_MEMORIES, with_accounts)
        assert answer.startswith("blocked: TypeError") and SECRET not in answer
        cookies = {c["name"]: c["sameSite"] for c in context.cookies()}
        assert set(cookies.values()) == {"Lax"} and len(cookies) == 2
    finally:
        context.close()


def test_no_other_page_may_frame_the_app(
    browser: Any, with_accounts: str, other_origin: str
) -> None:
    context = browser.new_context()
    try:
        page = context.new_page()
        page.goto(other_origin)
        page.evaluate(
            """(app) => new Promise((loaded) => {
                const frame = document.createElement("iframe");
                frame.onload = loaded;  // a refused frame loads Chromium's error page
                frame.src = app;
                document.body.appendChild(frame);
            })""",
            with_accounts,
        )
        assert page.frames[-1].url == "chrome-error://chromewebdata/"
    finally:
        context.close()


@pytest.mark.parametrize("width", [390, 1440])
def test_the_sidebar_says_who_is_signed_in_and_logs_out(
    browser: Any, with_accounts: str, width: int
) -> None:
    context = browser.new_context(viewport={"width": width, "height": 844})
    try:
        page = context.new_page()
        page.goto(with_accounts)
        expect(page.get_by_text("Sign in with your name and password")).to_be_visible()
        log_in(page, with_accounts, "bob")
        expect(page.locator("#who")).to_have_text("Signed in as bob", timeout=TIMEOUT_MS)
        sidebar_open(page, "#logout")
        page.wait_for_timeout(1000)  # the slide settles (a late close by the load included)
        sidebar_open(page, "#logout")
        page.locator("#logout").click()
        page.locator("input[type=password]").wait_for(timeout=TIMEOUT_MS)  # the login again
        assert context.cookies() == []  # the login's cookies went with it
    finally:
        context.close()
