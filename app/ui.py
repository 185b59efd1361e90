"""The Gradio app: Chat, Settings, Memories and Graph tabs, and the server around them.

``build_app(people)`` lays the app out around ``graph.setup.People``, one builder per tab
(``app.chat_tab``, ``app.settings_view``, ``app.memories_view``, ``app.graph_tab``); each tab's
handlers are methods of one class (``ChatHandlers``, ``SettingsHandlers``,
``MemoriesHandlers``) that reach the logged-in person's store through the
``ContextFactory`` ``people`` gives for ``request.username``. ``launch_app`` starts it
without blocking, behind ``app.security``'s middleware (raising ValueError for a host
beyond loopback without a login); ``serve`` is what ``companion`` runs. How it is built:
docs/app.md; what the server refuses: docs/security.md.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

# Gradio and its client phone home unless told not to; nothing leaves this machine.
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")

import gradio as gr
from gradio.route_utils import CustomCORSMiddleware
from gradio.utils import get_upload_folder
from starlette.middleware import Middleware

from app import chat_list, chat_tab, keyboard, memories_view, settings_view
from app.graph_tab import build as graph_tab
from app.graph_view import NO_TRACE
from app.logins import Logins, single_password
from app.queue_streams import OpenQueueStreams
from app.security import exposure_problem, middleware, trusted_hosts
from graph.setup import ContextFactory, People, collect_less, startup_settings

USER = "companion"
PASSWORD_LOGIN = f"Sign in with the user name **{USER}** and this Companion's password."
ACCOUNTS_LOGIN = "Sign in with your name and password (`companion user add` makes an account)."
CONCURRENCY = 16
MAX_UPLOAD_BYTES = 20 * 1024 * 1024  # refused while it streams in, never read whole
UPLOAD_CACHE = (3600, 86400)  # Gradio's delete_cache: (every, older than) in seconds
# Gradio's own CSS hooks (elem_id / elem_classes), then the chat list's (app.chat_list).
CSS = """
#model-line { opacity: 0.7; font-size: 0.9em; }
#local-banner { color: #b45309; }
/* The banner's buttons keep their own height: on a phone the banner wraps to eight lines. */
#banner-use, #banner-back, #banner-settings { align-self: center; }
#chatbot pre, #chatbot pre code { white-space: pre-wrap; overflow-wrap: anywhere; }
#chatbot .message-content { overflow-wrap: anywhere; }
#chatbot button[aria-label="Clear"] { display: none; }
#composer-row { align-items: stretch; }
#composer-notice { color: #92400e; }
#chat-input textarea::placeholder { color: #5f6368; opacity: 1; }
#chat-input .attachment-name {
  display: block; max-width: 12em; font-size: 0.8em; overflow: hidden; text-overflow: ellipsis;
  white-space: nowrap;
}
#confirm-edit { align-items: center; }
/* The style note's fold (chat_tab.NOTE_FOLD): its fields stay mounted, hidden until opened. */
#style-note-panel:not(.unfolded) #style-note-body { display: none; }
#style-note-toggle {
  align-self: flex-start; width: auto; min-height: 32px; padding: 4px 2px;
  background: none; border: none; box-shadow: none; color: var(--body-text-color);
}
#style-note-toggle::after { content: "▾"; margin-left: 0.4em; }
#style-note-panel.unfolded #style-note-toggle::after { content: "▴"; }
#chatbot .message-row:has(.edit-textarea), #chatbot .message-row:has(.edit-textarea) .flex-wrap,
#chatbot .message-row:has(.edit-textarea) .message {
  width: 100%; max-width: 100%; box-sizing: border-box; margin-left: 0; margin-right: 0;
}
#chatbot .edit-textarea {
  width: 100% !important; min-height: 5em !important; box-sizing: border-box;
}
#chatbot .user.message > .message:has(> .edit-textarea):has(~ .message > .edit-textarea) {
  display: none;
}
@media (max-width: 768px) {
  #chatbot .icon-button, .sidebar .toggle-button { min-width: 44px; min-height: 44px; }
}
/* Text at 4.5:1 or more (WCAG AA; test_browser_a11y): the theme's are lighter. */
:root {
  --color-accent: #c2410c; --button-primary-background-fill: #c2410c;
  --button-primary-background-fill-hover: #9a3412; --button-cancel-background-fill: #b91c1c;
  --button-cancel-background-fill-hover: #991b1b; --link-text-color: #1d4ed8;
  --link-text-color-hover: #1e40af; --link-text-color-visited: #6d28d9;
  --link-text-color-active: #1d4ed8; --body-text-color-subdued: #5f6368;
}
#data-status { overflow: visible !important; }
#turn-trace table { display: table; width: 100%; table-layout: auto; }
#turn-trace td, #turn-trace th { overflow-wrap: break-word; word-break: normal; }
#turn-trace td:nth-child(3) { white-space: nowrap; }
#turn-trace td:nth-child(4) { overflow-wrap: anywhere; }
#turn-trace pre, #turn-trace code { white-space: pre-wrap; overflow-wrap: anywhere; }
#turn-trace summary { cursor: pointer; padding: 10px 0; }
"""


def build_app(people: People) -> gr.Blocks:
    """The app's Blocks (not launched): one builder per tab."""
    # Uploads are copied into the person's media folder when sent; Gradio's own copies
    # are removed after a day (checked hourly), so unsent uploads cannot pile up.
    with gr.Blocks(title="Companion", delete_cache=UPLOAD_CACHE) as demo:
        # Shown in the Graph tab (the chosen turn), written by the Chat tab when a turn
        # answers.
        trace = gr.Markdown(NO_TRACE, elem_id="turn-trace", render=False)
        side = chat_tab.sidebar()
        with gr.Tabs(elem_id="tabs") as tabs:
            with gr.Tab("Chat", id="chat", elem_id="tab-chat"):
                chat = chat_tab.build(people, trace, demo.load, side, tabs)
            with gr.Tab("Settings", id="settings", elem_id="tab-settings") as settings_tab:
                settings_view.build(people, demo.load, settings_tab.select)
            with gr.Tab("Memories", id="memories", elem_id="tab-memories") as memories_tab:
                shown = [demo.load, memories_tab.select]
                memories_view.build(people, shown, chat, MAX_UPLOAD_BYTES)
            with gr.Tab("Graph", id="graph", elem_id="tab-graph") as graph:
                graph_tab(people, chat.session, trace, [graph.select, chat.session.change])
    return demo


def launch_app(
    make_context: ContextFactory | People,
    *,
    host: str = "127.0.0.1",
    port: int | None = None,
    password: str | None = None,
    allowed_hosts: tuple[str, ...] = (),
    prevent_thread_lock: bool = True,
) -> tuple[gr.Blocks, str]:
    """Build and start the app; returns the running Blocks and its local URL.

    ``make_context`` is the people using it, or one person's factory. It answers only to
    loopback names, ``host`` and ``allowed_hosts`` (anything else gets 400). With accounts,
    the login checks them and ``password`` is not used. Raises ValueError for an empty
    password or a non-loopback host without a login.
    """
    if password is not None and not password:
        raise ValueError("an empty password would turn the login off")
    people = make_context if isinstance(make_context, People) else People.single(make_context)
    problem = exposure_problem(host, "accounts" if people.accounts_on else password)
    if problem:
        raise ValueError(problem)
    check: Callable[[str, str], bool] | None = None
    if people.accounts_on:
        check = people.check
    elif password:
        check = single_password(USER, password)
    logins = None if check is None else Logins.over(people.accounts, check, people.scope)
    stack = middleware(
        trusted_hosts(host, allowed_hosts),
        allowed_hosts=allowed_hosts,
        logins=logins,
        media_owners=people.media_owners(),
        upload_dir=Path(get_upload_folder()),
    )
    media = [str(folder) for folder in people.media_dirs()]
    gr.set_static_paths(media)  # shown where they are (under FileOwners), never copied
    demo = build_app(people)
    demo.queue(default_concurrency_limit=CONCURRENCY)
    stack.append(Middleware(OpenQueueStreams, blocks=demo))  # innermost: after the login
    server_app, url, _ = demo.launch(
        server_name=host,
        server_port=port,
        auth=check,  # Gradio then asks for a login; LoginGate answers /login itself
        auth_message=ACCOUNTS_LOGIN if people.accounts_on else PASSWORD_LOGIN,
        prevent_thread_lock=prevent_thread_lock,
        # The media folders only, never the home (it holds the databases).
        allowed_paths=media,
        max_file_size=MAX_UPLOAD_BYTES,
        app_kwargs={"middleware": stack},
        num_workers=0,  # static-file workers (GRADIO_NUM_WORKERS) would bypass the middleware
        quiet=True,
        show_error=True,
        ssr_mode=False,
        css=CSS + chat_list.CSS,
        js=keyboard.SCRIPT,
        head=settings_view.LOCATION_LINK + keyboard.NARROW_SIDEBAR,
        footer_links=[],
    )
    if logins is not None:  # several processes behind a load balancer share their logins
        logins.install(server_app)
    behind_our_middleware(server_app)
    return demo, str(url)


def behind_our_middleware(app: Any) -> None:
    """Move Gradio's CORS middleware behind ours. Gradio puts it in front of the app's own
    middleware, and it answers another site's preflight itself, allowing any Origin with
    credentials on every host name but localhost; behind ours, such requests are refused
    before it sees them. Starlette built the stack when the server started: build it again
    (the middleware keep their state in the objects ``middleware`` gave them)."""
    rest = [m for m in app.user_middleware if m.cls is not CustomCORSMiddleware]
    cors = [m for m in app.user_middleware if m.cls is CustomCORSMiddleware]
    app.user_middleware = rest + cors
    app.middleware_stack = app.build_middleware_stack()


def serve(
    *,
    host: str = "127.0.0.1",
    port: int = 7860,
    flags: Mapping[str, Any] | None = None,
) -> int:
    """Serve the app until interrupted (``companion`` with no sub-command).

    The password and the extra Host names come from the settings (COMPANION_PASSWORD,
    COMPANION_ALLOWED_HOSTS, or a ``password`` flag). A bad setting (ConfigError) or a
    database that is down or not made (StoreError) is raised for the CLI to say.
    """
    # SIGTERM stops like Ctrl+C, so exit handlers run (they stop the local model server),
    # from the start: the warm start below may have started that server already.
    signal.signal(signal.SIGTERM, _interrupt)
    make_context = ContextFactory(flags)
    settings = asyncio.run(startup_settings(make_context))
    problem = exposure_problem(host, settings.password)
    if problem:
        print(f"companion: {problem}", file=sys.stderr)
        return 2
    # The bundled model starts loading now, beside the page (the first message waits
    # less); not before a refusal, whose exit would leave the starting server behind.
    asyncio.run(startup_settings(make_context, warm=True))
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
    collect_less()  # start-up's objects out of the collector's reach; fewer passes
    demo.block_thread()
    return 0


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt
