"""The Settings form: env-fixed fields disabled and named, keys shown only as set/not set."""

from __future__ import annotations

import dataclasses

import pytest

from app.settings_view import (
    field_updates,
    profile_update,
    saved_message,
    verify_target,
    vision_warning,
)
from config.settings import ConfigError, Settings, fixed_fields, load_settings
from graph.routing import NO_VISION_NOTICE

ENV = {"OPENROUTER_API_KEY": "sk-env-secret", "COMPANION_CHAT_MODEL": "env/model"}


def test_fields_fixed_by_the_environment_are_disabled_and_name_the_variable() -> None:
    updates = field_updates(load_settings({}, ENV, {}), fixed_fields({}, ENV))
    assert updates["chat_model"]["interactive"] is False
    assert updates["chat_model"]["label"].endswith("fixed by COMPANION_CHAT_MODEL")
    assert updates["base_url"]["interactive"] is updates["api_key"]["interactive"] is False
    assert "fixed by OPENROUTER_API_KEY" in updates["api_key"]["label"]
    assert updates["latitude"]["interactive"] is True


def test_a_key_is_shown_only_as_set_or_not_set() -> None:
    settings = load_settings({}, {}, {"base_url": "http://h:1/v1", "api_key": "sk-p"})
    updates = field_updates(settings, {})
    assert updates["api_key"]["value"] == "" and "(set;" in updates["api_key"]["label"]
    assert "sk-p" not in repr(updates)
    assert "(not set;" in updates["image_api_key"]["label"]


def test_saving_a_fixed_field_is_refused() -> None:
    settings = load_settings({}, ENV, {})
    form = {key: value["value"] for key, value in field_updates(settings, {}).items()}
    with pytest.raises(ConfigError, match="chat model is fixed by COMPANION_CHAT_MODEL"):
        profile_update({**form, "chat_model": "mine"}, "", settings, fixed_fields({}, ENV))


def test_a_key_needs_its_base_url() -> None:
    settings = Settings()
    form = {key: value["value"] for key, value in field_updates(settings, {}).items()}
    with pytest.raises(ConfigError, match="enter the base URL this API key is for"):
        profile_update({**form, "api_key": "sk"}, "", settings)


def test_verify_takes_the_saved_key_only_to_its_origin() -> None:
    current = Settings(provider="openai-compatible", base_url="http://a:1/v1", api_key="sk-a")
    assert verify_target({"base_url": "http://a:1/v1"}, current).api_key == "sk-a"
    assert verify_target({"base_url": "http://b:1/v1"}, current).api_key is None
    assert verify_target({"base_url": "http://b:1/v1", "api_key": "sk-b"}, current).api_key == (
        "sk-b"
    )


def test_saved_is_claimed_only_for_values_in_effect() -> None:
    local = Settings()  # the local model answers: a remote model name is not in effect
    message = saved_message({"chat_model": "some/model"}, local)
    assert message.startswith("⚠️ Saved, but not all of it is in effect")
    assert "`chat_model` is not in effect" in message
    remote = Settings(provider="openai-compatible", base_url="http://a:1/v1", chat_model="m")
    assert saved_message({"chat_model": "m"}, remote).startswith("✅ Saved.")
    unchosen = Settings(provider="openai-compatible", base_url="http://a:1/v1", chat_model=None)
    assert "Choose a chat model" in saved_message({"latitude": 1.0}, unchosen)


def test_the_no_vision_warning_shows_only_for_a_remote_provider_without_one() -> None:
    remote = Settings(provider="openai-compatible", base_url="http://a:1/v1", chat_model="m")
    shown = vision_warning(remote)
    assert shown["visible"] and NO_VISION_NOTICE in shown["value"]
    seeing = dataclasses.replace(remote, vision_model="v")
    assert vision_warning(seeing) == {"value": "", "visible": False}
    assert not vision_warning(Settings())["visible"]  # the local model needs none
