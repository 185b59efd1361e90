"""A message sent while the bundled model is still loading (issue 23, item 2): the chat
says "Starting the local model…" under it until the model's first words replace it.

The real chat path (the Chat tab's handlers, the server's turns, the graph, the local
model's client) over a local server whose start takes a second and which then answers
from a scripted OpenAI-compatible server on loopback.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gradio as gr
import pytest

from app.chat_handlers import ChatHandlers, Chats
from app.chat_tab import layout, sidebar
from graph.setup import ContextFactory
from providers import LocalServer, llama_server
from tests.support.app_fakes import OnePerson, request
from tests.support.fake_openai import FakeOpenAIServer

START_SECONDS = 1.0
STARTING_MODEL = "Starting the local model…"  # what the chat says meanwhile


class Running:
    """The face of a server process that runs until it is stopped."""

    returncode = None

    def poll(self) -> None:
        return None

    def terminate(self) -> None:
        return None

    def wait(self, timeout: float | None = None) -> int:
        return 0


class SlowStart(LocalServer):
    """A local server whose start takes ``START_SECONDS``, then answers at ``target``."""

    def __init__(self, target: str) -> None:
        super().__init__()
        self.target = target

    def _start(self, timeout: float) -> str:
        time.sleep(START_SECONDS)
        self.process = Running()  # type: ignore[assignment]
        self.url = self.target
        return self.target


@pytest.fixture
def fake() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(default="Hello! Nice to meet you.") as server:
        yield server


@pytest.fixture
def slow(fake: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> SlowStart:
    server = SlowStart(fake.url)
    monkeypatch.setattr(llama_server, "_LOCAL", server)
    return server


def handlers(home: Path) -> ChatHandlers:
    with gr.Blocks():
        ui = layout(gr.Markdown(), sidebar()).ui
    flags = {"home": str(home), "embedding_model": "off"}
    factory = ContextFactory(flags, env={})
    return ChatHandlers(Chats(OnePerson(factory), gr.Markdown()), ui)  # type: ignore[arg-type]


def starting(chat: list[Any]) -> bool:
    return any((bubble.metadata or {}).get("title") == STARTING_MODEL for bubble in chat)


async def send(page: ChatHandlers, text: str) -> list[list[Any]]:
    message = {"text": text, "files": []}
    updates = page.on_send(message, None, "", False, [], request())
    return [update[page.ui.chatbot] async for update in updates if page.ui.chatbot in update]


async def test_a_message_sent_while_the_model_loads_says_so_until_the_answer(
    slow: SlowStart, tmp_path: Path
) -> None:
    page = handlers(tmp_path)
    chats = await send(page, "Hi!")
    assert starting(chats[0]), [b.content for b in chats[0]]
    assert chats[0][0].content == "Hi!"
    last = chats[-1]
    assert not starting(last)
    assert [b.content for b in last] == ["Hi!", "Hello! Nice to meet you."]
    assert slow.ready


async def test_a_loaded_model_answers_without_the_status(slow: SlowStart, tmp_path: Path) -> None:
    slow.ensure()
    chats = await send(handlers(tmp_path), "Hi again!")
    assert not any(starting(chat) for chat in chats)
    assert [b.content for b in chats[-1]] == ["Hi again!", "Hello! Nice to meet you."]


def test_a_warm_start_still_reading_its_prompt_is_not_ready(slow: SlowStart) -> None:
    slow.ensure()
    slow.warming = True
    assert not slow.ready
