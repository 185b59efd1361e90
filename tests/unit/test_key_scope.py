"""A key goes only where it was given: what real image endpoints on loopback receive.

Issue 12, row 1: through the Settings API someone pointed the image backend at another
host, asked for a drawing, and that host received ``Authorization: Bearer <chat key>``.
Each test configures through the same path as the app (Settings form -> profile table ->
``load_settings``) and reads the Authorization header the fixture server recorded.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from app.settings_view import form_values, identity_text, profile_update, saved_message
from config.settings import Settings, load_settings
from evals.fixtures import ImageFixture
from memory.sqlite.async_store import AsyncSqliteStore
from memory.sqlite.store import SqliteStore
from tools.base import ToolContext
from tools.image_generate import image_generate

CHAT_KEY = "sk-chat-secret"
IMAGE_KEY = "sk-image-own"


@pytest.fixture
def chat_host() -> Iterator[ImageFixture]:
    """The chat endpoint's host (it also serves images, so same-origin reuse is real)."""
    with ImageFixture() as server:
        yield server


@pytest.fixture
def other_host() -> Iterator[ImageFixture]:
    """Another host, e.g. one an attacker chose in Settings: it records what it gets."""
    with ImageFixture() as server:
        yield server


def chat_env(chat_host: ImageFixture, **more: str) -> dict[str, str]:
    """The operator's environment: the chat endpoint (on chat_host) and its key; loopback
    endpoints allowed."""
    return {
        "COMPANION_BASE_URL": chat_host.base_url,
        "COMPANION_API_KEY": CHAT_KEY,
        "COMPANION_ALLOW_PRIVATE_URLS": "1",
        **more,
    }


def settings_now(store: SqliteStore, environment: dict[str, str]) -> Settings:
    """What the next turn runs with (the app reads the profile for every turn)."""
    return load_settings({"home": str(store.path.parent)}, environment, store.profile())


def save_form(
    store: SqliteStore, environment: dict[str, str], **changes: Any
) -> tuple[dict[str, Any], Settings]:
    """Save the Settings tab's form with some fields changed, the way the app does."""
    current = settings_now(store, environment)
    update = profile_update({**form_values(current), **changes}, identity_text(current), current)
    store.set_profile(update)
    return update, settings_now(store, environment)


async def draw(settings: Settings, store: SqliteStore) -> dict[str, Any]:
    return await image_generate(
        {"prompt": "a cat"}, ToolContext(settings, AsyncSqliteStore(store), "s1")
    )


def authorizations(server: ImageFixture) -> list[str | None]:
    return [r.headers.get("authorization") for r in server.requests]


async def test_another_image_host_set_in_settings_never_gets_the_chat_key(
    store, chat_host, other_host
) -> None:
    _, settings = save_form(
        store,
        chat_env(chat_host),
        image_backend="openai",
        image_base_url=other_host.base_url,
        image_model="fixture-image-1",
    )
    result = await draw(settings, store)

    assert "image_path" in result  # the host needs no key: the drawing still works
    assert authorizations(other_host) == [None]
    assert all(CHAT_KEY not in str(r.headers) for r in other_host.requests)
    assert chat_host.requests == []


async def test_the_chat_key_is_reused_on_the_chat_endpoints_own_host(store, chat_host) -> None:
    _, settings = save_form(
        store,
        chat_env(chat_host),
        image_backend="openai",
        image_base_url=chat_host.base_url,
        image_model="fixture-image-1",
    )
    await draw(settings, store)
    assert authorizations(chat_host) == [f"Bearer {CHAT_KEY}"]


async def test_a_saved_image_key_does_not_follow_a_new_url(store, chat_host, other_host) -> None:
    environment = chat_env(chat_host)
    with ImageFixture(api_key=IMAGE_KEY) as own_host:
        _, settings = save_form(
            store,
            environment,
            image_backend="openai",
            image_base_url=own_host.base_url,
            image_model="fixture-image-1",
            image_api_key=IMAGE_KEY,
        )
        assert "image_path" in await draw(settings, store)
        assert authorizations(own_host) == [f"Bearer {IMAGE_KEY}"]
    assert form_values(settings)["image_api_key"] == ""  # write-only: never shown

    # only the URL changes: the stored key is dropped, and the user is told
    update, settings = save_form(store, environment, image_base_url=other_host.base_url)
    assert "image_api_key" not in store.profile()
    message = saved_message(update, settings)
    assert "no image API key is set" in message and IMAGE_KEY not in message
    await draw(settings, store)
    assert authorizations(other_host) == [None]


async def test_an_operators_image_key_is_not_sent_to_a_url_chosen_in_settings(
    store, chat_host, other_host
) -> None:
    _, settings = save_form(
        store,
        chat_env(chat_host, COMPANION_IMAGE_API_KEY=IMAGE_KEY),
        image_backend="openai",
        image_base_url=other_host.base_url,
        image_model="fixture-image-1",
    )
    await draw(settings, store)
    assert authorizations(other_host) == [None]
