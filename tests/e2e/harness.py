"""What the browser tests and the README screenshot share: a scripted policy, the app
launched around it (Open-Meteo fixture for the weather tool), and Debian's chromium.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from evals.fixtures import OpenMeteoFixture
from memory.sqlite.store import SqliteStore
from tests.support.chat_model import ScriptedChatModel, slow, tool_call
from tools.base import ToolContext, ToolSpec
from tools.registry import ToolRegistry, builtin_specs

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--headless",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts"
ASK_LOCATION = "I can't tell where you are yet: which city are you in?"
NAP_SECONDS = 4.0
WORD_DELAY = 0.2  # seconds per word of SLOW_STORY: about 6 s for the whole answer
SLOW_STORY = " ".join(f"word{n}" for n in range(1, 31)) + " the end."


def _text(message: BaseMessage) -> str:
    return message.content if isinstance(message.content, str) else ""


def policy(messages: list[BaseMessage], kwargs: dict[str, Any]) -> str | AIMessage:
    """Weather → a native weather call; "nap" → a slow tool ("long nap", three times
    longer); "slowly" → a slowly streamed answer (SLOW_STORY; "very slowly", three times
    slower); "picture URL" → a reply showing URL as images (as an injected model writes
    them); a tool result → a sentence."""
    last = messages[-1]
    if isinstance(last, HumanMessage):
        asked = _text(last).lower()
        if "weather" in asked:
            return tool_call("weather", {})
        if "long nap" in asked:  # time for another page's whole turn meanwhile, under load
            return tool_call("nap", {"seconds": 3 * NAP_SECONDS})
        if "nap" in asked:
            return tool_call("nap", {"seconds": NAP_SECONDS})
        if "very slowly" in asked:  # about 19 s: time for a loaded machine to open a page
            return slow(SLOW_STORY, 3 * WORD_DELAY)
        if "slowly" in asked:
            return slow(SLOW_STORY, WORD_DELAY)
        if "picture" in asked:
            url = _text(last).split()[-1]
            return f'Here it is: ![pin]({url}) and <img src="{url}&tag=1">'
        return f"Hello! You said: {_text(last)}. Nice to hear from you today."
    if isinstance(last, ToolMessage):
        result = _text(last)
        if "location_not_set" in result:
            return ASK_LOCATION
        if last.name == "nap":
            return "That was a good nap."
        report = result.split("\n\n")[1] if "\n\n" in result else result
        place, _, conditions = report.partition(": ")
        return f"Right now at {place} it is {conditions.split(' (')[0]}."
    return "Mm?"


async def _nap(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    await asyncio.sleep(float(args.get("seconds", NAP_SECONDS)))
    return {"slept_seconds": args.get("seconds", NAP_SECONDS)}


NAP = ToolSpec(
    "nap",
    "Wait a few seconds (test tool).",
    {"type": "object", "properties": {"seconds": {"type": "number"}}},
    _nap,
    "web_tool",
    timeout=30,
)


def free_port() -> int:
    """A free loopback port."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class RunningApp:
    """The launched app."""

    url: str
    model: ScriptedChatModel
    home: Path

    def system_message(self) -> str:
        """The system message of the model's last call."""
        return str(self.model.calls[-1]["messages"][0].content)


@contextmanager
def launched_app(
    home: Path,
    script: Any,
    overrides: dict[str, Any],
    registry: ToolRegistry | None = None,
) -> Iterator[RunningApp]:
    """The app on a free port around a scripted model, its tools pointed by ``overrides``
    (a fixture's ``settings_overrides()``)."""
    from app.ui import launch_app
    from graph.setup import ContextFactory

    flags = {
        "home": home,
        "provider": "openai-compatible",
        "base_url": "http://127.0.0.1:9/v1",
        **overrides,
    }
    model = ScriptedChatModel(script=script, name_="scripted-chat")
    make = ContextFactory(flags, env={}, chat_model=model, registry=registry)
    seed = SqliteStore.open_home(home)  # before the app starts: its own store reads it
    seed.set_profile({"chat_model": "scripted-chat"})
    seed.close()
    demo, url = launch_app(make, port=free_port())
    try:
        yield RunningApp(url, model, home)
    finally:
        demo.close()


@contextmanager
def running_app(home: Path) -> Iterator[RunningApp]:
    """The app with the scripted policy and the nap tool; weather goes to a local fixture."""
    registry = ToolRegistry([*builtin_specs(), NAP])
    with (
        OpenMeteoFixture() as weather,
        launched_app(home, policy, weather.settings_overrides(), registry) as app,
    ):
        yield app


@contextmanager
def chromium() -> Iterator[Any]:
    """Debian's chromium driven by playwright (never a downloaded browser)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
        )
        try:
            yield browser
        finally:
            browser.close()


# No event pending: Gradio marks (fades) the blocks an event will update until it has run.
SETTLED = "() => !document.querySelector('.pending, .generating, [aria-busy=\"true\"]')"


def loaded(page: Any) -> None:
    """Wait until the page's load events have run (the model line is filled last), so a
    click that follows cannot be overtaken by them."""
    from playwright.sync_api import expect

    page.locator("#chat-input textarea").wait_for()
    expect(page.locator("#model-line")).to_contain_text("model:", timeout=15_000)


def open_app(page: Any, url: str) -> None:
    """Open the app in ``page`` and wait until it has loaded."""
    page.goto(url)
    loaded(page)


def sidebar_open(page: Any, inside: str = "#chat-list") -> None:
    """Open the chats sidebar until ``inside`` (an element in it) is on screen: a phone's
    starts closed (the page's script closes it as it first opens) and closes when a chat
    is chosen (a round trip, which may land after a click), so toggle until it stays open."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    on_screen = f"""() => {{
      const box = document.querySelector({inside!r})?.getBoundingClientRect();
      return !!box && box.x >= 0 && box.right <= window.innerWidth && box.width > 0;
    }}"""
    is_open = "() => !!document.querySelector('#chats.sidebar.open')"
    for _ in range(4):
        if not page.evaluate(is_open):
            page.get_by_role("button", name="Toggle Sidebar").click()
        try:
            page.wait_for_function(on_screen, timeout=2500)
            page.wait_for_timeout(400)  # the slide settles (a late close included)
            page.wait_for_function(on_screen, timeout=500)
            return
        except PlaywrightTimeout:
            continue
    page.wait_for_function(on_screen, timeout=15_000)


def new_chat(page: Any) -> None:
    """Click "New chat" (the sidebar opened first, on a phone) and wait until the empty
    chat is shown: until then the chat in view is the newest one, whose bubbles a test
    would otherwise read as its own."""
    from playwright.sync_api import expect

    sidebar_open(page, "#new-session")
    page.locator("#new-session").click()
    expect(page.locator("#chatbot .message-row")).to_have_count(0, timeout=15_000)


def send(page: Any, text: str) -> None:
    """Type a message in the chat box and send it."""
    box = page.locator("#chat-input textarea")
    box.fill(text)
    box.press("Enter")


def bot_messages(page: Any) -> Any:
    """The assistant bubbles of the chat."""
    return page.locator("#chatbot .message-row.bot-row")
