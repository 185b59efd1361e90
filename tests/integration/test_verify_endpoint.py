"""Settings' Verify tells the causes apart against a real loopback endpoint, and never
probes this machine for a person: with accounts on, a URL a person sends is checked by
the address guard before any request (or ignored, when the operator fixed the endpoint),
while the operator's own loopback endpoint still verifies."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from config.settings import Settings
from evals.fixtures import FixtureServer, RecordedRequest, Reply
from providers import Verified, verify_endpoint
from tests.integration.test_connections import form
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


class Internal(FixtureServer):
    """A service on this machine nobody configured as an endpoint; it answers anyone."""

    def handle(self, request: RecordedRequest) -> Reply:
        return Reply.json({"data": [{"id": "internal-admin"}]})


@pytest.fixture
def internal() -> Iterator[Internal]:
    with Internal() as service:
        yield service


def admin_url(service: Internal) -> str:
    return f"{service.url}/internal-admin?token=1&x="


@pytest.mark.parametrize(
    "where", ["loopback", "http://169.254.169.254/latest", "http://10.1.2.3:5432", "http://[::1]:9"]
)
def test_a_persons_url_on_a_local_address_is_refused_before_any_request(internal, where) -> None:
    url = admin_url(internal) if where == "loopback" else where
    persons = Settings(
        provider="openai-compatible",
        base_url=url,
        chat_model="fake-model",
        accounts_on=True,
        personal_endpoints=frozenset({"base_url"}),
    )
    verified = run(persons)
    assert not verified.ok and verified.models == ()
    assert "was not contacted: refused:" in verified.text
    assert "resolves to a private or local address" in verified.text
    assert internal.requests == []


def test_the_operators_loopback_endpoint_still_verifies_with_accounts_on(server) -> None:
    operators = Settings(
        provider="openai-compatible", base_url=server.url, chat_model="fake-model", accounts_on=True
    )
    verified = run(operators)
    assert verified.ok and verified.text.startswith("✅")


def test_verify_in_the_app_checks_the_operators_endpoint_whatever_is_sent(
    with_accounts, server, internal
) -> None:
    app = with_accounts(provider="openai-compatible", base_url=server.url)
    sent = form(base_url=admin_url(internal), chat_model="fake-model")
    verified = app.client("bob").predict(*sent, api_name="/verify")
    assert verified[0] == f"**Endpoint:** ✅ {server.url}: OK, chat model `fake-model` (listed)"
    assert internal.requests == [], "the internal service was never asked"


def test_verify_in_the_app_refuses_a_persons_local_url(with_accounts, internal) -> None:
    app = with_accounts(env={"COMPANION_ALLOW_PERSONAL_ENDPOINTS": "1"})
    verified = app.client("bob").predict(*form(base_url=admin_url(internal)), api_name="/verify")
    assert "was not contacted: refused: 127.0.0.1 resolves to a private" in verified[0]
    assert internal.requests == []
