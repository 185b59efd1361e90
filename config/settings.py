"""Configuration, read in one place: flags > environment > profile table > default.

``load_settings`` is the only reader of ``os.environ`` in the application; nodes and
tools receive a resolved ``Settings`` and never look at the environment. This module
imports nothing from the rest of Companion, so every layer can depend on it.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, fields
from functools import cache
from pathlib import Path
from typing import Any, Literal, get_args
from urllib.parse import parse_qs, unquote, urlsplit
from zoneinfo import available_timezones

OPENROUTER_BASE_URL = "https://openrouter.ai/api/v1"
DEFAULT_WEB_SEARCH_URL = "https://html.duckduckgo.com/html/"
DEFAULT_WEATHER_URL = "https://api.open-meteo.com/v1/forecast"
DEFAULT_GEOCODING_URL = "https://geocoding-api.open-meteo.com/v1/search"
LOCAL_MODEL_NAME = "SmolLM2-135M-Instruct (local)"
PERSONAS = ("yuzuki", "assistant", "journal")  # the bundled personas, prompts/personas/*.md
NO_CHAT_MODEL = (
    "no chat model is set: choose one in Settings (Verify lists the endpoint's models) "
    "or set COMPANION_CHAT_MODEL"
)

Provider = Literal["local", "openai-compatible"]
ToolMode = Literal["native", "commands"]
ImageBackend = Literal["openai", "openrouter", "url"]
# The Settings fields that name an endpoint Companion sends requests to.
EndpointField = Literal[
    "base_url", "image_base_url", "web_search_url", "weather_url", "geocoding_url"
]
PROVIDERS: tuple[Provider, ...] = get_args(Provider)
TOOL_MODES: tuple[ToolMode, ...] = get_args(ToolMode)
IMAGE_BACKENDS: tuple[ImageBackend, ...] = get_args(ImageBackend)
KEYED_IMAGE_BACKENDS: tuple[ImageBackend, ...] = ("openai", "openrouter")  # send a key
DEFAULT_PORTS = {"http": 80, "https": 443}
POSTGRES_SCHEMES = ("postgresql", "postgres")
DATABASE_URL_ENV = "COMPANION_DATABASE_URL"
DATABASE_ADMIN_URL_ENV = "COMPANION_DATABASE_ADMIN_URL"
# The profile keys that choose where requests go and which key goes with them. With
# accounts on they are the operator's (flags, environment) unless the operator lets each
# person choose (COMPANION_ALLOW_PERSONAL_ENDPOINTS).
CONNECTION_KEYS = ("base_url", "api_key", "image_base_url", "image_api_key")
PERSONAL_ENDPOINT_KEYS: tuple[EndpointField, ...] = ("base_url", "image_base_url")
OPERATOR_ONLY = (
    "the operator: with accounts on, connections are set in the environment or on the "
    "command line (COMPANION_ALLOW_PERSONAL_ENDPOINTS=1 lets each person choose)"
)


class ConfigError(ValueError):
    """A configuration value that cannot be used (named in the message)."""


@dataclass(frozen=True)
class Settings:
    """Everything configurable, resolved. Field names are the profile-table keys."""

    home: Path = field(default_factory=lambda: Path("~/.companion").expanduser())
    provider: Provider = "local"
    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    chat_model: str | None = LOCAL_MODEL_NAME  # None: a remote endpoint, no model chosen
    vision_model: str | None = None
    tool_mode: ToolMode = "commands"
    image_backend: ImageBackend | None = None
    image_base_url: str | None = None
    image_model: str | None = None
    # Sent only to image_base_url: its own key, or the chat key when both URLs share
    # scheme, host and port (see image_key).
    image_api_key: str | None = field(default=None, repr=False)
    web_search_url: str = DEFAULT_WEB_SEARCH_URL
    weather_url: str = DEFAULT_WEATHER_URL
    geocoding_url: str = DEFAULT_GEOCODING_URL
    latitude: float = 0.0
    longitude: float = 0.0
    timezone: str = "UTC"
    persona: str = "yuzuki"
    identity: str | None = None  # the user's edited identity block, in the persona's place
    allow_private_urls: bool = False
    # With accounts on, may each person choose their own endpoints (CONNECTION_KEYS)?
    allow_personal_endpoints: bool = False
    accounts_on: bool = False  # accounts are on: several people, each a stranger to the operator
    # The endpoint fields whose URL a person chose in Settings while accounts are on: the
    # address guard trusts them nowhere (tools.net).
    personal_endpoints: frozenset[str] = frozenset()
    allowed_image_dir: Path | None = None
    request_timeout: float = 60.0
    tool_timeout: float = 30.0
    max_retries: int = 2
    password: str | None = field(default=None, repr=False)  # the app's login password
    allowed_hosts: tuple[str, ...] = ()  # Host names the app answers to besides loopback
    max_message_chars: int = 100_000  # the longest message a turn accepts
    # Recall's embedder: "local" (the bundled model), "off" (lexical recall only), or a
    # model name the chat endpoint serves at /v1/embeddings (providers.embeddings).
    embedding_model: str = "local"
    # The local model's GGUF: a known name or a path (providers.local_model); None: SmolLM2
    local_model: str | None = None

    @property
    def is_local(self) -> bool:
        """True when the embedded llama.cpp model answers."""
        return self.provider == "local"

    @property
    def db_path(self) -> Path:
        """The SQLite file under home."""
        return self.home / "companion.db"

    @property
    def media_dir(self) -> Path:
        """Where images live."""
        return self.home / "media"

    @property
    def log_file(self) -> Path:
        """The rotating log file that app.logs writes."""
        return self.home / "logs" / "companion.log"


# Keys a user may edit in the Settings tab (persisted to the profile table); the only
# keys load_settings reads from the profile. The chat endpoint and its key are a pair
# (see load_settings); the tool endpoints, allow_private_urls and
# allow_personal_endpoints come from flags and the environment alone.
PROFILE_KEYS = (
    "base_url",
    "api_key",
    "chat_model",
    "vision_model",
    "tool_mode",
    "image_backend",
    "image_base_url",
    "image_model",
    "image_api_key",
    "latitude",
    "longitude",
    "timezone",
    "persona",
    "identity",
)

_ENV = {
    "home": "COMPANION_HOME",
    "provider": "COMPANION_PROVIDER",
    "base_url": "COMPANION_BASE_URL",
    "chat_model": "COMPANION_CHAT_MODEL",
    "vision_model": "COMPANION_VISION_MODEL",
    "tool_mode": "COMPANION_TOOL_MODE",
    "image_backend": "COMPANION_IMAGE_BACKEND",
    "image_base_url": "COMPANION_IMAGE_BASE_URL",
    "image_model": "COMPANION_IMAGE_MODEL",
    "image_api_key": "COMPANION_IMAGE_API_KEY",
    "web_search_url": "COMPANION_WEB_SEARCH_URL",
    "weather_url": "COMPANION_WEATHER_URL",
    "geocoding_url": "COMPANION_GEOCODING_URL",
    "latitude": "COMPANION_LATITUDE",
    "longitude": "COMPANION_LONGITUDE",
    "timezone": "COMPANION_TIMEZONE",
    "persona": "COMPANION_PERSONA",
    "allow_private_urls": "COMPANION_ALLOW_PRIVATE_URLS",
    "allow_personal_endpoints": "COMPANION_ALLOW_PERSONAL_ENDPOINTS",
    "allowed_image_dir": "COMPANION_ALLOWED_IMAGE_DIR",
    "request_timeout": "COMPANION_REQUEST_TIMEOUT",
    "tool_timeout": "COMPANION_TOOL_TIMEOUT",
    "password": "COMPANION_PASSWORD",
    "allowed_hosts": "COMPANION_ALLOWED_HOSTS",
    "max_message_chars": "COMPANION_MAX_MESSAGE_CHARS",
    "embedding_model": "COMPANION_EMBEDDING_MODEL",
    "local_model": "COMPANION_LOCAL_MODEL",
}


def _coerce(name: str, value: Any) -> Any:
    """Turn a text value into the field's type, or raise ConfigError naming it."""
    if value is None or value == "":
        return None
    try:
        if name in ("latitude", "longitude", "request_timeout", "tool_timeout"):
            number = float(value)
            if name == "latitude" and not -90 <= number <= 90:
                raise ConfigError(f"latitude must be between -90 and 90, got {number}")
            if name == "longitude" and not -180 <= number <= 180:
                raise ConfigError(f"longitude must be between -180 and 180, got {number}")
            return number
        if name == "max_retries":
            return int(value)
        if name == "max_message_chars":
            if int(value) < 1:
                raise ConfigError(f"max_message_chars must be at least 1, got {value}")
            return int(value)
        if name == "allowed_hosts":
            return _host_names(value)
        if name in ("allow_private_urls", "allow_personal_endpoints"):
            return str(value).lower() in ("1", "true", "yes", "on")
        if name in ("home", "allowed_image_dir"):
            return Path(str(value)).expanduser()
    except ValueError as exc:
        if isinstance(exc, ConfigError):
            raise
        raise ConfigError(f"{name}: {value!r} is not a valid value") from exc
    if name == "provider" and value not in PROVIDERS:
        raise ConfigError(f"provider must be one of {', '.join(PROVIDERS)}, got {value!r}")
    if name == "tool_mode" and value not in TOOL_MODES:
        raise ConfigError(f"tool_mode must be one of {', '.join(TOOL_MODES)}, got {value!r}")
    if name == "timezone":
        return time_zone(str(value))
    if name == "persona" and value not in PERSONAS:
        raise ConfigError(f"persona must be one of {', '.join(PERSONAS)}, got {value!r}")
    if name == "base_url" and origin(str(value)) is None:
        raise ConfigError(f"{name}: {value!r} is not an http(s) URL")
    if name == "image_backend" and value not in IMAGE_BACKENDS:
        raise ConfigError(
            f"image_backend must be one of {', '.join(IMAGE_BACKENDS)}, got {value!r}"
        )
    return str(value)


@cache
def _zone_names() -> dict[str, str]:
    """Every zone of the IANA database zoneinfo reads, by its lower-case name."""
    return {zone.lower(): zone for zone in available_timezones()}


def time_zone(name: str) -> str:
    """The IANA time zone ``name`` in its canonical spelling, or ConfigError.

    An unknown name is refused, never taken for UTC; a name in the wrong case
    ("asia/tokyo") gets its real spelling.
    """
    spelled = _zone_names().get(name.strip().lower())
    if spelled is None:
        raise ConfigError(
            f"time zone {name!r} is not in the IANA time zone database; "
            "use a name like Asia/Tokyo, Europe/Berlin or UTC"
        )
    return spelled


def _host_names(value: Any) -> tuple[str, ...]:
    """Comma-separated Host names (``*.example.com`` wildcards allowed, never ``*`` alone)."""
    names = [n.strip().lower() for n in (value.split(",") if isinstance(value, str) else value)]
    for name in filter(None, names):
        if "*" in name[1:] or (name.startswith("*") and not name.startswith("*.")):
            raise ConfigError(
                f"allowed_hosts: {name!r} is not a host name or a '*.example.com' pattern"
            )
    return tuple(filter(None, names))


def validate_profile(values: Mapping[str, Any]) -> dict[str, Any]:
    """Check user-edited settings; returns them coerced or raises ConfigError.

    A key belongs to the endpoint it was given for: a new ``base_url`` (or
    ``image_base_url``) saved without a new ``api_key`` (or ``image_api_key``) removes
    the stored key (value None).
    """
    unknown = set(values) - set(PROFILE_KEYS)
    if unknown:
        raise ConfigError(f"unknown setting(s): {', '.join(sorted(unknown))}")
    checked = {key: _coerce(key, value) for key, value in values.items()}
    if "image_base_url" in checked and "image_api_key" not in checked:
        checked["image_api_key"] = None
    if "base_url" in checked and "api_key" not in checked:
        checked["api_key"] = None
    return checked


def fixed_fields(
    flags: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    *,
    accounts_on: bool = False,
) -> dict[str, str]:
    """The settings a flag or the environment fixes, each with what fixes it (a
    variable's name or a flag), so Settings can show them disabled and never save them.

    A key from the environment fixes the endpoint too: it goes only to the endpoint the
    environment names (see load_settings). With accounts on (``accounts_on``) the connection
    is the operator's (OPERATOR_ONLY) unless the operator allows personal endpoints.
    """
    env = os.environ if env is None else env
    flags = {k: v for k, v in (flags or {}).items() if v is not None}
    fixed = {name: f"--{name.replace('_', '-')}" for name in flags}
    for name, variable in _ENV.items():
        if name not in fixed and env.get(variable):
            fixed[name] = variable
    key = next((v for v in ("COMPANION_API_KEY", "OPENROUTER_API_KEY") if env.get(v)), None)
    if "api_key" not in fixed and key:
        fixed["api_key"] = key
    if "api_key" in fixed or "base_url" in fixed:
        fixed.setdefault("base_url", fixed.get("api_key", ""))
        fixed.setdefault("api_key", fixed["base_url"])
    allowed = flags.get("allow_personal_endpoints", env.get(_ENV["allow_personal_endpoints"]))
    if accounts_on and not _coerce("allow_personal_endpoints", allowed):
        for name in CONNECTION_KEYS:
            fixed.setdefault(name, OPERATOR_ONLY)
    return fixed


def require_chat_model(settings: Settings) -> Settings:
    """The settings, or ConfigError naming the variable when no chat model is set
    (for the CLI; the app shows its model picker instead)."""
    if not settings.chat_model:
        raise ConfigError(
            "no chat model is set: set COMPANION_CHAT_MODEL (or choose one in the app's "
            "Settings); `companion doctor` lists the endpoint's models"
        )
    return settings


def origin(url: str | None) -> tuple[str, str, int] | None:
    """(scheme, host, port) of an http(s) URL, default ports filled in; None if unusable."""
    if not url:
        return None
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS or not parts.hostname:
        return None
    return scheme, parts.hostname, port or DEFAULT_PORTS[scheme]


def image_key(
    values: Mapping[str, Any], from_profile: Collection[str], chat_key: str | None
) -> str | None:
    """The key image_generate may send to ``values["image_base_url"]``, or None.

    A key goes only where it was given: an image key from the profile serves the image
    endpoint in effect (changing that endpoint in Settings drops it, see
    validate_profile); one from a flag or the environment serves only an image endpoint
    from a flag or the environment, never one a Settings user chose. The chat key serves
    an image endpoint only with the chat endpoint's scheme, host and port.
    """
    url = values.get("image_base_url")
    if values.get("image_backend") not in KEYED_IMAGE_BACKENDS or not url:
        return None
    own = values.get("image_api_key")
    if own and ("image_api_key" in from_profile or "image_base_url" not in from_profile):
        return str(own)
    chat = origin(values.get("base_url"))
    if chat_key and chat is not None and origin(url) == chat:
        return chat_key
    return None


def load_settings(
    flags: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    profile: Mapping[str, str] | None = None,
    *,
    accounts_on: bool = False,
) -> Settings:
    """Resolve settings from flags > environment > profile > defaults.

    ``accounts_on``: accounts are on and ``profile`` is one person's. Their connection
    (CONNECTION_KEYS) is then ignored unless the operator allows personal endpoints, and
    an endpoint they chose is named in ``personal_endpoints``. Without accounts the one
    person is the operator, and the profile's endpoints are theirs.
    """
    env = os.environ if env is None else env
    flags = {k: v for k, v in (flags or {}).items() if v is not None}
    profile = profile or {}
    values: dict[str, Any] = {}
    from_profile: set[str] = set()
    for name in {f.name for f in fields(Settings)}:
        if name in flags:
            values[name] = _coerce(name, flags[name])
        elif name in _ENV and env.get(_ENV[name]):
            try:
                values[name] = _coerce(name, env[_ENV[name]])
            except ConfigError as exc:  # say which variable to fix
                raise ConfigError(f"{_ENV[name]}: {exc}") from exc
        elif name in PROFILE_KEYS and profile.get(name):
            values[name] = _coerce(name, profile[name])
            from_profile.add(name)
    values = {k: v for k, v in values.items() if v is not None}
    if accounts_on and not values.get("allow_personal_endpoints"):
        for name in from_profile.intersection(CONNECTION_KEYS):
            values.pop(name, None)
        from_profile.difference_update(CONNECTION_KEYS)

    # The endpoint and its key are a pair, taken from one place: a key goes only to the
    # base URL it was given with. A flag or the environment naming either one fixes both,
    # and the profile's pair is ignored; a profile key serves only the profile's URL.
    outside_key = (
        flags.get("api_key") or env.get("COMPANION_API_KEY") or env.get("OPENROUTER_API_KEY")
    )
    profile_key = values.pop("api_key", None) if "api_key" in from_profile else None
    values.pop("api_key", None)
    if outside_key or ("base_url" in values and "base_url" not in from_profile):
        if "base_url" in from_profile:
            del values["base_url"]
        api_key = outside_key
    else:
        api_key = profile_key if "base_url" in from_profile else None
    # A person's endpoint: from their profile (accounts_on), and not replaced by the operator's.
    personal = frozenset(
        name
        for name in PERSONAL_ENDPOINT_KEYS
        if accounts_on and name in from_profile and name in values
    )
    base_url = values.get("base_url")
    if base_url is None and env.get("OPENROUTER_API_KEY") and not env.get("COMPANION_API_KEY"):
        base_url = OPENROUTER_BASE_URL
    provider = values.get("provider")
    if provider is None:
        provider = "openai-compatible" if (api_key or base_url) else "local"
    values.update(provider=provider, base_url=base_url, api_key=api_key)
    if provider == "local":
        # The local model is what answers; a profile's remote model name does not apply.
        if "chat_model" not in flags and not env.get("COMPANION_CHAT_MODEL"):
            values["chat_model"] = local_model_name(values.get("local_model"))
        values.setdefault("tool_mode", "commands")
    else:
        values.setdefault("tool_mode", "native")
        values.setdefault("chat_model", None)  # no hidden default: the person chooses
    values["image_api_key"] = image_key(values, from_profile, api_key)
    return Settings(**values, accounts_on=accounts_on, personal_endpoints=personal)


def local_model_name(choice: str | None) -> str:
    """The name shown for the local model COMPANION_LOCAL_MODEL chooses (a short name or
    a GGUF path; providers.local_model resolves it)."""
    if not choice or choice == "smollm2":
        return LOCAL_MODEL_NAME
    return f"{Path(choice).name} (local)"


def database_url(
    flags: Mapping[str, Any] | None = None, env: Mapping[str, str] | None = None
) -> str | None:
    """The Postgres database all people share (``--database-url`` >
    COMPANION_DATABASE_URL), or None for SQLite (one database file per person).

    Read from flags and the environment only, never the profile: the profile lives in
    the store this URL selects. A flag's URL must carry no password (a command line
    shows in ``ps``): libpq takes it from PGPASSWORD or ~/.pgpass.
    """
    return _postgres_url(flags, env, "database_url", DATABASE_URL_ENV)


def database_admin_url(
    flags: Mapping[str, Any] | None = None, env: Mapping[str, str] | None = None
) -> str | None:
    """The admin role's URL that ``companion db migrate`` makes the schema with
    (``--admin-url``, without a password, > COMPANION_DATABASE_ADMIN_URL), or None."""
    return _postgres_url(flags, env, "admin_url", DATABASE_ADMIN_URL_ENV)


def database_user(url: str) -> str:
    """The role a Postgres URL logs in as (the one migrations grant to), or ConfigError."""
    user = unquote(urlsplit(url).username or "")
    if not user:
        raise ConfigError(
            f"{DATABASE_URL_ENV} names no user: write the app's role in it "
            "(postgresql://ROLE@HOST/DB), the role the schema is granted to"
        )
    return user


def _postgres_url(
    flags: Mapping[str, Any] | None, env: Mapping[str, str] | None, flag: str, variable: str
) -> str | None:
    env = os.environ if env is None else env
    from_flag = (flags or {}).get(flag)
    value = str(from_flag) if from_flag else env.get(variable)
    if not value:
        return None
    source = f"--{flag.replace('_', '-')}" if from_flag else variable
    try:
        parts = urlsplit(value.strip())
        _ = parts.port  # a bad port raises here, not at the first connection
    except ValueError as exc:
        raise ConfigError(f"{source}: not a valid URL ({exc})") from exc
    if parts.scheme.lower() not in POSTGRES_SCHEMES:
        raise ConfigError(
            f"{source}: only a Postgres URL (postgresql://USER@HOST:PORT/DATABASE) is "
            f"accepted, got scheme {parts.scheme or 'none'!r}; leave it unset for SQLite"
        )
    if from_flag and (parts.password is not None or "password" in parse_qs(parts.query)):
        raise ConfigError(
            f"{source}: a password on the command line shows in `ps`: give the URL "
            f"without it and the password in PGPASSWORD (or ~/.pgpass), or the whole URL "
            f"in {variable}"
        )
    return value.strip()
