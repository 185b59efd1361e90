"""With accounts on, connections are the operator's: a person's profile cannot point the
chat or image requests anywhere unless the operator allows it, and an endpoint a person
may choose is marked so the address guard trusts it nowhere.

Without accounts the one person is the operator: their profile's endpoints are trusted
as configured (a llama.cpp server on 127.0.0.1 keeps working).
"""

from __future__ import annotations

import openai
import pytest

from app.settings_view import field_updates, form_values, profile_update, verify_target
from config.settings import OPERATOR_ONLY, ConfigError, fixed_fields, load_settings
from providers import describe_provider_error, make_chat_model
from tests.support.fake_openai import FakeOpenAIServer

OPERATORS = {"COMPANION_BASE_URL": "http://127.0.0.1:8080/v1", "COMPANION_API_KEY": "sk-op"}
ALLOWED = {"COMPANION_ALLOW_PERSONAL_ENDPOINTS": "1"}
PERSONS = {
    "base_url": "http://127.0.0.1:5432/v1",
    "api_key": "sk-person",
    "image_backend": "openai",
    "image_base_url": "http://169.254.169.254/v1",
    "image_api_key": "sk-image",
    "image_model": "flux",
    "chat_model": "their-model",
}


def test_a_persons_connection_is_ignored_when_the_operator_does_not_allow_it() -> None:
    settings = load_settings({}, OPERATORS, PERSONS, accounts_on=True)
    assert (settings.base_url, settings.api_key) == ("http://127.0.0.1:8080/v1", "sk-op")
    assert settings.image_base_url is None and settings.image_api_key is None
    assert settings.chat_model == "their-model", "models stay each person's choice"
    assert settings.personal_endpoints == frozenset()

    local = load_settings({}, {}, PERSONS, accounts_on=True)
    assert local.is_local and local.base_url is None


def test_an_allowed_personal_endpoint_is_marked_as_the_persons() -> None:
    settings = load_settings({}, ALLOWED, PERSONS, accounts_on=True)
    assert settings.base_url == PERSONS["base_url"] and settings.api_key == "sk-person"
    assert settings.personal_endpoints == {"base_url", "image_base_url"}
    fixed_by_env = load_settings({}, {**ALLOWED, **OPERATORS}, PERSONS, accounts_on=True)
    assert fixed_by_env.personal_endpoints == {"image_base_url"}


def test_without_accounts_the_profile_is_the_operators() -> None:
    settings = load_settings({}, {}, PERSONS)
    assert settings.base_url == PERSONS["base_url"]
    assert settings.personal_endpoints == frozenset()


def test_with_accounts_settings_show_the_connection_read_only_and_say_why() -> None:
    fixed = fixed_fields({}, {}, accounts_on=True)
    updates = field_updates(load_settings({}, {}, {}, accounts_on=True), fixed)
    for key in ("base_url", "api_key", "image_base_url", "image_api_key"):
        assert updates[key]["interactive"] is False
        assert updates[key]["label"].endswith(f"fixed by {OPERATOR_ONLY}")
    assert updates["chat_model"]["interactive"] is True
    assert "base_url" not in fixed_fields({}, ALLOWED, accounts_on=True)


def test_with_accounts_settings_cannot_save_a_persons_base_url() -> None:
    current = load_settings({}, {}, {}, accounts_on=True)
    form = {**form_values(current), "base_url": "http://127.0.0.1:5432/v1"}
    with pytest.raises(ConfigError, match="base url is set by the operator"):
        profile_update(form, "", current, fixed_fields({}, {}, accounts_on=True))


def test_verify_checks_a_fixed_base_url_as_it_is_whatever_the_request_says() -> None:
    current = load_settings({}, OPERATORS, {}, accounts_on=True)
    typed = {"base_url": "http://127.0.0.1:5432/internal-admin?token=1&x="}
    for fixed in (fixed_fields({}, OPERATORS, accounts_on=True), fixed_fields({}, OPERATORS)):
        target = verify_target({**typed, "chat_model": "m"}, current, fixed)
        assert (target.base_url, target.api_key) == ("http://127.0.0.1:8080/v1", "sk-op")
        assert target.chat_model == "m" and target.personal_endpoints == frozenset()


def test_verify_takes_a_typed_url_as_the_persons_with_accounts_on() -> None:
    typed = {"base_url": "http://127.0.0.1:5432/v1"}
    with_accounts = load_settings({}, ALLOWED, {}, accounts_on=True)
    assert verify_target(typed, with_accounts, {}).personal_endpoints == {"base_url"}
    alone = load_settings({}, {}, {})
    assert verify_target(typed, alone, {}).personal_endpoints == frozenset()


def test_a_persons_loopback_chat_endpoint_is_never_contacted() -> None:
    with FakeOpenAIServer() as server:
        profile = {"base_url": server.url, "chat_model": "fake-model"}
        once = {"max_retries": 0}
        settings = load_settings(once, ALLOWED, profile, accounts_on=True)
        with pytest.raises(openai.APIConnectionError) as refused:
            make_chat_model(settings).invoke("hi")
        assert server.requests == []
        assert describe_provider_error(refused.value).startswith(
            "the endpoint was not contacted: refused: 127.0.0.1 resolves to a private"
        )
        operators = load_settings(once, {}, profile)
        assert make_chat_model(operators).invoke("hi").content == "ok"
        assert len(server.requests) == 1
