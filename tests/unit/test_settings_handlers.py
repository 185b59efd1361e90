"""The Settings tab's handlers (app.settings_view.SettingsHandlers), called as Gradio
would call them, on a profile in a temporary home: no browser, no endpoint."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import gradio as gr
import pytest

from app import settings_view
from app.settings_view import FORM_KEYS, SettingsHandlers, form_values, identity_text
from tests.support.app_fakes import FAKE_MODEL, OnePerson, person, request


def handlers(home: Path, **flags: Any) -> SettingsHandlers:
    return SettingsHandlers(OnePerson(person(home, **flags)))  # type: ignore[arg-type]


async def form_now(tab: SettingsHandlers, **changes: Any) -> list[Any]:
    """The form's fields as the page shows them, with ``changes`` typed in."""
    values = {**form_values(await tab.settings(request())), **changes}
    return [values[key] for key in FORM_KEYS]


def field(updates: list[Any], key: str) -> dict[str, Any]:
    return updates[FORM_KEYS.index(key)]


async def test_fill_shows_the_settings_in_effect(tmp_path: Path) -> None:
    tab = handlers(tmp_path, latitude=35.68)
    provider, *fields, identity, no_vision = await tab.fill(request())
    assert "openai-compatible" in provider
    assert field(fields, "latitude")["value"] == 35.68
    assert field(fields, "latitude")["interactive"] is False  # a flag holds it
    assert field(fields, "chat_model")["interactive"] is False
    assert identity == identity_text(await tab.settings(request()))
    assert no_vision["visible"] is True  # no vision model on a remote provider


async def test_save_writes_what_changed_and_the_form_follows(tmp_path: Path) -> None:
    tab = handlers(tmp_path)
    fields = await form_now(tab, timezone="Asia/Tokyo", longitude=139.7)
    status, identity, saved = await tab.on_save(request(), *fields, "You are a pirate.")
    assert saved is True and status.startswith("✅ Saved.")
    settings = await tab.settings(request())
    assert (settings.timezone, settings.longitude) == ("Asia/Tokyo", 139.7)
    assert settings.identity == identity == "You are a pirate."
    provider, *form, no_vision = await tab.refresh(True, request())
    assert field(form, "timezone")["value"] == "Asia/Tokyo" and len(form) == len(FORM_KEYS)
    assert "openai-compatible" in provider and no_vision["visible"] is True


async def test_a_refused_save_keeps_what_was_typed(tmp_path: Path) -> None:
    tab = handlers(tmp_path)
    fields = await form_now(tab, latitude=123)
    status, identity, saved = await tab.on_save(request(), *fields, "typed")
    assert saved is False and status.startswith("❌ Not saved: latitude")
    assert identity == "typed"
    assert (await tab.settings(request())).latitude != 123
    assert await tab.refresh(False, request()) == [gr.skip()] * (len(FORM_KEYS) + 2)


async def test_a_field_fixed_by_a_flag_is_not_saved(tmp_path: Path) -> None:
    tab = handlers(tmp_path, latitude=1.5)
    fields = await form_now(tab, latitude=2.5)
    status, _, saved = await tab.on_save(request(), *fields, "")
    assert saved is False and "fixed by" in status


async def test_verify_checks_the_form_endpoint_unsaved_and_offers_its_models(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checked: list[Any] = []

    async def verify(settings: Any) -> Any:
        checked.append(settings)
        return settings_view.Verified("ok: 2 models", ("m1", "m2"), ok=True)

    monkeypatch.setattr(settings_view, "verify_endpoint", verify)
    tab = handlers(tmp_path)
    fields = await form_now(tab, base_url="https://example.test/v1")
    words, chat, vision = await tab.on_verify(request(), *fields)
    assert words == "**Endpoint:** ok: 2 models"
    assert chat["choices"] == ["m1", "m2"] and vision["choices"] == ["", "m1", "m2"]
    assert checked[0].base_url == "https://example.test/v1"
    assert (await tab.settings(request())).base_url != "https://example.test/v1"  # unsaved


async def test_check_reports_the_endpoint_in_effect(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def status(settings: Any) -> str:
        return f"reachable, model {settings.chat_model}"

    monkeypatch.setattr(settings_view, "endpoint_status", status)
    assert (
        await handlers(tmp_path).on_check(request())
        == f"**Endpoint:** reachable, model {FAKE_MODEL}"
    )


async def test_a_check_does_not_replace_verifys_answer_until_a_save(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check the tab's opening started, landing after Verify (the page could not
    cancel it), shows nothing; after a save the endpoint in effect is shown again."""
    checking, go_on = asyncio.Event(), asyncio.Event()

    async def status(settings: Any) -> str:
        checking.set()
        await go_on.wait()
        return "the bundled model"

    async def verify(settings: Any) -> Any:
        return settings_view.Verified("ok: 2 models", ("m1", "m2"), ok=True)

    monkeypatch.setattr(settings_view, "endpoint_status", status)
    monkeypatch.setattr(settings_view, "verify_endpoint", verify)
    tab = handlers(tmp_path)
    under_way = asyncio.create_task(tab.on_check(request()))
    await checking.wait()
    fields = await form_now(tab, base_url="https://example.test/v1")
    words, _, _ = await tab.on_verify(request(), *fields)
    assert words == "**Endpoint:** ok: 2 models"
    go_on.set()
    assert await under_way == gr.skip()  # begun before Verify, ended after
    assert await tab.on_check(request()) == gr.skip()  # the tab opened again
    other_page = SimpleNamespace(username=None, session_hash="page-2")
    assert await tab.on_check(other_page) == "**Endpoint:** the bundled model"
    assert await tab.on_effect(request()) == "**Endpoint:** the bundled model"  # saved
    assert await tab.on_check(request()) == "**Endpoint:** the bundled model"
