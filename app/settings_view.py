"""The Settings tab: the connection, models, location and persona.

``SettingsHandlers`` reads and saves the logged-in person's profile: only changed fields,
through ``graph.context.validate_profile`` (a refusal says why), so the next turn's
Context has them. ``fixed_fields`` (set by a flag or the environment, or the operator's
connection while accounts are on) are shown disabled and never saved. API keys are
write-only: the box is always empty, an empty box keeps the stored key. Verify checks
the form's endpoint without saving it (``verify_target``: the endpoint in effect whenever
the base URL is fixed). An edited identity block is saved as the profile's ``identity``;
under it, one sentence says how a style note combines with it (``WITH_A_STYLE_NOTE``).
A model server found running on this machine is offered by name above the form, and one
click switches to it through Verify and Save's own checks; another goes back to the
bundled model (``Connections``, which the chat's banner uses too).
``build`` only lays out and wires. The rules: docs/app.md.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import gradio as gr

from app import mcp_view
from app.graph_view import plain
from app.live_tabs import keep_newest
from config.settings import (
    IMAGE_BACKENDS,
    KEYED_IMAGE_BACKENDS,
    OPERATOR_ONLY,
    PROFILE_KEYS,
    TOOL_MODES,
    ConfigError,
    Settings,
    fixed_fields,
    origin,
)
from config.settings import validate_profile as validate
from graph.routing import NO_VISION_NOTICE
from graph.setup import ContextFactory, People
from prompts.templates import PERSONAS, STYLE_NOTE, persona_text
from providers import FoundServer, Verified, endpoint_status, local_servers, verify_endpoint
from tools.weather import WeatherError, find_places

NO_BACKEND = "none"
NOTE_OPENING = STYLE_NOTE.split("{note}")[0].strip()  # "For this reply:", as the model reads it
WITH_A_STYLE_NOTE = (
    f"A style note (under the chat's message box) adds “{NOTE_OPENING} …” after this "
    "identity block, for one message or, when kept, for the whole chat; the persona stays."
)
FORM_KEYS = tuple(key for key in PROFILE_KEYS if key != "identity")  # it has its own box
SECRET_KEYS = ("api_key", "image_api_key")  # saved, never shown
LABELS = {
    "base_url": "Base URL (OpenAI-compatible, e.g. https://openrouter.ai/api/v1)",
    "api_key": "API key",
    "chat_model": "Chat model",
    "vision_model": "Vision model (empty: none)",
    "tool_mode": "Tool mode",
    "image_backend": "Image backend",
    "image_base_url": "Image base URL",
    "image_model": "Image model",
    "image_api_key": "Image API key",
    "latitude": "Latitude (0 and 0 = not set)",
    "longitude": "Longitude",
    "timezone": "Time zone",
    "persona": "Persona",
}
KEY_DROPPED = (
    "Note: the saved API key was dropped because the base URL changed (a key goes only to "
    "the base URL it was saved with). Enter the key for the new URL if it needs one."
)
CHOOSE_MODEL = (
    "⚠️ **Choose a chat model**: none is set, so Companion can't answer yet. Press Verify "
    "to list the endpoint's models, pick one (or type its name) and save."
)
# A link to "#set-location" anywhere on the page (the weather step that needs a location)
# opens Settings at the place box: one listener on the document, added by launch(head=…).
LOCATION_LINK = """<script>
document.addEventListener('click', (event) => {
  const link = event.target instanceof Element && event.target.closest('a[href="#set-location"]');
  if (!link) return;
  event.preventDefault();
  event.stopPropagation();
  const tabs = [...document.querySelectorAll('#tabs button[role="tab"]')];
  tabs.find((tab) => tab.textContent.trim() === 'Settings')?.click();
  const focus = (tries) => {
    const box = document.querySelector('#set-place textarea, #set-place input');
    if (box && box.getClientRects().length) {
      box.scrollIntoView({block: 'center'});
      box.focus();
    } else if (tries > 0) {
      setTimeout(() => focus(tries - 1), 100);
    }
  };
  focus(30);
}, true);
</script>"""
PICK_PLACE = "Pick the place you mean from Matches."
FILLED_PLACE = "Latitude, longitude and time zone are filled in: **Save settings** keeps them."
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
    values: dict[str, Any] = {
        key: getattr(settings, key) for key in FORM_KEYS if key not in SECRET_KEYS
    }
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


def field_updates(settings: Settings, fixed: Mapping[str, str]) -> dict[str, dict[str, Any]]:
    """Each form field's value, label and whether it can be edited: a field a flag or
    the environment fixes is disabled and names what fixes it; a key shows only whether
    it is set, never its value."""
    values = form_values(settings)
    updates = {}
    for key in FORM_KEYS:
        label = LABELS[key]
        if key in SECRET_KEYS:
            state = "set" if getattr(settings, key) else "not set"
            label = f"{label} ({state}; write-only, an empty box keeps it)"
        if key in fixed:
            label = f"{label} — fixed by {fixed[key]}"
        updates[key] = {"value": values[key], "label": label, "interactive": key not in fixed}
    return updates


def profile_update(
    form: Mapping[str, Any],
    identity: str,
    current: Settings,
    fixed: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Validated profile values for what the user changed; raises ConfigError on a bad one.

    Only fields that differ from the settings in effect are saved, so defaults (the
    local model's name, its tool mode) are not written into the profile by accident.
    A change to a field that ``fixed`` (a flag or the environment) holds is refused.
    """
    fixed = fixed or {}
    shown = form_values(current)
    values = {k: _blank(form.get(k)) for k in FORM_KEYS if not _same(shown[k], form.get(k))}
    for key in values:
        name = LABELS[key].split(" (")[0].lower()
        if fixed.get(key) == OPERATOR_ONLY:
            raise ConfigError(f"{name} is set by {OPERATOR_ONLY}")
        if key in fixed:
            raise ConfigError(
                f"{name} is fixed by {fixed[key]}; change that instead (it wins over Settings)"
            )
    if "chat_model" in values and values["chat_model"] is None and not current.is_local:
        raise ConfigError("the chat model cannot be empty")
    if values.get("api_key") and not (values.get("base_url") or current.base_url):
        raise ConfigError("enter the base URL this API key is for")
    if values.get("image_backend") == NO_BACKEND:
        values["image_backend"] = None
    edited = (identity or "").strip()
    if edited != identity_text(current).strip() or "persona" in values:
        own = persona_text(form.get("persona")).strip()
        values["identity"] = edited if edited and edited != own else None
    return validate(values)


def saved_message(saved: Mapping[str, Any], settings: Settings, dropped_key: bool = False) -> str:
    """What the user reads after saving: what the next message uses, and any override.

    "✅ Saved" only when every saved value is in effect; otherwise "⚠️" and which one.
    """
    overridden = [
        key
        for key, value in saved.items()
        if key not in SECRET_KEYS and value is not None and getattr(settings, key) != value
    ]
    head = "✅ Saved." if not overridden else "⚠️ Saved, but not all of it is in effect."
    model = f"`{settings.chat_model}`" if settings.chat_model else "none (choose one)"
    lines = [
        f"{head} The next message uses chat model {model}, tool mode "
        f"`{settings.tool_mode}`, location ({settings.latitude}, {settings.longitude}), "
        f"persona `{settings.persona}`"
        + (" with an edited identity block." if settings.identity else "."),
    ]
    if dropped_key:
        lines.append(KEY_DROPPED)
    keyed = settings.image_backend in KEYED_IMAGE_BACKENDS
    if saved.get("image_base_url") and keyed and not settings.image_api_key:
        lines.append(NO_IMAGE_KEY)
    for key in overridden:  # never a key: not even the one in effect is echoed
        lines.append(
            f"Note: `{key}` is not in effect: the local provider (no base URL) or a flag "
            f"decides it (in effect: `{getattr(settings, key)}`)."
        )
    if not settings.is_local and not settings.chat_model:
        lines.append(CHOOSE_MODEL)
    return "\n\n".join(lines)


def vision_warning(settings: Settings) -> dict[str, Any]:
    """The no-vision notice under the vision-model field: shown when none is set and the
    provider isn't local."""
    missing = not settings.is_local and not settings.vision_model
    return {"value": f"⚠️ {NO_VISION_NOTICE}." if missing else "", "visible": missing}


def verify_target(
    form: Mapping[str, Any], current: Settings, fixed: Mapping[str, str] | None = None
) -> Settings:
    """The settings Verify checks: the form's base URL and models, unsaved. The saved key
    goes along only to the origin it was saved for; a typed key goes to the typed URL.

    A base URL that ``fixed`` holds (a flag, the environment, the operator) is verified as
    it is in effect, with its key, whatever the request says. With accounts on, a typed
    URL is the person's: the address guard trusts it nowhere."""
    url = _blank(form.get("base_url"))
    if url is None:
        return current
    if "base_url" in (fixed or {}):
        return dataclasses.replace(current, chat_model=_blank(form.get("chat_model")))
    typed = _blank(form.get("api_key"))
    same = origin(str(url)) is not None and origin(str(url)) == origin(current.base_url)
    mine = {"base_url"} if current.accounts_on else set()
    personal = current.personal_endpoints | mine
    return dataclasses.replace(
        current,
        provider="openai-compatible",
        base_url=str(url),
        api_key=typed or (current.api_key if same else None),
        chat_model=_blank(form.get("chat_model")),
        personal_endpoints=personal,
    )


class Connections:
    """The one-click connections: a model server found on this machine (offered by name,
    switched to as Save does, after Verify) and back to the bundled model."""

    def __init__(self, people: People, fixed: Mapping[str, str]) -> None:
        self.people, self.fixed = people, fixed

    async def offered(self, settings: Settings) -> FoundServer | None:
        """The found server to offer: none while accounts are on (nobody reaches the
        operator's loopback through it) or a flag or the environment fixes the base URL;
        never the one already in use."""
        if settings.accounts_on or "base_url" in self.fixed:
            return None
        found = await local_servers().current()
        return next((f for f in found if origin(f.base_url) != origin(settings.base_url)), None)

    def switchable(self, settings: Settings) -> bool:
        """Whether the bundled model can be chosen back (the base URL is the profile's)."""
        return not settings.is_local and "base_url" not in self.fixed

    async def use_found(self, make_context: ContextFactory) -> tuple[str, bool]:
        """Switch to the offered server's first chat model, through Verify and Save's own
        checks; (what the person reads, whether it switched)."""
        current = (await make_context()).settings
        found = await self.offered(current)
        if found is None:
            return "❌ No model server is running on this machine now.", False
        form = {**form_values(current), "base_url": found.base_url, "chat_model": found.model}
        verified = await verify_endpoint(verify_target(form, current, self.fixed))
        if not verified.ok:
            return f"❌ Not switched: {verified.text}", False
        try:
            update = profile_update(form, identity_text(current), current, self.fixed)
        except ConfigError as exc:
            return f"❌ Not switched: {exc}", False
        await make_context.store.set_profile(update)
        settings = (await make_context()).settings
        return f"{saved_message(update, settings)}\n\n**Endpoint:** {verified.text}", True

    async def use_bundled(self, make_context: ContextFactory) -> tuple[str, bool]:
        """Back to the bundled model: the profile's endpoint, its key, chat model and tool
        mode go (the bundled model's defaults apply)."""
        current = (await make_context()).settings
        if current.is_local:
            return f"✅ The bundled model answers already ({current.chat_model}).", False
        if "base_url" in self.fixed:
            return f"❌ The base URL is fixed by {self.fixed['base_url']}.", False
        await make_context.store.set_profile(
            validate({"base_url": None, "chat_model": None, "tool_mode": None})
        )
        settings = (await make_context()).settings
        return f"✅ Back to the bundled model ({settings.chat_model}).", True


def pick_place(chosen: str | None, found: list[dict[str, Any]]) -> tuple[Any, Any, Any, str]:
    """A match chosen: its latitude, longitude and time zone fill the form (saved with
    Save, like any field)."""
    if chosen is None or not chosen.isdigit() or int(chosen) >= len(found):
        return gr.skip(), gr.skip(), gr.skip(), ""
    place = found[int(chosen)]
    zone = place["timezone"] or gr.skip()
    return place["latitude"], place["longitude"], zone, FILLED_PLACE


def provider_line(settings: Settings) -> str:
    """Which provider and endpoint are configured (never the key)."""
    where = "embedded llama.cpp" if settings.is_local else (settings.base_url or "no base URL")
    key = "set" if settings.api_key else "not set"
    image_key = "set" if settings.image_api_key else "not set"
    return (
        f"**Provider:** `{settings.provider}` · **endpoint:** {where} · **API key:** {key}"
        f" · **image API key:** {image_key}"
    )


def settings_notice(settings: Settings) -> str:
    """The provider line, and the call to choose a chat model while none is set."""
    line = provider_line(settings)
    return line if settings.is_local or settings.chat_model else f"{line}\n\n{CHOOSE_MODEL}"


class SettingsHandlers:
    """The tab's handlers: each reads or saves the logged-in person's profile
    (``people.factory``); ``fixed`` are the fields a flag or the environment holds."""

    def __init__(self, people: People) -> None:
        self.people = people
        self.fixed = fixed_fields(people.flags, people.env, accounts_on=people.accounts_on)
        self.connections = Connections(people, self.fixed)
        # The pages whose endpoint line shows Verify's answer for the form (until a save):
        # the check that the page's load or the tab's opening started is not shown there.
        self.verified: dict[str, None] = {}

    async def settings(self, request: gr.Request) -> Settings:
        return (await self.people.factory(request.username)()).settings

    async def offer(self, request: gr.Request) -> list[Any]:
        """The found server's offer and its button, and the way back to the bundled model
        (page load, the tab opened)."""
        settings = await self.settings(request)
        found = await self.connections.offered(settings)
        back = self.connections.switchable(settings)
        return [
            gr.update(value=f"💡 {found.offer}" if found else "", visible=found is not None),
            gr.update(visible=found is not None),
            gr.update(visible=back),
        ]

    async def on_use_found(self, request: gr.Request) -> tuple[str, bool]:
        """One click: the found server's model is the connection (Verify, then Save)."""
        return await self.connections.use_found(self.people.factory(request.username))

    async def on_use_bundled(self, request: gr.Request) -> tuple[str, bool]:
        return await self.connections.use_bundled(self.people.factory(request.username))

    async def shown(self, request: gr.Request) -> dict[str, Any]:
        """The settings the form was just filled with (``refill`` compares them)."""
        return form_values(await self.settings(request))

    async def refill(self, filled: dict[str, Any], request: gr.Request) -> list[Any]:
        """The tab opened: the form again when the settings changed since it was filled
        (switched from the chat's banner, saved in another tab), else as the person left it
        (and before the page's own fill has landed: it fills the form as it is now)."""
        settings = await self.settings(request)
        if not filled or form_values(settings) == filled:
            return [gr.skip() for _ in range(len(FORM_KEYS) + 3)]
        return [
            settings_notice(settings),
            *self.fields(settings),
            gr.update(**vision_warning(settings)),
            form_values(settings),
        ]

    def fields(self, settings: Settings) -> list[Any]:
        """Each form field's update (value, label, editable), in ``FORM_KEYS`` order."""
        fields = field_updates(settings, self.fixed)
        return [gr.update(**fields[key]) for key in FORM_KEYS]

    async def fill(self, request: gr.Request) -> list[Any]:
        """The page load: the provider line, the form, the identity block, the notice."""
        settings = await self.settings(request)
        return [
            settings_notice(settings),
            *self.fields(settings),
            identity_text(settings),
            gr.update(**vision_warning(settings)),
        ]

    async def on_save(self, request: gr.Request, *values: Any) -> tuple[str, str, bool]:
        """Save what changed in the form (``values``: the fields, then the identity
        block); (what the person reads, the identity block now, whether it was saved)."""
        *fields, edited = values
        make_context = self.people.factory(request.username)
        current = (await make_context()).settings
        form = dict(zip(FORM_KEYS, fields, strict=True))
        try:
            update = profile_update(form, edited, current, self.fixed)
        except ConfigError as exc:
            return f"❌ Not saved: {exc}", edited, False
        await make_context.store.set_profile(update)
        settings = (await make_context()).settings
        dropped = bool(current.api_key) and "api_key" in update and update["api_key"] is None
        return saved_message(update, settings, dropped_key=dropped), identity_text(settings), True

    async def refresh(self, saved: bool, request: gr.Request) -> list[Any]:
        """After a save: the form as now in effect (typed keys cleared, labels say "set");
        after a refusal, what the user typed stays."""
        if not saved:
            return [gr.skip() for _ in range(len(FORM_KEYS) + 2)]
        settings = await self.settings(request)
        return [
            settings_notice(settings),
            *self.fields(settings),
            gr.update(**vision_warning(settings)),
        ]

    async def on_verify(self, request: gr.Request, *fields: Any) -> list[Any]:
        """Check the form's endpoint (unsaved) and offer its models in both dropdowns."""
        page = request.session_hash or ""
        keep_newest(self.verified, page, None)  # first: a check under way is not shown
        current = await self.settings(request)
        target = verify_target(dict(zip(FORM_KEYS, fields, strict=True)), current, self.fixed)
        verified: Verified = await verify_endpoint(target)
        choices = list(verified.models)
        return [
            f"**Endpoint:** {verified.text}",
            gr.update(choices=choices),
            gr.update(choices=["", *choices]),
        ]

    async def on_find(self, name: str, request: gr.Request) -> list[Any]:
        """The geocoder's matches for the typed place, offered in the Matches list; one
        match fills latitude, longitude and time zone at once; a failure or no match says
        so. (Matches, the words, the matches as dicts, latitude, longitude, time zone.)"""
        hidden, unchanged = gr.update(choices=[], visible=False), [gr.skip()] * 3
        try:
            places = await find_places(await self.settings(request), name)
        except WeatherError as exc:
            return [hidden, f"❌ {plain(str(exc))}", [], *unchanged]
        if not places:
            words = f"No place called “{plain(name.strip())}” was found: try its English name."
            return [hidden, words if name.strip() else "", [], *unchanged]
        found = [dataclasses.asdict(place) for place in places]
        choices = [(place.label, str(n)) for n, place in enumerate(places)]
        if len(places) > 1:
            shown = gr.update(choices=choices, value=None, visible=True)
            return [shown, PICK_PLACE, found, *unchanged]
        *filled, words = pick_place("0", found)
        return [gr.update(choices=choices, value="0", visible=True), words, found, *filled]

    async def on_check(self, request: gr.Request) -> Any:
        """The endpoint in effect, checked (page load, the tab opened); nothing on a page
        whose line shows Verify's answer for the form, asked before this check ends or
        after it began. Gradio cannot order the two: a Verify's ``cancels`` missed a check
        the page had sent but not yet heard back from, which then replaced Verify's answer
        (CI, under load)."""
        page = request.session_hash or ""
        if page in self.verified:
            return gr.skip()
        status = await endpoint_status(await self.settings(request))
        return gr.skip() if page in self.verified else f"**Endpoint:** {status}"

    async def on_effect(self, request: gr.Request) -> str:
        """The endpoint now in effect, checked after a save or a switch (the form shows
        what is in effect again, so Verify's answer is over)."""
        self.verified.pop(request.session_hash or "", None)
        return f"**Endpoint:** {await endpoint_status(await self.settings(request))}"


def build(people: People, load: Any, opened: Any) -> None:
    """Lay out the tab inside the current Blocks and wire it to ``SettingsHandlers``.

    The form is filled when the page loads (not each time the tab opens, which would
    overwrite what the user is typing); the endpoint is checked on both.
    """
    handlers = SettingsHandlers(people)
    provider = gr.Markdown(elem_id="provider-line")
    with gr.Row(equal_height=True):
        offer = gr.Markdown(visible=False, elem_id="found-server")
        use_found = gr.Button(
            "Use it", variant="primary", size="sm", scale=0, visible=False, elem_id="use-found"
        )
        use_bundled = gr.Button(
            "Back to the bundled model", size="sm", scale=0, visible=False, elem_id="use-bundled"
        )
    with gr.Row():
        base_url = gr.Textbox(label=LABELS["base_url"], elem_id="set-base-url")
        api_key = gr.Textbox(label=LABELS["api_key"], type="password", elem_id="set-api-key")
    with gr.Row():
        endpoint = gr.Markdown(elem_id="endpoint-status")
        check = gr.Button("Verify", elem_id="check-endpoint", size="sm", scale=0)
    with gr.Row():
        chat_model = gr.Dropdown(
            [], label=LABELS["chat_model"], allow_custom_value=True, elem_id="set-chat-model"
        )
        vision_model = gr.Dropdown(
            [], label=LABELS["vision_model"], allow_custom_value=True, elem_id="set-vision-model"
        )
        tool_mode = gr.Dropdown(
            list(TOOL_MODES), label=LABELS["tool_mode"], elem_id="set-tool-mode"
        )
    no_vision = gr.Markdown(visible=False, elem_id="no-vision-warning")
    with gr.Row():
        image_backend = gr.Dropdown(
            [NO_BACKEND, *IMAGE_BACKENDS],
            label=LABELS["image_backend"],
            elem_id="set-image-backend",
        )
        image_model = gr.Textbox(label=LABELS["image_model"], elem_id="set-image-model")
        image_base_url = gr.Textbox(label=LABELS["image_base_url"], elem_id="set-image-base-url")
        image_api_key = gr.Textbox(
            label=LABELS["image_api_key"], type="password", elem_id="set-image-api-key"
        )
    with gr.Row(equal_height=True, elem_id="place-row"):
        place = gr.Textbox(
            label="Your place (a town or city; Find fills the three boxes below)",
            placeholder="e.g. Bandung",
            max_lines=1,
            scale=3,
            elem_id="set-place",
        )
        find = gr.Button("Find", size="sm", scale=0, min_width=80, elem_id="find-place")
        matches = gr.Dropdown([], label="Matches", visible=False, scale=3, elem_id="place-matches")
    place_status = gr.Markdown(elem_id="place-status")
    with gr.Row():
        latitude = gr.Number(label=LABELS["latitude"], elem_id="set-latitude")
        longitude = gr.Number(label=LABELS["longitude"], elem_id="set-longitude")
        timezone = gr.Textbox(label=LABELS["timezone"], elem_id="set-timezone")
    persona = gr.Dropdown(list(PERSONAS), label=LABELS["persona"], elem_id="set-persona")
    identity = gr.Textbox(
        label="Identity block (edit to change the persona's voice; saved as an override)",
        lines=8,
        elem_id="set-identity",
    )
    gr.Markdown(WITH_A_STYLE_NOTE, elem_id="persona-style-note")
    save = gr.Button("Save settings", variant="primary", elem_id="save-settings")
    status = gr.Markdown(elem_id="settings-status")

    components = {
        "base_url": base_url,
        "api_key": api_key,
        "chat_model": chat_model,
        "vision_model": vision_model,
        "tool_mode": tool_mode,
        "image_backend": image_backend,
        "image_base_url": image_base_url,
        "image_model": image_model,
        "image_api_key": image_api_key,
        "latitude": latitude,
        "longitude": longitude,
        "timezone": timezone,
        "persona": persona,
    }
    form = [components[key] for key in FORM_KEYS]
    saved = gr.State(False)
    filled = gr.State({})  # the settings the form shows (SettingsHandlers.refill)
    refreshed = [provider, *form, no_vision]
    offered = [offer, use_found, use_bundled]
    private: dict[str, Any] = {"api_visibility": "private"}
    saving = save.click(
        handlers.on_save, [*form, identity], [status, identity, saved], api_name="save_settings"
    )
    saving.then(handlers.refresh, saved, refreshed, **private).then(
        handlers.shown, None, filled, **private
    )
    saving.then(handlers.on_effect, None, endpoint, **private)  # the endpoint now in effect
    for button, switch, name in (
        (use_found, handlers.on_use_found, "use_found_server"),
        (use_bundled, handlers.on_use_bundled, "use_bundled_model"),
    ):
        switched = button.click(switch, None, [status, saved], api_name=name)
        switched.then(handlers.refresh, saved, refreshed, **private).then(
            handlers.shown, None, filled, **private
        )
        switched.then(handlers.offer, None, offered, **private)
        switched.then(handlers.on_effect, None, endpoint, **private)
    found = gr.State([])  # the matches of the last Find, as dicts (Place)
    for asked in (find.click, place.submit):
        located = [latitude, longitude, timezone]
        asked(handlers.on_find, place, [matches, place_status, found, *located], **private)
    matches.input(
        pick_place, [matches, found], [latitude, longitude, timezone, place_status], **private
    )
    persona.input(persona_text, persona, identity, api_visibility="private")
    load(handlers.fill, None, [provider, *form, identity, no_vision], **private).then(
        handlers.shown, None, filled, **private
    )
    # The tab chosen refreshes it quietly (no fade and timer over the form at each click).
    quiet: dict[str, Any] = {**private, "show_progress": "hidden"}
    opened(handlers.refill, filled, [*refreshed, filled], **quiet)
    gr.on([load, opened], handlers.offer, None, offered, **quiet)
    checked = gr.on(
        [load, opened],
        handlers.on_check,
        None,
        endpoint,
        api_name="endpoint_status",
        show_progress="hidden",
    )
    # Verify answers for the form: the check of the endpoint in effect that the page's load
    # or the tab's opening started is let go (else landing late it hid Verify's answer), and
    # one still to land shows nothing (SettingsHandlers.on_check). In a listener of its own,
    # wired first: a listener's cancels run only once its handler is done.
    check.click(None, None, None, cancels=[checked], **private)
    check.click(handlers.on_verify, form, [endpoint, chat_model, vision_model], api_name="verify")
    mcp_view.build(people, load, opened)  # the MCP servers and their tools, read-only
