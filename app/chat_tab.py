"""The Chat tab: conversations (new, switch, rename, delete) and the composer that runs turns.

``build`` lays the tab out inside the current Blocks and wires its handlers. A turn is
``graph.runner.stream_turn``; its events are folded into a ``chat_view.TurnView``, and the
chat is yielded after each visible one. When the turn has answered, the model line under
the chat and the Graph tab's trace (``trace``, a component the Graph tab renders) show it.

Each browser keeps its own session id in a ``gr.State``. A message that cannot be sent
(too long, or the database cannot take it) stays in the composer, and the chat says why.

An empty chat (first load, "New chat") shows the persona's greeting and a few example
prompts (``welcome``) as the Chatbot's placeholder: nothing is stored, and clicking an
example sends it as the message.

The style note sits under the composer: sent with the next message only, or, with "Keep
for this chat" ticked, kept on the session (``AsyncStore.set_style_note``) and shown above
the composer as the chat's active note until removed. Either way the box clears once the
message is sent; the note goes after the persona's identity block, never in its place.
"""

from __future__ import annotations

import dataclasses
import logging
import sqlite3
from collections.abc import AsyncIterator, Mapping
from typing import Any

import gradio as gr

from app.attachments import AttachmentError, pasted_image, save_upload
from app.chat_view import (
    TurnView,
    answer_bubble,
    history_messages,
    local_time,
    notice_bubble,
    user_bubble,
)
from app.graph_view import trace_markdown
from config.settings import Settings
from graph.context import Context
from graph.events import ModelDone
from graph.providers import LOCAL_BANNER
from graph.runner import catch_up_once, schedule_segments, stream_turn, too_long
from graph.setup import ContextFactory
from graph.state import TraceEvent
from memory.async_store import AsyncStore
from memory.store import StoreError
from prompts.templates import persona_greeting

log = logging.getLogger("companion.app")

NEW_TITLE = "New chat"
TITLE_CHARS = 40
# SQLite's primary result codes for a database that cannot take a write.
WRITE_FAILURES = ("SQLITE_READONLY", "SQLITE_FULL", "SQLITE_IOERR", "SQLITE_CANTOPEN")
WRITE_FAILURE = "Companion can't write to its database (disk full or read-only): {error}"
# An empty chat's example prompts: what Companion can do (drawing only with an image backend).
EXAMPLES = (
    "What's the weather like today?",
    "Search the web: what's the tallest building in the world?",
    "Remember that my favourite tea is jasmine.",
)
DRAW_EXAMPLE = "Draw a cat napping on a sunny windowsill."


async def session_choices(store: AsyncStore, tz: str) -> list[tuple[str, str]]:
    """(label, id) of every session, most recently active first; times on the person's clock."""
    sessions = await store.list_sessions()
    return [(f"{s.title} · {local_time(s.created_at, tz)}", s.id) for s in sessions]


def title_for(text: str) -> str:
    """A session title from its first message."""
    line = " ".join(text.split()) or "Image"
    return line if len(line) <= TITLE_CHARS else f"{line[: TITLE_CHARS - 1]}…"


async def ensure_session(store: AsyncStore, session_id: str | None, text: str) -> str:
    """The session to write to: the given one (titled from its first message) or a new one."""
    session = await store.get_session(session_id) if session_id else None
    if session is None:
        return (await store.create_session(title_for(text))).id
    if session.title == NEW_TITLE and await store.count_messages(session.id) == 0:
        await store.rename_session(session.id, title_for(text))
    return session.id


def model_line(settings: Settings, trace: list[Mapping[str, Any]] | None = None) -> str:
    """'model: X' for the model that answered last (or will answer next)."""
    calls = [e.get("detail") or {} for e in trace or [] if e.get("kind") in ("model", "error")]
    if not calls:
        return f"model: {settings.chat_model or 'none yet: choose one in Settings'}"
    last = calls[-1]
    role = " (vision)" if last.get("model_role") == "vision" else ""
    return f"model: {last.get('model')}{role}"


def welcome(settings: Settings) -> dict[str, Any]:
    """The empty chat's placeholder (the persona's name and greeting) and example prompts,
    as Chatbot properties; shown only, never stored."""
    prompts = [*EXAMPLES, DRAW_EXAMPLE] if settings.image_backend else list(EXAMPLES)
    greeting = persona_greeting(settings.persona)
    return {
        "placeholder": f"### {settings.persona.capitalize()}\n\n{greeting}",
        "examples": [{"text": text} for text in prompts],
    }


async def _history(store: AsyncStore, session_id: str | None) -> list[Any]:
    return history_messages(await store.messages(session_id)) if session_id else []


async def active_note(store: AsyncStore, session_id: str | None) -> tuple[Any, Any]:
    """(the active-note line, the Remove button) for the note kept on this session."""
    note = await store.style_note(session_id) if session_id else None
    text = f"📝 **Note for this chat:** {note}" if note else ""
    return gr.update(value=text, visible=bool(note)), gr.update(visible=bool(note))


def write_failure(exc: BaseException) -> str | None:
    """What to tell the user when the database refused a write (read-only, full), or None."""
    name = getattr(exc, "sqlite_errorname", None)
    if isinstance(exc, sqlite3.Error) and isinstance(name, str) and name.startswith(WRITE_FAILURES):
        return WRITE_FAILURE.format(error=exc)
    return None


def failure_bubble(exc: Exception) -> Any:
    """The chat's account of an exception that stopped a turn (call it where it is caught)."""
    problem = write_failure(exc)
    if problem:
        log.exception("the database refused a write")
        return answer_bubble(problem, error=True)
    # A bug below must not leave the chat frozen: show it instead.
    log.exception("turn failed")
    return answer_bubble(f"Something went wrong: {type(exc).__name__}: {exc}", error=True)


def build(make_context: ContextFactory, trace: gr.Markdown, load: Any) -> None:
    """Lay out the tab inside the current Blocks; ``load`` is the page's load event and
    ``trace`` is where the last turn's path goes. The model line and the local banner are
    filled in when the page loads."""
    store = make_context.store
    session = gr.State(None)
    told = gr.State([])  # sessions already told that no vision model is set
    with gr.Row():
        picker = gr.Dropdown([], label="Conversation", elem_id="session-picker", scale=4)
        title = gr.Textbox(label="Rename to", elem_id="session-title", scale=2, max_lines=1)
        with gr.Column(scale=1, min_width=120):
            new = gr.Button("New chat", elem_id="new-session", size="sm")
            rename = gr.Button("Rename", elem_id="rename-session", size="sm")
            delete = gr.Button("Delete", variant="stop", elem_id="delete-session", size="sm")
    with gr.Row(visible=False) as confirm_row:
        gr.Markdown("Delete this conversation and all its messages?")
        confirm = gr.Button("Yes, delete it", variant="stop", elem_id="confirm-delete")
        cancel = gr.Button("Cancel", elem_id="cancel-delete")
    banner = gr.Markdown(f"⚠️ {LOCAL_BANNER}", visible=False, elem_id="local-banner")
    chatbot = gr.Chatbot(
        elem_id="chatbot", height=560, label="Companion", buttons=["copy", "copy_all"]
    )
    box = gr.MultimodalTextbox(
        placeholder="Message (attach an image, or paste an image URL)",
        # No file_types: Gradio would refuse other files with its own technical error;
        # on_send checks the bytes and says in plain words why a file can't go.
        file_count="single",
        sources=["upload"],
        show_label=False,
        elem_id="chat-input",
    )
    with gr.Row(equal_height=True):
        note_line = gr.Markdown(visible=False, elem_id="active-note")
        remove_note = gr.Button(
            "Remove note", size="sm", scale=0, visible=False, elem_id="remove-note"
        )
    with gr.Accordion("Style note", open=False, elem_id="style-note-panel"):
        note = gr.Textbox(
            label="For your next message (the persona stays)",
            placeholder="e.g. answer in three bullet points",
            max_lines=3,
            elem_id="style-note",
        )
        keep = gr.Checkbox(label="Keep for this chat", elem_id="style-keep")
    line = gr.Markdown(elem_id="model-line")

    async def choices() -> list[tuple[str, str]]:
        return await session_choices(store, (await make_context()).settings.timezone)

    async def on_load() -> tuple[Any, ...]:
        ctx = await make_context()
        catch_up_once(ctx)
        sessions = await store.list_sessions()
        current = sessions[0].id if sessions else None
        return (
            current,
            gr.update(choices=await choices(), value=current),
            await _history(store, current),
            model_line(ctx.settings),
            gr.update(visible=ctx.settings.is_local),
        )

    async def on_switch(session_id: str | None, left: str | None) -> tuple[Any, ...]:
        await leave(left, session_id)
        return session_id, await _history(store, session_id)

    async def on_new(left: str | None) -> tuple[Any, ...]:
        await leave(left, None)
        created = (await store.create_session(NEW_TITLE)).id
        return created, gr.update(choices=await choices(), value=created), []

    async def leave(left: str | None, going_to: str | None) -> None:
        """The person left a session: what they said there becomes an episode now."""
        if left and left != going_to and await store.get_session(left):
            schedule_segments(await make_context(), left, force=True)

    async def on_remove_note(session_id: str | None) -> tuple[Any, Any]:
        if session_id and await store.get_session(session_id):
            await store.set_style_note(session_id, None)
        return await active_note(store, session_id)

    async def on_rename(session_id: str | None, new_title: str) -> tuple[Any, str]:
        if not session_id:
            gr.Warning("Send a message first: there is no conversation to rename yet.")
            return gr.skip(), new_title
        try:
            await store.rename_session(session_id, new_title)
        except StoreError as exc:
            gr.Warning(str(exc))
            return gr.skip(), new_title
        return gr.update(choices=await choices(), value=session_id), ""

    async def on_delete(session_id: str | None) -> tuple[Any, ...]:
        if session_id:
            await store.delete_session(session_id)
        sessions = await store.list_sessions()
        current = sessions[0].id if sessions else None
        return (
            current,
            gr.update(choices=await choices(), value=current),
            await _history(store, current),
            gr.update(visible=False),
        )

    async def on_send(
        message: Mapping[str, Any] | None,
        session_id: str | None,
        style_note: str,
        kept: bool,
        noticed: list[str],
    ) -> AsyncIterator[dict[Any, Any]]:
        text = str((message or {}).get("text") or "").strip()
        files = [str(f) for f in (message or {}).get("files") or []]
        if not text and not files:
            yield {box: gr.update(value=None)}
            return
        style_note = (style_note or "").strip()
        # A copy: the factory's Context is shared, the style note is this turn's only (a
        # kept note is read from the session by build_context instead).
        ctx = await make_context()
        ctx = dataclasses.replace(ctx, style_note=None if kept else style_note or None)
        # Refused before the composer is cleared: the message stays there to be fixed.
        refusal = too_long(text, ctx.settings.max_message_chars)
        if refusal:
            refused = answer_bubble(refusal, error=True)
            yield {chatbot: [*await _history(store, session_id), refused], box: message}
            return
        try:
            upload = save_upload(files[0], store.media_dir) if files else None
        except AttachmentError as exc:
            refused = answer_bubble(str(exc), error=True)
            yield {chatbot: [*await _history(store, session_id), refused], box: message}
            return
        try:
            session_id = await ensure_session(store, session_id, text)
            if kept and style_note:
                await store.set_style_note(session_id, style_note)
        except Exception as exc:
            failed = failure_bubble(exc)
            yield {chatbot: [*await _history(store, session_id), failed], box: message}
            return
        view = TurnView(await _history(store, session_id))
        shown_note, remove_shown = await active_note(store, session_id)
        yield {
            chatbot: [*view.messages, user_bubble(text)],
            box: gr.update(value=None, interactive=False),
            session: session_id,
            note: "",
            keep: False,
            note_line: shown_note,
            remove_note: remove_shown,
            picker: gr.update(choices=await choices(), value=session_id),
        }
        async for update in _turn(ctx, session_id, text, upload, view):
            yield {chatbot: update}
        unsaved = view.user_message_id is None  # it never reached the store: give it back
        notice = vision_notice(view.trace, session_id, noticed)
        if notice:
            view.messages.append(notice_bubble(notice))
            noticed = [*noticed, session_id]
        yield {
            chatbot: view.messages,
            told: noticed,
            box: gr.update(value=message if unsaved else None, interactive=True),
            line: model_line(ctx.settings, list(view.trace)),
            trace: trace_markdown(view.trace),
        }

    async def show_note(session_id: str | None) -> tuple[Any, Any]:
        return await active_note(store, session_id)

    async def greet() -> Any:
        """The greeting and examples for the settings now in effect (shown while empty)."""
        return gr.update(**welcome((await make_context()).settings))

    noted = [note_line, remove_note]
    # Whenever the conversation in view changes, its kept note (if any) shows with it.
    loaded = load(on_load, None, [session, picker, chatbot, line, banner], api_name="load")
    switched = picker.input(
        on_switch, [picker, session], [session, chatbot], api_name="switch_session"
    )
    started = new.click(on_new, session, [session, picker, chatbot], api_name="new_session")
    # The chat's own trash button starts a fresh conversation; the old one stays stored.
    cleared = chatbot.clear(on_new, session, [session, picker, chatbot], api_visibility="private")
    remove_note.click(on_remove_note, session, noted, api_name="remove_style_note")
    rename.click(on_rename, [session, title], [picker, title], api_name="rename_session")
    delete.click(lambda: gr.update(visible=True), None, confirm_row, api_visibility="private")
    cancel.click(lambda: gr.update(visible=False), None, confirm_row, api_visibility="private")
    deleted = confirm.click(
        on_delete, session, [session, picker, chatbot, confirm_row], api_name="delete_session"
    )
    for event in (loaded, switched, started, cleared, deleted):
        event.then(show_note, session, noted, api_visibility="private")
        event.then(greet, None, chatbot, api_visibility="private")
    sending = [box, session, note, keep, told]
    sent = [chatbot, box, session, picker, line, trace, note, keep, told, *noted]
    box.submit(on_send, sending, sent, api_name="send")
    # A clicked example goes into the composer and is sent from there, like a typed message.
    chatbot.example_select(example_message, None, box, api_visibility="private").then(
        on_send, sending, sent, api_visibility="private"
    )


def example_message(example: gr.SelectData) -> dict[str, Any]:
    """The composer's value for a clicked example prompt."""
    return {"text": str(example.value.get("text") or ""), "files": []}


def vision_notice(trace: list[TraceEvent], session_id: str, told: list[str]) -> str | None:
    """The no-vision-model notice when this turn's trace has it and the session was not
    told yet (once per session), else None."""
    if session_id in told:
        return None
    notices = (
        str((e.get("detail") or {}).get("notice"))
        for e in trace
        if e.get("kind") == "guard" and e.get("name") == "no_vision_model"
    )
    return next(notices, None)


async def _turn(
    ctx: Context, session_id: str, text: str, upload: str | None, view: TurnView
) -> AsyncIterator[list[Any]]:
    """Attach a pasted image, run the turn, and yield the chat after each visible event."""
    image_path = upload
    if image_path is None:
        try:
            image_path = await pasted_image(ctx, session_id, text)
        except AttachmentError as exc:
            gr.Warning(str(exc))
    try:
        async for event in stream_turn(ctx, session_id, text, image_path=image_path):
            view.apply(event)
            if not isinstance(event, ModelDone):
                yield view.messages
    except Exception as exc:
        view.messages.append(failure_bubble(exc))
        yield view.messages
