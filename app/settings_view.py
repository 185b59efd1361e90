"""The Settings tab: models, endpoint status, location and persona.

Saved values go through ``graph.context.validate_profile`` into the profile table; the
next turn builds its Context from the re-read profile, so a change applies at once.

Persona: a dropdown picks the bundled persona, and its identity block is shown in an
editable box. An edited identity block is saved as the profile's ``identity`` (used in
the persona's place in every system message); text equal to the persona's own, or an
empty box, clears it. Style notes are another thing: they live in the Chat tab, go after
the identity block and never change it (``app.chat_tab``).

Image API key: write-only. The box is always shown empty; text typed into it is saved,
an empty box keeps the stored key. A new image base URL saved without a key drops the
stored one (``validate_profile``): a key goes only to the endpoint it was given for.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import gradio as gr

from config.settings import (
    IMAGE_BACKENDS,
    KEYED_IMAGE_BACKENDS,
    PROFILE_KEYS,
    TOOL_MODES,
    ConfigError,
    Settings,
)
from config.settings import validate_profile as validate
from graph.providers import endpoint_status
from graph.setup import ContextFactory
from prompts.templates import PERSONAS, persona_text

NO_BACKEND = "none"
FORM_KEYS = tuple(key for key in PROFILE_KEYS if key != "identity")  # it has its own box
SECRET_KEYS = ("image_api_key",)  # saved, never shown
NO_IMAGE_KEY = (
    "Note: no image API key is set for the new image base URL (a saved key is dropped when "
    "the URL changes). Enter the key for this endpoint if it needs one; the chat key is "
    "sent only to an endpoint with the chat endpoint's scheme, host and port."
)


def identity_text(settings: Settings) -> str:
    """The identity block in effect: the user's edited text, else the persona's own."""
    return settings.identity or persona_text(settings.persona)


def form_values(settings: Settings) -> dict[str, Any]:
    """What the form shows for the settings in effect."""
    values = {key: getattr(settings, key) for key in FORM_KEYS if key not in SECRET_KEYS}
    values["image_backend"] = settings.image_backend or NO_BACKEND
    values.update(dict.fromkeys(SECRET_KEYS, ""))
    return {key: "" if value is None else value for key, value in values.items()}


def _blank(value: Any) -> Any:
    if isinstance(value, str):
        value = value.strip()
    return None if value is None or value == "" else value


def _same(shown: Any, sent: Any) -> bool:
    if isinstance(shown, int | float) and isinstance(sent, int | float):
        return float(shown) == float(sent)
    return _blank(shown) == _blank(sent)


def profile_update(form: Mapping[str, Any], identity: str, current: Settings) -> dict[str, Any]:
    """Validated profile values for what the user changed; raises ConfigError on a bad one.

    Only fields that differ from the settings in effect are saved, so defaults (the
    local model's name, its tool mode) are not written into the profile by accident.
    """
    shown = form_values(current)
    values = {k: _blank(form.get(k)) for k in FORM_KEYS if not _same(shown[k], form.get(k))}
    if "chat_model" in values and values["chat_model"] is None:
        raise ConfigError("the chat model cannot be empty")
    if values.get("image_backend") == NO_BACKEND:
        values["image_backend"] = None
    edited = (identity or "").strip()
    if edited != identity_text(current).strip() or "persona" in values:
        own = persona_text(form.get("persona")).strip()
        values["identity"] = edited if edited and edited != own else None
    return validate(values)


def saved_message(saved: Mapping[str, Any], settings: Settings) -> str:
    """What the user reads after saving: what the next message uses, and any override."""
    lines = [
        f"✅ Saved. The next message uses chat model `{settings.chat_model}`, tool mode "
        f"`{settings.tool_mode}`, location ({settings.latitude}, {settings.longitude}), "
        f"persona `{settings.persona}`"
        + (" with an edited identity block." if settings.identity else "."),
    ]
    keyed = settings.image_backend in KEYED_IMAGE_BACKENDS
    if saved.get("image_base_url") and keyed and not settings.image_api_key:
        lines.append(NO_IMAGE_KEY)
    for key, value in saved.items():
        if key in SECRET_KEYS:
            continue  # never echoed, not even the key in effect
        if value is not None and getattr(settings, key) != value:
            lines.append(
                f"Note: `{key}` is fixed by a flag, the environment or the local provider "
                f"(in effect: `{getattr(settings, key)}`)."
            )
    return "\n\n".join(lines)


def provider_line(settings: Settings) -> str:
    """Which provider and endpoint are configured (never the key)."""
    where = "embedded llama.cpp" if settings.is_local else (settings.base_url or "no base URL")
    key = "set" if settings.api_key else "not set"
    image_key = "set" if settings.image_api_key else "not set"
    return (
        f"**Provider:** `{settings.provider}` · **endpoint:** {where} · **API key:** {key}"
        f" · **image API key:** {image_key}"
    )


def build(make_context: ContextFactory, load: Any, opened: Any) -> None:
    """Lay out the tab inside the current Blocks.

    The form is filled when the page loads (not each time the tab opens, which would
    overwrite what the user is typing); the endpoint is checked on both.
    """
    store = make_context.store
    provider = gr.Markdown(elem_id="provider-line")
    with gr.Row():
        endpoint = gr.Markdown(elem_id="endpoint-status")
        check = gr.Button("Check endpoint", elem_id="check-endpoint", size="sm", scale=0)
    with gr.Row():
        chat_model = gr.Textbox(label="Chat model", elem_id="set-chat-model")
        vision_model = gr.Textbox(label="Vision model (empty: none)", elem_id="set-vision-model")
        tool_mode = gr.Dropdown(list(TOOL_MODES), label="Tool mode", elem_id="set-tool-mode")
    with gr.Row():
        image_backend = gr.Dropdown(
            [NO_BACKEND, *IMAGE_BACKENDS], label="Image backend", elem_id="set-image-backend"
        )
        image_model = gr.Textbox(label="Image model", elem_id="set-image-model")
        image_base_url = gr.Textbox(label="Image base URL", elem_id="set-image-base-url")
        image_api_key = gr.Textbox(
            label="Image API key (write-only; empty keeps the saved key)",
            type="password",
            elem_id="set-image-api-key",
        )
    with gr.Row():
        latitude = gr.Number(label="Latitude (0 and 0 = not set)", elem_id="set-latitude")
        longitude = gr.Number(label="Longitude", elem_id="set-longitude")
        timezone = gr.Textbox(label="Time zone", elem_id="set-timezone")
    persona = gr.Dropdown(list(PERSONAS), label="Persona", elem_id="set-persona")
    identity = gr.Textbox(
        label="Identity block (edit to change the persona's voice; saved as an override)",
        lines=8,
        elem_id="set-identity",
    )
    save = gr.Button("Save settings", variant="primary", elem_id="save-settings")
    status = gr.Markdown(elem_id="settings-status")

    form = [
        chat_model,
        vision_model,
        tool_mode,
        image_backend,
        image_base_url,
        image_model,
        image_api_key,
        latitude,
        longitude,
        timezone,
        persona,
    ]

    async def fill() -> list[Any]:
        settings = (await make_context()).settings
        values = form_values(settings)
        return [
            provider_line(settings),
            *(values[key] for key in FORM_KEYS),
            identity_text(settings),
        ]

    async def on_save(*values: Any) -> tuple[str, str]:
        *fields, edited = values
        try:
            form = dict(zip(FORM_KEYS, fields, strict=True))
            update = profile_update(form, edited, (await make_context()).settings)
        except ConfigError as exc:
            return f"❌ Not saved: {exc}", edited
        await store.set_profile(update)
        settings = (await make_context()).settings
        return saved_message(update, settings), identity_text(settings)

    async def on_check() -> str:
        settings = (await make_context()).settings
        return f"**Endpoint:** {await asyncio.to_thread(endpoint_status, settings)}"

    save.click(on_save, [*form, identity], [status, identity], api_name="save_settings")
    check.click(on_check, None, endpoint, api_name="endpoint_status")
    persona.input(persona_text, persona, identity, api_visibility="private")
    load(fill, None, [provider, *form, identity], api_visibility="private")
    gr.on([load, opened], on_check, None, endpoint, api_visibility="private")
