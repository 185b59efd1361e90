"""A model server already running on this machine (issue 23, item 3), against fakes in the
shapes Ollama, LM Studio and llama.cpp's server answer with, on loopback ports.

Discovery finds each within its short timeout; the chat's banner and Settings offer it by
name, and one click switches the connection (Verify, then saved as Save does) so the next
message goes there; when it stops answering, the chat says so and one click goes back to
the bundled model. With accounts on, nobody's page makes Companion look on loopback;
``companion doctor`` lists what it found.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gradio as gr
import pytest

from app.chat_handlers import LOCAL_LIMITS, ChatHandlers, Chats
from app.chat_tab import layout, sidebar
from app.doctor import model_servers
from app.settings_view import SettingsHandlers
from config.settings import LOCAL_MODEL_NAME
from graph.setup import ContextFactory
from providers import LocalServers, discovery, find_local_servers
from providers.discovery import Probe
from tests.support.app_fakes import OnePerson, request
from tests.support.fake_openai import FakeOpenAIServer
from tests.support.local_servers import FakeOllama, probes_for, silent_port

OFFER = "Ollama is running with qwen2.5:3b — use it?"
ANSWER = "Hello from Ollama!"


@pytest.fixture
def ollama(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOllama]:
    """Ollama with a chat model and an embedding model, the one server discovery asks."""
    with FakeOllama(["qwen2.5:3b", "nomic-embed-text:latest"], default=ANSWER) as server:
        monkeypatch.setattr(discovery, "_SERVERS", LocalServers(probes_for(ollama=server.port)))
        yield server


def person(home: Path, *, accounts_on: bool = False, **flags: Any) -> OnePerson:
    base = {"home": str(home), "embedding_model": "off", "max_retries": 0}
    people = OnePerson(ContextFactory({**base, **flags}, env={}, accounts_on=accounts_on))
    people.accounts_on = accounts_on
    return people


def chat_page(people: OnePerson) -> ChatHandlers:
    with gr.Blocks():
        ui = layout(gr.Markdown(), sidebar()).ui
    return ChatHandlers(Chats(people, gr.Markdown()), ui)  # type: ignore[arg-type]


async def send(page: ChatHandlers, text: str, session: str | None = None) -> list[Any]:
    updates = page.on_send({"text": text, "files": []}, session, "", False, [], request())
    chats = [u[page.ui.chatbot] async for u in updates if page.ui.chatbot in u]
    return [str(bubble.content) for bubble in chats[-1]]


def port_of(server: FakeOpenAIServer) -> int:
    return int(server.url.split(":")[2].split("/")[0])


async def test_each_kind_is_found_on_its_port_and_a_hung_one_costs_only_its_timeout() -> None:
    with (
        FakeOllama(["qwen2.5:3b"]) as ollama,
        FakeOpenAIServer() as lm_studio,
        FakeOpenAIServer() as llama_cpp,
        silent_port() as hung,
    ):
        lm_studio.model_ids = ["qwen2.5-7b-instruct", "text-embedding-nomic-embed-text-v1.5"]
        llama_cpp.model_ids = ["gemma-3-4b-it-Q4_K_M.gguf"]
        ports = {"lm_studio": port_of(lm_studio), "llama_cpp": port_of(llama_cpp)}
        probes = (Probe("Ollama", hung, "/api/tags"), *probes_for(ollama=ollama.port, **ports))
        started = time.perf_counter()
        found = await find_local_servers(probes)
        took = time.perf_counter() - started
    assert [(f.kind, f.base_url, f.models) for f in found] == [
        ("Ollama", ollama.url, ("qwen2.5:3b",)),
        ("LM Studio", lm_studio.url, ("qwen2.5-7b-instruct",)),
        ("llama.cpp", llama_cpp.url, ("gemma-3-4b-it-Q4_K_M.gguf",)),
    ]
    assert took < 1.0, took


async def test_settings_offers_it_and_one_click_switches_the_connection(
    ollama: FakeOllama, tmp_path: Path
) -> None:
    tab = SettingsHandlers(person(tmp_path))  # type: ignore[arg-type]
    offer, use, back = await tab.offer(request())
    assert offer["value"] == f"💡 {OFFER}" and offer["visible"] and use["visible"]
    assert not back["visible"]
    status, saved = await tab.on_use_found(request())
    assert saved and status.startswith("✅ Saved. The next message uses chat model `qwen2.5:3b`")
    assert f"✅ {ollama.url}: OK, chat model `qwen2.5:3b` (listed)" in status  # Verify's words
    settings = await tab.settings(request())
    assert (settings.provider, settings.base_url) == ("openai-compatible", ollama.url)
    assert (settings.chat_model, settings.tool_mode, settings.api_key) == (
        "qwen2.5:3b",
        "native",
        None,
    )
    offer, use, back = await tab.offer(request())
    assert not offer["visible"] and not use["visible"] and back["visible"]


async def test_the_banner_offers_it_a_click_switches_and_a_stopped_server_offers_the_way_back(
    ollama: FakeOllama, tmp_path: Path
) -> None:
    page = chat_page(person(tmp_path))
    text, use, back, settings = await page.on_banner(request())
    assert text["value"] == f"{LOCAL_LIMITS} 💡 {OFFER}"
    assert use["value"] == "Use Ollama's qwen2.5:3b" and use["visible"] and settings["visible"]
    text, use, back, settings, line = await page.on_use_found(request())
    assert line == "model: qwen2.5:3b"
    assert f"Chatting with `qwen2.5:3b` on Ollama at 127.0.0.1:{ollama.port}" in text["value"]
    assert back["visible"] and not use["visible"]
    assert await send(page, "Hi!") == ["Hi!", ANSWER]
    assert ollama.requests[-1]["model"] == "qwen2.5:3b"

    ollama.stop()
    shown = await send(page, "Still there?")
    assert f"Ollama at 127.0.0.1:{ollama.port} did not answer" in shown[-1], shown
    text, use, back, settings, line = await page.on_use_bundled(request())
    assert line == f"model: {LOCAL_MODEL_NAME}"
    assert (
        text["value"].startswith("✅ Back to the bundled model") and LOCAL_LIMITS in text["value"]
    )


async def test_with_accounts_on_no_page_looks_on_loopback(
    ollama: FakeOllama, tmp_path: Path
) -> None:
    people = person(tmp_path, accounts_on=True, allow_personal_endpoints=True)
    offer, use, _ = await SettingsHandlers(people).offer(request())  # type: ignore[arg-type]
    _, use_here, *_ = await chat_page(people).on_banner(request())
    assert not offer["visible"] and not use["visible"] and not use_here["visible"]
    assert ollama.gets == []


def test_doctor_lists_what_it_found(ollama: FakeOllama) -> None:
    check = model_servers()
    assert check.status == "ok"
    assert check.detail.startswith(f"Ollama at 127.0.0.1:{ollama.port} with qwen2.5:3b — ")
    assert f"COMPANION_BASE_URL={ollama.url} and COMPANION_CHAT_MODEL=qwen2.5:3b" in check.detail
