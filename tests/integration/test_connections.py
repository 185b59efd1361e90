"""The connection edited in Settings, through the running app (gradio_client) and the CLI.

A key saved in Settings is never sent back to the browser and goes only to the base URL
it was saved with; a field fixed by a flag or the environment cannot be saved; an unknown
persona is refused; with no chat model the first message says to choose one, and the
CLI names COMPANION_CHAT_MODEL and exits 2. With accounts on, the connection is the
operator's: a person cannot save a base URL unless the operator allows personal endpoints.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from gradio_client.exceptions import AppError

from config.settings import LOCAL_MODEL_NAME
from tests.integration.conftest import settings_form
from tests.integration.test_app_client import send, text_of
from tests.support.fake_openai import FakeOpenAIServer

SECRET = "sk-SECRET-never-shown-1234"


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


def form(**changes: Any) -> list[Any]:
    """The Settings form with no endpoint yet, in commands mode, then ``changes``."""
    return settings_form(**{"base_url": "", "tool_mode": "commands", **changes})


def test_a_saved_key_never_goes_back_and_a_new_base_url_drops_it(launch, server) -> None:
    app = launch(provider=None, base_url=None)
    client = app.client()
    seen: list[str] = []
    status, _ = client.predict(
        *form(base_url=server.url, api_key=SECRET, tool_mode="native"),
        "",
        api_name="/save_settings",
    )
    seen.append(str(status))
    assert status.startswith("✅ Saved"), status
    assert app.store.profile()["api_key"] == SECRET

    server.model_ids = ["other-model", "scripted-chat"]
    shown = form(base_url=server.url, tool_mode="native")  # the box comes back empty
    verified = client.predict(*shown, api_name="/verify")
    seen.append(str(verified))
    assert verified[0].startswith("**Endpoint:** ✅") and "`scripted-chat`" in verified[0]
    seen.append(str(client.predict(api_name="/endpoint_status")))
    for page in ("config", "gradio_api/info"):
        seen.append(httpx.get(f"{app.url.rstrip('/')}/{page}", timeout=10).text)
    assert all(SECRET not in text for text in seen)

    status, _ = client.predict(
        *form(base_url="http://127.0.0.1:9/v1", tool_mode="native"), "", api_name="/save_settings"
    )
    assert "the saved API key was dropped because the base URL changed" in status
    assert "api_key" not in app.store.profile()
    assert SECRET not in status


def test_verify_sends_the_saved_key_only_to_its_own_base_url(launch, server) -> None:
    app = launch(provider=None, base_url=None)
    client = app.client()
    client.predict(*form(base_url=server.url, api_key=SECRET), "", api_name="/save_settings")
    server.models_status = 401
    refused = client.predict(*form(base_url=server.url), api_name="/verify")
    assert "the API key was refused (HTTP 401)" in refused[0]
    # an unsaved other URL is verified without the saved key
    other = "http://localhost:9/v1"
    assert "unreachable" in client.predict(*form(base_url=other), api_name="/verify")[0]


def test_a_field_fixed_by_a_flag_is_refused(launch) -> None:
    app = launch()  # the fixture passes --base-url and --provider
    client = app.client()
    status, _ = client.predict(
        *form(base_url="http://elsewhere:1/v1", tool_mode="native"), "", api_name="/save_settings"
    )
    assert status.startswith("❌ Not saved: base url is fixed by --base-url")
    assert "base_url" not in app.store.profile()


def test_an_unknown_persona_is_refused(launch) -> None:
    # the dropdown refuses it; COMPANION_PERSONA and the profile are checked in
    # tests/unit/test_settings.py
    app = launch(provider=None, base_url=None)
    with pytest.raises(AppError, match="not in the list of choices"):
        app.client().predict(*form(persona="pirate"), "", api_name="/save_settings")
    assert "persona" not in app.store.profile()


def test_no_chat_model_the_first_message_says_to_choose_one(launch, server) -> None:
    app = launch(provider=None, base_url=None)
    app.store.set_profile({"base_url": server.url, "chat_model": None})
    chat, *_ = send(app.client(), "hello?")
    assert "I can't answer yet: no chat model is set" in text_of(chat[-1])
    assert app.model.calls == [] and server.requests == []


def test_the_cli_names_the_variable_and_exits_2(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "COMPANION_HOME": str(tmp_path), "OPENROUTER_API_KEY": "k"}
    done = subprocess.run(
        [sys.executable, "-m", "app.cli", "chat", "-m", "hi"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "COMPANION_CHAT_MODEL" in done.stderr


@pytest.mark.parametrize("name", ["ann", "bob"])
def test_with_accounts_a_person_cannot_set_a_base_url(with_accounts, name) -> None:
    app = with_accounts()
    client = app.client(name)
    status, _ = client.predict(
        *form(base_url="http://127.0.0.1:5432/v1", api_key=SECRET),
        "",
        api_name="/save_settings",
    )
    assert status.startswith("❌ Not saved: base url is set by the operator")
    assert "COMPANION_ALLOW_PERSONAL_ENDPOINTS" in status
    assert "base_url" not in app.profile(name) and "api_key" not in app.profile(name)
    local = form(chat_model=LOCAL_MODEL_NAME, latitude=12.5)
    status, _ = client.predict(*local, "", api_name="/save_settings")
    assert status.startswith("✅ Saved"), "the rest of Settings stays each person's"


def test_the_operator_can_let_each_person_choose_an_endpoint(with_accounts, server) -> None:
    app = with_accounts(env={"COMPANION_ALLOW_PERSONAL_ENDPOINTS": "1"})
    status, _ = app.client("bob").predict(
        *form(base_url="https://models.example/v1", tool_mode="native"),
        "",
        api_name="/save_settings",
    )
    assert status.startswith("✅ Saved"), status
    settings = app.settings("bob")
    assert settings.base_url == "https://models.example/v1"
    assert settings.personal_endpoints == {"base_url"}
    assert "base_url" not in app.profile("ann")
