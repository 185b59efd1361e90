"""The server's guards and their settings: Host names, exposure, size limit (the login
throttle: tests/unit/test_logins.py)."""

from __future__ import annotations

import pytest

from app.security import (
    exposure_problem,
    is_loopback,
    trusted_hosts,
)
from config.settings import ConfigError, load_settings
from graph.events import Answer, TurnError
from graph.runner import stream_turn

PASSWORD = "s3cret"


def test_password_hosts_and_message_limit_come_from_the_environment() -> None:
    settings = load_settings(
        env={
            "COMPANION_PASSWORD": PASSWORD,
            "COMPANION_ALLOWED_HOSTS": " Companion.LAN, *.tail.example ,",
            "COMPANION_MAX_MESSAGE_CHARS": "500",
        }
    )
    assert settings.password == PASSWORD and PASSWORD not in repr(settings)
    assert settings.allowed_hosts == ("companion.lan", "*.tail.example")
    assert settings.max_message_chars == 500
    defaults = load_settings(env={})
    assert defaults.password is None and defaults.allowed_hosts == ()
    assert defaults.max_message_chars == 100_000


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"COMPANION_ALLOWED_HOSTS": "*"}, "not a host name"),
        ({"COMPANION_ALLOWED_HOSTS": "a*.example"}, "not a host name"),
        ({"COMPANION_MAX_MESSAGE_CHARS": "0"}, "at least 1"),
        ({"COMPANION_MAX_MESSAGE_CHARS": "lots"}, "not a valid value"),
    ],
)
def test_unusable_values_are_refused(env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_settings(env=env)


def test_the_profile_cannot_set_the_password_or_the_host_names() -> None:
    settings = load_settings(env={}, profile={"password": "x", "allowed_hosts": "evil.example"})
    assert settings.password is None and settings.allowed_hosts == ()


def test_trusted_hosts_are_loopback_the_bound_name_and_the_allowed_ones() -> None:
    assert trusted_hosts("127.0.0.1") == ["localhost", "127.0.0.1", "[::1]"]
    assert trusted_hosts("0.0.0.0", ("pi.lan",)) == ["localhost", "127.0.0.1", "[::1]", "pi.lan"]
    assert trusted_hosts("fd00::5")[-1] == "[fd00::5]"
    assert trusted_hosts("Box.lan")[-1] == "box.lan"


@pytest.mark.parametrize(
    ("host", "loopback"),
    [("127.0.0.1", True), ("localhost", True), ("::1", True), ("[::1]", True),
     ("127.0.0.2", True), ("0.0.0.0", False), ("::", False), ("192.168.1.5", False),
     ("box.lan", False)],
)  # fmt: skip
def test_only_loopback_may_go_without_a_password(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback
    assert (exposure_problem(host, None) is None) is loopback
    assert exposure_problem(host, PASSWORD) is None


async def test_a_too_long_message_is_refused_before_anything_is_stored(make_context) -> None:
    ctx = make_context(["never asked"], max_message_chars=10)
    error, answer = [e async for e in stream_turn(ctx, "s1", "x" * 11)]
    assert isinstance(error, TurnError) and isinstance(answer, Answer)
    assert answer.text.startswith("That message is 11 characters long; the limit is 10")
    assert ctx.store.blocking.messages("s1") == [] and ctx.chat_model.calls == []
    events = [e async for e in stream_turn(ctx, "s1", "x" * 10)]
    assert isinstance(events[-1], Answer) and len(ctx.store.blocking.messages("s1")) == 2
