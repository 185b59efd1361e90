"""Configuration precedence: flag > environment > profile > default."""

from __future__ import annotations

from pathlib import Path

import pytest

from graph.context import (
    LOCAL_MODEL_NAME,
    OPENROUTER_BASE_URL,
    ConfigError,
    load_settings,
    validate_profile,
)


def test_defaults_are_local_and_unset_location() -> None:
    s = load_settings({}, {}, {})
    assert s.provider == "local" and s.tool_mode == "commands"
    assert s.chat_model == LOCAL_MODEL_NAME
    assert (s.latitude, s.longitude) == (0.0, 0.0)
    assert s.image_backend is None and s.vision_model is None


def test_openrouter_key_selects_openrouter() -> None:
    s = load_settings({}, {"OPENROUTER_API_KEY": "sk-or"}, {})
    assert s.provider == "openai-compatible"
    assert s.base_url == OPENROUTER_BASE_URL and s.api_key == "sk-or"
    assert s.tool_mode == "native"
    assert "sk-or" not in repr(s)


def test_precedence_flag_env_profile_default() -> None:
    env = {
        "COMPANION_BASE_URL": "http://x/v1",
        "COMPANION_CHAT_MODEL": "env-model",
        "COMPANION_LATITUDE": "10",
    }
    profile = {
        "chat_model": "profile-model",
        "latitude": "20",
        "longitude": "30",
        "persona": "journal",
    }
    s = load_settings({"chat_model": "flag-model"}, env, profile)
    assert s.chat_model == "flag-model"
    assert s.latitude == 10.0  # env beats profile
    assert s.longitude == 30.0  # profile beats default
    assert s.persona == "journal"
    s = load_settings({}, env, profile)
    assert s.chat_model == "env-model"


def test_home_and_paths(tmp_path: Path) -> None:
    s = load_settings({"home": str(tmp_path)}, {}, {})
    assert s.db_path == tmp_path / "companion.db"
    assert s.media_dir == tmp_path / "media"


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"latitude": "91"}, "latitude must be between -90 and 90"),
        ({"longitude": "-181"}, "longitude must be between -180 and 180"),
        ({"latitude": "north"}, "latitude"),
        ({"tool_mode": "magic"}, "tool_mode must be one of"),
        ({"image_backend": "dalle"}, "image_backend must be one of"),
        ({"api_key": "x"}, "unknown setting"),
    ],
)
def test_invalid_profile_values_are_refused(values: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        validate_profile(values)


def test_valid_profile_values_are_coerced() -> None:
    assert validate_profile({"latitude": "35.68", "tool_mode": "native"}) == {
        "latitude": 35.68,
        "tool_mode": "native",
    }
