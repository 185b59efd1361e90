"""Settings' Verify tells the causes apart against a real loopback endpoint."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from config.settings import Settings
from graph.providers import Verified, verify_endpoint
from tests.support.fake_openai import FakeOpenAIServer


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


def run(settings: Settings) -> Verified:
    return asyncio.run(verify_endpoint(settings))


def remote(url: str, model: str | None = "fake-model", key: str | None = "sk-secret") -> Settings:
    return Settings(provider="openai-compatible", base_url=url, api_key=key, chat_model=model)


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (401, "the API key was refused (HTTP 401)"),
        (403, "the API key was refused (HTTP 403)"),
        (404, "the base URL is wrong"),
        (500, "HTTP 500"),
    ],
)
def test_each_refusal_names_its_cause(server, status, expected) -> None:
    server.models_status = status
    verified = run(remote(server.url))
    assert expected in verified.text and not verified.ok
    assert "reachable (HTTP" not in verified.text
    assert "sk-secret" not in verified.text


def test_no_key_refused_says_a_key_is_needed(server) -> None:
    server.models_status = 401
    assert "it needs an API key" in run(remote(server.url, key=None)).text


def test_unreachable() -> None:
    verified = run(remote("http://127.0.0.1:9/v1"))
    assert "unreachable" in verified.text and not verified.ok


def test_ok_with_the_model_listed(server) -> None:
    server.model_ids = ["a-model", "fake-model"]
    verified = run(remote(server.url))
    assert verified.ok and verified.text.startswith("✅") and "`fake-model`" in verified.text
    assert verified.models == ("a-model", "fake-model")


def test_ok_but_the_model_is_not_listed(server) -> None:
    verified = run(remote(server.url, model="typo-model"))
    assert verified.ok and "`typo-model` is not in its list" in verified.text


def test_ok_but_no_model_chosen(server) -> None:
    verified = run(remote(server.url, model=None))
    assert "no chat model is chosen" in verified.text and verified.models == ("fake-model",)
