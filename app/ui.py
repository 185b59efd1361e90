"""The Gradio app: Chat, Settings, Memories and Graph tabs, and the server around them.

``build_app(make_context)`` lays the app out around a context factory: every turn calls
it for a fresh ``Context`` built from the current profile, so a saved setting applies
to the next message. ``launch_app`` starts it without blocking (tests launch it around a
scripted model); ``serve`` is what ``companion`` runs. Each browser keeps its own
session id in a ``gr.State``, handlers are async and the queue runs many at once, so two
browsers chat side by side and a running tool never freezes the page.

The server trusts no stranger (``app.security``): it answers only to its own Host names,
serves a Content-Security-Policy, throttles failed logins and caps uploads at
``MAX_UPLOAD_BYTES``; ``serve`` refuses to listen beyond loopback without a password.
A message that cannot be sent (too long, or the database cannot take it) stays in the
composer, and the chat says why.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import signal
import sqlite3
import sys
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

# Gradio and its client phone home unless told not to; nothing leaves this machine.
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")

import gradio as gr

from app import memories_view, settings_view
from app.attachments import AttachmentError, attach
from app.chat_view import TurnView, answer_bubble, history_messages, user_bubble
from app.graph_view import NO_TRACE, mermaid_markdown, trace_markdown
from app.security import exposure_problem, middleware, trusted_hosts
from graph.builder import mermaid
from graph.context import ConfigError, Context, Settings, load_settings
from graph.models import LOCAL_BANNER
from graph.runner import stream_turn, too_long
from graph.setup import context_for, open_settings
from memory.store import Store, StoreError

log = logging.getLogger("companion.app")

ContextFactory = Callable[[], Context]
USER = "companion"
CONCURRENCY = 16
NEW_TITLE = "New chat"
TITLE_CHARS = 40
MAX_UPLOAD_BYTES = 20 * 1024 * 1024  # refused while it streams in, never read whole
# SQLite's primary result codes for a database that cannot take a write.
WRITE_FAILURES = ("SQLITE_READONLY", "SQLITE_FULL", "SQLITE_IOERR", "SQLITE_CANTOPEN")
WRITE_FAILURE = "Companion can't write to its database (disk full or read-only): {error}"
CSS = "#model-line { opacity: 0.7; font-size: 0.9em; } #local-banner { color: #b45309; }"


def context_factory(
    flags: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    *,
    chat_model: Any = None,
    vision_model: Any = None,
    registry: Any = None,
) -> ContextFactory:
    """Open the store once; each call gives the Context for the profile as it is now.

    The Context (and its model clients, with their HTTP connections) is rebuilt only when
    the profile has changed since the last call, not on every turn.
    """
    _, store = open_settings(flags, env)
    built: dict[tuple[tuple[str, str], ...], Context] = {}

    def make() -> Context:
        profile = store.profile()
        key = tuple(sorted(profile.items()))
        if key not in built:
            built.clear()
            built[key] = context_for(
                load_settings(flags, env, profile),
                store,
                registry=registry,
                chat_model=chat_model,
                vision_model=vision_model,
            )
        return built[key]

    return make


def session_choices(store: Store) -> list[tuple[str, str]]:
    """(label, id) of every session, most recently active first."""
    return [(f"{s.title} · {s.created_at[:16]}", s.id) for s in store.list_sessions()]


def title_for(text: str) -> str:
    """A session title from its first message."""
    line = " ".join(text.split()) or "Image"
    return line if len(line) <= TITLE_CHARS else f"{line[: TITLE_CHARS - 1]}…"


def ensure_session(store: Store, session_id: str | None, text: str) -> str:
    """The session to write to: the given one (titled from its first message) or a new one."""
    session = store.get_session(session_id) if session_id else None
    if session is None:
        return store.create_session(title_for(text)).id
    if session.title == NEW_TITLE and store.count_messages(session.id) == 0:
        store.rename_session(session.id, title_for(text))
    return session.id


def model_line(settings: Settings, trace: list[Mapping[str, Any]] | None = None) -> str:
    """'model: X' for the model that answered last (or will answer next)."""
    calls = [e.get("detail") or {} for e in trace or [] if e.get("kind") in ("model", "error")]
    if not calls:
        return f"model: {settings.chat_model}"
    last = calls[-1]
    role = " (vision)" if last.get("model_role") == "vision" else ""
    return f"model: {last.get('model')}{role}"


def _history(store: Store, session_id: str | None) -> list[Any]:
    return history_messages(store.messages(session_id)) if session_id else []


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


def build_app(make_context: ContextFactory) -> gr.Blocks:
    """The app's Blocks (not launched)."""
    first = make_context()
    store = first.store
    with gr.Blocks(title="Companion") as demo:
        session = gr.State(None)
        style_once = gr.State(None)
        with gr.Tabs(elem_id="tabs"):
            with gr.Tab("Chat", id="chat", elem_id="tab-chat"):
                with gr.Row():
                    picker = gr.Dropdown(
                        [], label="Conversation", elem_id="session-picker", scale=4
                    )
                    title = gr.Textbox(
                        label="Rename to", elem_id="session-title", scale=2, max_lines=1
                    )
                    with gr.Column(scale=1, min_width=120):
                        new = gr.Button("New chat", elem_id="new-session", size="sm")
                        rename = gr.Button("Rename", elem_id="rename-session", size="sm")
                        delete = gr.Button(
                            "Delete", variant="stop", elem_id="delete-session", size="sm"
                        )
                with gr.Row(visible=False) as confirm_row:
                    gr.Markdown("Delete this conversation and all its messages?")
                    confirm = gr.Button("Yes, delete it", variant="stop", elem_id="confirm-delete")
                    cancel = gr.Button("Cancel", elem_id="cancel-delete")
                banner = gr.Markdown(
                    f"⚠️ {LOCAL_BANNER}", visible=first.settings.is_local, elem_id="local-banner"
                )
                chatbot = gr.Chatbot(
                    elem_id="chatbot", height=560, label="Companion", buttons=["copy", "copy_all"]
                )
                box = gr.MultimodalTextbox(
                    placeholder="Message (attach an image, or paste an image URL)",
                    file_types=["image"],
                    file_count="single",
                    sources=["upload"],
                    show_label=False,
                    elem_id="chat-input",
                )
                line = gr.Markdown(model_line(first.settings), elem_id="model-line")
            with gr.Tab("Settings", id="settings", elem_id="tab-settings") as settings_tab:
                settings_view.build(make_context, style_once, demo.load, settings_tab.select)
            with gr.Tab("Memories", id="memories", elem_id="tab-memories") as memories_tab:
                memories_view.build(make_context, [demo.load, memories_tab.select])
            with gr.Tab("Graph", id="graph", elem_id="tab-graph"):
                gr.Markdown("### The conversation graph")
                gr.Markdown(mermaid_markdown(mermaid()), elem_id="graph-diagram")
                gr.Markdown("### Last turn")
                trace = gr.Markdown(NO_TRACE, elem_id="turn-trace")

        def on_load() -> tuple[Any, ...]:
            ctx = make_context()
            sessions = ctx.store.list_sessions()
            current = sessions[0].id if sessions else None
            return (
                current,
                gr.update(choices=session_choices(store), value=current),
                _history(store, current),
                model_line(ctx.settings),
                gr.update(visible=ctx.settings.is_local),
            )

        def on_switch(session_id: str | None) -> tuple[Any, ...]:
            return session_id, _history(store, session_id)

        def on_new() -> tuple[Any, ...]:
            created = store.create_session(NEW_TITLE).id
            return created, gr.update(choices=session_choices(store), value=created), []

        def on_rename(session_id: str | None, new_title: str) -> tuple[Any, str]:
            if not session_id:
                gr.Warning("Send a message first: there is no conversation to rename yet.")
                return gr.skip(), new_title
            try:
                store.rename_session(session_id, new_title)
            except StoreError as exc:
                gr.Warning(str(exc))
                return gr.skip(), new_title
            return gr.update(choices=session_choices(store), value=session_id), ""

        def on_delete(session_id: str | None) -> tuple[Any, ...]:
            if session_id:
                store.delete_session(session_id)
            sessions = store.list_sessions()
            current = sessions[0].id if sessions else None
            return (
                current,
                gr.update(choices=session_choices(store), value=current),
                _history(store, current),
                gr.update(visible=False),
            )

        async def on_send(
            message: Mapping[str, Any] | None, session_id: str | None, style_note: str | None
        ) -> AsyncIterator[dict[Any, Any]]:
            text = str((message or {}).get("text") or "").strip()
            files = [str(f) for f in (message or {}).get("files") or []]
            if not text and not files:
                yield {box: gr.update(value=None)}
                return
            # A copy: the factory's Context is shared, the style note is this turn's only.
            ctx = dataclasses.replace(make_context(), style_note=style_note)
            # Refused before the composer is cleared: the message stays there to be fixed.
            refusal = too_long(text, ctx.settings.max_message_chars)
            if refusal:
                refused = answer_bubble(refusal, error=True)
                yield {chatbot: [*_history(store, session_id), refused], box: message}
                return
            try:
                session_id = ensure_session(store, session_id, text)
            except Exception as exc:
                yield {chatbot: [*_history(store, session_id), failure_bubble(exc)], box: message}
                return
            view = TurnView(_history(store, session_id))
            yield {
                chatbot: [*view.messages, user_bubble(text)],
                box: gr.update(value=None, interactive=False),
                session: session_id,
                style_once: None,
                picker: gr.update(choices=session_choices(store), value=session_id),
            }
            async for update in _turn(ctx, session_id, text, files, view):
                yield {chatbot: update}
            unsaved = view.user_message_id is None  # it never reached the store: give it back
            yield {
                chatbot: view.messages,
                box: gr.update(value=message if unsaved else None, interactive=True),
                line: model_line(ctx.settings, view.state.get("trace")),
                trace: trace_markdown(view.state.get("trace") or []),
            }

        demo.load(on_load, None, [session, picker, chatbot, line, banner], api_name="load")
        picker.input(on_switch, picker, [session, chatbot], api_name="switch_session")
        new.click(on_new, None, [session, picker, chatbot], api_name="new_session")
        # The chat's own trash button starts a fresh conversation; the old one stays stored.
        chatbot.clear(on_new, None, [session, picker, chatbot], api_visibility="private")
        rename.click(on_rename, [session, title], [picker, title], api_name="rename_session")
        delete.click(lambda: gr.update(visible=True), None, confirm_row, api_visibility="private")
        cancel.click(lambda: gr.update(visible=False), None, confirm_row, api_visibility="private")
        confirm.click(
            on_delete, session, [session, picker, chatbot, confirm_row], api_name="delete_session"
        )
        box.submit(
            on_send,
            [box, session, style_once],
            [chatbot, box, session, style_once, picker, line, trace],
            api_name="send",
        )
    return demo


async def _turn(
    ctx: Context, session_id: str, text: str, files: list[str], view: TurnView
) -> AsyncIterator[list[Any]]:
    """Attach the image, run the turn, and yield the chat after each visible event."""
    try:
        image_path = await attach(ctx, session_id, text, files)
    except AttachmentError as exc:
        gr.Warning(str(exc))
        image_path = None
    try:
        async for event in stream_turn(ctx, session_id, text, image_path=image_path):
            view.apply(event.kind, event.data)
            if event.kind != "model_done":
                yield view.messages
    except Exception as exc:
        view.messages.append(failure_bubble(exc))
        yield view.messages


def launch_app(
    make_context: ContextFactory,
    *,
    host: str = "127.0.0.1",
    port: int | None = None,
    password: str | None = None,
    allowed_hosts: tuple[str, ...] = (),
    prevent_thread_lock: bool = True,
) -> tuple[gr.Blocks, str]:
    """Build and start the app; returns the running Blocks and its local URL.

    It answers only to loopback names, ``host`` and ``allowed_hosts`` (anything else gets
    400). Raises ValueError for an empty password or a non-loopback host without one.
    """
    if password is not None and not password:
        raise ValueError("an empty password would turn the login off")
    problem = exposure_problem(host, password)
    if problem:
        raise ValueError(problem)
    media = make_context().store.media_dir
    demo = build_app(make_context)
    demo.queue(default_concurrency_limit=CONCURRENCY)
    _, url, _ = demo.launch(
        server_name=host,
        server_port=port,
        auth=(USER, password) if password else None,
        prevent_thread_lock=prevent_thread_lock,
        allowed_paths=[str(media)],
        max_file_size=MAX_UPLOAD_BYTES,
        app_kwargs={"middleware": middleware(trusted_hosts(host, allowed_hosts))},
        num_workers=0,  # static-file workers (GRADIO_NUM_WORKERS) would bypass the middleware
        quiet=True,
        show_error=True,
        ssr_mode=False,
        css=CSS,
    )
    return demo, str(url)


def serve(
    *,
    host: str = "127.0.0.1",
    port: int = 7860,
    flags: Mapping[str, Any] | None = None,
) -> int:
    """Serve the app until interrupted (``companion`` with no sub-command).

    The password and the extra Host names come from the settings (COMPANION_PASSWORD,
    COMPANION_ALLOWED_HOSTS, or a ``password`` flag).
    """
    try:
        make_context = context_factory(flags)
        settings = make_context().settings
    except ConfigError as exc:
        print(f"companion: {exc}", file=sys.stderr)
        return 2
    problem = exposure_problem(host, settings.password)
    if problem:
        print(f"companion: {problem}", file=sys.stderr)
        return 2
    try:
        demo, url = launch_app(
            make_context,
            host=host,
            port=port,
            password=settings.password,
            allowed_hosts=settings.allowed_hosts,
        )
    except OSError as exc:
        print(f"companion: cannot serve on {host}:{port}: {exc}", file=sys.stderr)
        return 1
    login = f" (user '{USER}' and your password)" if settings.password else ""
    print(f"Companion is running at {url}{login} — press Ctrl+C to stop.", flush=True)
    names = ", ".join(trusted_hosts(host, settings.allowed_hosts))
    print(f"It answers to the host names {names} (more: COMPANION_ALLOWED_HOSTS).", flush=True)
    # SIGTERM stops like Ctrl+C, so exit handlers run (they stop the local model server).
    signal.signal(signal.SIGTERM, _interrupt)
    demo.block_thread()
    return 0


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt
