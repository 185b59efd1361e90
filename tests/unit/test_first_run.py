"""An honest first run on the bundled model (issue 23, item 4): the empty chat's example
prompts are ones it can answer (chat, sums, the persona), and the banners (the app's and
the terminal's) say in one sentence what it can't do and point to Settings, not to
environment variables."""

from __future__ import annotations

import dataclasses
import re

import pytest

from app.chat_handlers import LOCAL_LIMITS, banner, welcome
from app.cli import BANNER_LOCAL
from config.settings import Settings
from providers import FoundServer

BEYOND_IT = re.compile(r"weather|remember|draw|search|imagine|look up", re.IGNORECASE)
LOCAL = Settings(image_backend="openai")  # the bundled model, even with an image backend
FOUND = FoundServer("Ollama", "http://127.0.0.1:11434/v1", ("qwen2.5:3b",))


def test_the_bundled_models_examples_are_chat_sums_and_the_persona() -> None:
    examples = [e["text"] for e in welcome(LOCAL)["examples"]]
    assert examples and not [e for e in examples if BEYOND_IT.search(e)]
    assert any(re.search(r"\d+ [-+*x×] \d+", e) for e in examples)  # arithmetic
    assert any("yourself" in e for e in examples)  # the persona


def test_the_bundled_models_greeting_promises_no_tool() -> None:
    for persona in ("yuzuki", "assistant", "journal"):
        bundled = welcome(dataclasses.replace(LOCAL, persona=persona))["placeholder"]
        assert not BEYOND_IT.search(bundled), bundled
        remote = dataclasses.replace(
            LOCAL, persona=persona, provider="openai-compatible", chat_model="gpt-x"
        )
        capable = welcome(remote)["placeholder"]
        assert capable.startswith(bundled)  # the same hello, then what it can do
        assert ("weather" in capable) is (persona != "journal")


def test_a_capable_model_keeps_the_tool_examples() -> None:
    remote = dataclasses.replace(LOCAL, provider="openai-compatible", chat_model="gpt-x")
    examples = " ".join(e["text"] for e in welcome(remote)["examples"])
    assert "weather" in examples and "Remember" in examples and "Draw" in examples


@pytest.mark.parametrize("text", [LOCAL_LIMITS, BANNER_LOCAL])
def test_the_banner_is_one_sentence_naming_settings_and_no_variable(text: str) -> None:
    assert "Settings" in text and "COMPANION_" not in text and "API_KEY" not in text
    assert len(re.findall(r"[.!?](\s|$)", text)) <= 1
    for limit in ("search the web", "weather", "remember you", "draw"):
        assert limit in text


def test_the_banner_offers_a_found_server_by_name_with_its_button() -> None:
    text, use, back, settings = banner(LOCAL, FOUND, back=False)
    assert text["value"] == f"{LOCAL_LIMITS} 💡 Ollama is running with qwen2.5:3b — use it?"
    assert use == {"__type__": "update", "value": "Use Ollama's qwen2.5:3b", "visible": True}
    assert settings["visible"] and not back["visible"]
    alone, use, _, _ = banner(LOCAL, None, back=False)
    assert alone["value"] == LOCAL_LIMITS and not use["visible"]


def test_a_found_server_in_use_shows_with_the_way_back() -> None:
    using = dataclasses.replace(
        LOCAL, provider="openai-compatible", base_url=FOUND.base_url, chat_model="qwen2.5:3b"
    )
    text, use, back, settings = banner(using, None, back=True)
    assert (
        text["value"] == "Chatting with `qwen2.5:3b` on Ollama at 127.0.0.1:11434, on this machine."
    )
    assert back["visible"] and not use["visible"] and not settings["visible"]
    remote = dataclasses.replace(using, base_url="https://openrouter.ai/api/v1")
    assert not banner(remote, None, back=True)[0]["visible"]
