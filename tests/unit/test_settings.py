"""Configuration precedence: flag > environment > profile > default."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from config.settings import (
    LOCAL_MODEL_NAME,
    OPENROUTER_BASE_URL,
    PERSONAS,
    ConfigError,
    fixed_fields,
    load_settings,
    require_chat_model,
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
        ({"provider": "local"}, "unknown setting"),
        ({"persona": "pirate"}, "persona must be one of yuzuki, assistant, journal"),
        ({"base_url": "ftp://x"}, "not an http"),
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


# --- a key goes only where it was given (issue 12, row 1) ------------------------------

CHAT = {"COMPANION_BASE_URL": "https://api.example.com/v1", "COMPANION_API_KEY": "sk-chat"}
IMAGE = {"image_backend": "openai", "image_model": "img-1"}


@pytest.mark.parametrize(
    ("image_base_url", "reused"),
    [
        ("https://api.example.com/v1", True),
        ("https://API.example.com:443/images/", True),
        ("http://api.example.com/v1", False),  # another scheme
        ("https://api.example.com:8443/v1", False),  # another port
        ("https://images.example.com/v1", False),  # another host
        ("https://api.example.com.evil.example/v1", False),
        ("https://api.example.com@evil.example/v1", False),  # user info, host is evil
        ("https://api.example.com:99999/v1", False),  # unusable port
    ],
)
def test_chat_key_is_reused_only_for_the_chat_endpoints_origin(image_base_url, reused) -> None:
    s = load_settings({}, CHAT, {**IMAGE, "image_base_url": image_base_url})
    assert s.image_api_key == ("sk-chat" if reused else None)


def test_a_key_free_backend_gets_no_key() -> None:
    profile = {"image_backend": "url", "image_base_url": CHAT["COMPANION_BASE_URL"]}
    assert load_settings({}, CHAT, {**profile, "image_model": "flux"}).image_api_key is None


def test_an_image_key_from_the_environment_serves_only_the_environments_endpoint() -> None:
    env = {**CHAT, "COMPANION_IMAGE_API_KEY": "sk-image"}
    with_url = {**env, "COMPANION_IMAGE_BASE_URL": "https://images.example.com/v1"}
    assert load_settings({}, with_url, IMAGE).image_api_key == "sk-image"
    # a profile (Settings) URL never receives the operator's image key
    chosen = {**IMAGE, "image_base_url": "https://evil.example/v1"}
    assert load_settings({}, env, chosen).image_api_key is None


def test_an_image_key_from_the_profile_serves_the_endpoint_in_effect() -> None:
    profile = {**IMAGE, "image_base_url": "https://images.example.com/v1", "image_api_key": "k"}
    assert load_settings({}, CHAT, profile).image_api_key == "k"
    env = {**CHAT, "COMPANION_IMAGE_BASE_URL": "https://other.example.com/v1"}
    assert load_settings({}, env, profile).image_api_key == "k"
    assert "'k'" not in repr(load_settings({}, CHAT, profile))


def test_a_new_image_url_from_settings_drops_the_stored_image_key() -> None:
    assert validate_profile({"image_base_url": "https://evil.example/v1"}) == {
        "image_base_url": "https://evil.example/v1",
        "image_api_key": None,
    }
    given = {"image_base_url": "https://new.example/v1", "image_api_key": "sk-new"}
    assert validate_profile(given) == given
    assert validate_profile({"image_model": "img-2"}) == {"image_model": "img-2"}


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("provider", "openai-compatible"),
        ("allow_private_urls", "true"),
        ("web_search_url", "http://127.0.0.1:1/html/"),
        ("weather_url", "http://127.0.0.1:1/v1/forecast"),
        ("geocoding_url", "http://127.0.0.1:1/v1/search"),
        ("allowed_image_dir", "/"),
        ("home", "/tmp/elsewhere"),
        ("request_timeout", "0.001"),
    ],
)
def test_the_profile_sets_only_profile_keys(key: str, value: str) -> None:
    # whoever can write the profile must not choose where the chat key goes, nor what
    # the tools may reach
    env = {"COMPANION_API_KEY": "sk-chat"}
    default = load_settings({}, env, {})
    s = load_settings({}, env, {key: value})
    assert getattr(s, key) == getattr(default, key)
    assert s.api_key == "sk-chat" and s.base_url is None
    with pytest.raises(ConfigError, match="unknown setting"):
        validate_profile({key: value})


@pytest.mark.parametrize(
    "env",
    [
        {"COMPANION_API_KEY": "sk-chat"},
        {"OPENROUTER_API_KEY": "sk-or"},
        {"COMPANION_BASE_URL": "http://127.0.0.1:1/v1"},
    ],
)
def test_a_profile_endpoint_never_receives_the_environments_key(env: dict) -> None:
    # the environment names the endpoint or its key: the profile's pair does not apply,
    # so whoever can write the profile cannot choose where an environment key goes
    s = load_settings({}, env, {"base_url": "https://evil.example/v1", "api_key": "sk-p"})
    assert s.base_url != "https://evil.example/v1" and s.api_key != "sk-p"
    assert fixed_fields({}, env)["base_url"] == fixed_fields({}, env)["api_key"] != ""


def test_a_profile_key_goes_only_with_the_profile_base_url() -> None:
    s = load_settings({}, {}, {"base_url": "http://127.0.0.1:1/v1", "api_key": "sk-p"})
    assert (s.provider, s.base_url, s.api_key) == (
        "openai-compatible",
        "http://127.0.0.1:1/v1",
        "sk-p",
    )
    # a key without its base URL is never used
    assert load_settings({}, {}, {"api_key": "sk-p"}).api_key is None


def test_a_new_base_url_from_settings_drops_the_stored_key() -> None:
    assert validate_profile({"base_url": "http://other:8080/v1"}) == {
        "base_url": "http://other:8080/v1",
        "api_key": None,
    }
    kept = validate_profile({"base_url": "http://other:8080/v1", "api_key": "sk-new"})
    assert kept["api_key"] == "sk-new"


def test_fixed_fields_name_their_variable() -> None:
    env = {"COMPANION_CHAT_MODEL": "m", "OPENROUTER_API_KEY": "sk", "COMPANION_PERSONA": "journal"}
    fixed = fixed_fields({"vision_model": "v"}, env)
    assert fixed["chat_model"] == "COMPANION_CHAT_MODEL"
    assert fixed["persona"] == "COMPANION_PERSONA"
    assert fixed["api_key"] == fixed["base_url"] == "OPENROUTER_API_KEY"
    assert fixed["vision_model"] == "--vision-model"
    assert "latitude" not in fixed and "sk" not in fixed.values()


@pytest.mark.parametrize(
    "env",
    [{"OPENROUTER_API_KEY": "sk-or"}, {"COMPANION_BASE_URL": "http://127.0.0.1:1/v1"}],
)
def test_no_hidden_default_model(env: dict) -> None:
    s = load_settings({}, env, {})
    assert s.provider == "openai-compatible" and s.chat_model is None
    with pytest.raises(ConfigError, match="COMPANION_CHAT_MODEL"):
        require_chat_model(s)
    assert load_settings({}, env, {"chat_model": "chosen"}).chat_model == "chosen"


def test_an_unknown_persona_from_the_environment_is_refused() -> None:
    with pytest.raises(ConfigError, match="COMPANION_PERSONA: persona must be one of"):
        load_settings({}, {"COMPANION_PERSONA": "pirate"}, {})


# --- the time zone is an IANA name, never quietly UTC (issue 13, item 4) ---------------


@pytest.mark.parametrize("zone", ["Mars/Olympus", "Asia", "../etc/passwd", "UTC+9", "zone.tab"])
def test_an_unknown_time_zone_is_refused_in_settings(zone: str) -> None:
    with pytest.raises(ConfigError, match="not in the IANA time zone database"):
        validate_profile({"timezone": zone})


def test_an_unknown_time_zone_from_the_environment_names_the_variable() -> None:
    with pytest.raises(ConfigError) as refused:
        load_settings({}, {"COMPANION_TIMEZONE": "Mars/Olympus"}, {})
    assert str(refused.value) == (
        "COMPANION_TIMEZONE: time zone 'Mars/Olympus' is not in the IANA time zone database; "
        "use a name like Asia/Tokyo, Europe/Berlin or UTC"
    )


def test_a_known_time_zone_is_kept_in_its_own_spelling() -> None:
    assert load_settings({}, {"COMPANION_TIMEZONE": "Asia/Tokyo"}, {}).timezone == "Asia/Tokyo"
    assert validate_profile({"timezone": " asia/tokyo "}) == {"timezone": "Asia/Tokyo"}
    assert load_settings({}, {}, {"timezone": "Europe/Berlin"}).timezone == "Europe/Berlin"
    assert load_settings({}, {}, {}).timezone == "UTC"


def test_the_database_file_is_owner_only(tmp_path: Path) -> None:
    from memory.sqlite.store import SqliteStore

    store = SqliteStore.open_home(tmp_path)
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
    store.close()
    store.path.chmod(0o644)  # an older or hand-copied file is made owner-only on open
    SqliteStore.open_home(tmp_path).close()
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600


def test_the_persona_names_are_the_bundled_personas() -> None:
    from prompts.templates import PERSONAS as BUNDLED

    assert PERSONAS == BUNDLED
