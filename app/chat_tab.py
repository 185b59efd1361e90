"""The Chat tab: the chats sidebar, the chat, and the composer that starts turns.

``build`` lays the tab out inside the current Blocks and wires its handlers.

- **Turns belong to the server** (``graph.turns``): sending starts a turn and follows it;
  the chat is yielded after each visible event, folded into a ``chat_view.TurnView``. A
  reload, a switch back or a second tab follows the turn still running in its chat, from
  its first event. The composer never locks: a message sent while a turn runs waits for
  it. **Stop** cancels the running turn (its text so far is kept, marked stopped).
- **Retry / regenerate** (the chat's ↻ under the last answer) answers the last message
  again; **edit** (the pencil on a user message) asks first, then deletes that message
  and everything after it and sends the edited text. Deleted means deleted: the messages
  and the episode summaries that covered them go (``AsyncStore.delete_messages_from``),
  so memory_search never finds the replaced words. Memories saved by the deleted turns
  stay, in the Memories tab.
- **The sidebar** lists chats by last activity (``session_rows``), with rename and delete
  (confirmed) in each row. "New chat" stores nothing until the first message, so it never
  makes empty duplicates.
- When a turn has answered, the model line under the chat and the Graph tab's trace
  (``trace``, a component the Graph tab renders) show it.
- **Questions** (the lethal trifecta, proposed memory changes): a turn that waits for the
  person's yes shows the question with Allow and Deny buttons under it; a click
  (``on_option``) gives the answer to the waiting turn (``Turns.decide``). A question
  this process does not hold (answered already, timed out) is said in a warning.

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

import asyncio
import dataclasses
import logging
import sqlite3
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any

import gradio as gr

from app.attachments import AttachmentError, pasted_image, save_upload
from app.chat_view import (
    TurnView,
    answer_bubble,
    chosen_option,
    history_entries,
    history_messages,
    local_time,
    notice_bubble,
    user_bubble,
)
from app.graph_view import plain, trace_markdown
from app.turns import LiveTurn, Turns, owner_alive, recover_interrupted
from config.settings import Settings
from graph.context import Context
from graph.events import ModelDone, UserStored
from graph.jobs import catch_up_once, schedule_segments
from graph.runner import too_long
from graph.setup import ContextFactory, People
from graph.state import TraceEvent
from memory import AsyncStore, RunningTurn, Session, StoreError
from prompts.templates import persona_greeting
from providers import LOCAL_BANNER

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
# The chat fills the window's height, less the tab bar, the composer and the lines under it.
CHAT_HEIGHT = "calc(100dvh - 270px)"
STILL_ANSWERING = "Companion is still answering: stop it first, or wait."
NOT_WAITING = "That question was already answered, or it is no longer waiting."
LIST_HEADERS = ("Chats, most recent first", "✎", "🗑")
POLL_SECONDS = 0.3  # how often a turn run by another process is read back from the store
NARROW = 768  # CSS pixels: below this the sidebar covers the chat, so it starts closed
WINDOW_WIDTH = "() => window.innerWidth"


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


def failure_bubble(exc: Exception, *, logged: bool = False) -> Any:
    """The chat's account of an exception that stopped a turn (call it where it is caught,
    or pass ``logged`` when that place logged it already)."""
    problem = write_failure(exc)
    if problem:
        if not logged:
            log.exception("the database refused a write")
        return answer_bubble(problem, error=True)
    # A bug below must not leave the chat frozen: show it instead.
    if not logged:
        log.exception("turn failed")
    return answer_bubble(f"Something went wrong: {type(exc).__name__}: {exc}", error=True)


async def pasted(ctx: Context, session_id: str | None, text: str) -> str | None:
    """The image a pasted URL in ``text`` points at, saved (None if there is none; a URL
    that is not an image is said in a warning, and the text goes on without it)."""
    try:
        return await pasted_image(ctx, session_id or "", text)
    except AttachmentError as exc:
        gr.Warning(str(exc))
        return None


# After an answer the composer takes the focus, unless the person is typing elsewhere
# (the style note, a rename): focus is never taken from another field.
FOCUS_COMPOSER = """() => {
  const typing = document.activeElement;
  const elsewhere = typing && typing.matches('input, textarea') && !typing.closest('#chat-input');
  if (!elsewhere) document.querySelector('#chat-input textarea')?.focus();
}"""
EDIT_CONFIRM = (
    "Send the edited message? The {count} message{s} after it will be deleted, and what "
    "Companion remembers of them with them."
)


def session_rows(sessions: list[Session], tz: str) -> list[dict[str, str]]:
    """The sidebar's rows: every chat, most recently active first, with the time of its
    last message on the person's clock."""
    return [
        {"id": s.id, "title": s.title, "when": local_time(s.active_at or s.created_at, tz)}
        for s in sessions
    ]


def edited_message(entries: list[tuple[Any, int | None]], index: Any, previous: Any) -> int | None:
    """The stored id of the user message an edit in the chat changed, or None when the
    edited bubble is not a stored user message (or no longer the one shown there)."""
    position = index[0] if isinstance(index, list | tuple) else index
    if not isinstance(position, int) or not 0 <= position < len(entries):
        return None
    bubble, message_id = entries[position]
    if message_id is None:
        return None
    shown = bubble.content if isinstance(bubble.content, str) else ""
    was = previous if isinstance(previous, str) else ""
    return message_id if not was or " ".join(was.split()) in " ".join(shown.split()) else None


class ChatTab:
    """The tab's components and handlers (``build`` lays it out and wires it)."""

    def __init__(self, make_context: ContextFactory, trace: gr.Markdown) -> None:
        self.make_context = make_context
        self.store = make_context.store
        self.turns = Turns()
        self.trace = trace
        self.recovered = False

    async def recover_once(self) -> None:
        """Mark the turns a dead process left running as interrupted (first load only)."""
        if not self.recovered:
            self.recovered = True
            await recover_interrupted(self.store)

    async def settings(self) -> Settings:
        return (await self.make_context()).settings

    async def rows(self) -> list[dict[str, str]]:
        return session_rows(await self.store.list_sessions(), (await self.settings()).timezone)

    async def leave(self, left: str | None, going_to: str | None) -> None:
        """The person left a session: what they said there becomes an episode now."""
        if left and left != going_to and await self.store.get_session(left):
            schedule_segments(await self.make_context(), left, force=True)

    async def running_elsewhere(self, session_id: str) -> RunningTurn | None:
        """The session's turn that another app process on this database runs, if any."""
        for turn in await self.store.running_turns():
            mine = turn.owner == self.turns.owner
            if turn.session_id == session_id and not mine and owner_alive(turn.owner) is not False:
                return turn
        return None

    async def elsewhere(self, session_id: str) -> AsyncIterator[list[Any]]:
        """Follow a turn another process runs, from the store: what it has stored so far
        and its answer's text so far (polled every ``POLL_SECONDS``), until it ends; then
        the stored chat."""
        last: list[Any] | None = None
        while True:
            turn = await self.running_elsewhere(session_id)
            shown = await _history(self.store, session_id)
            if turn is not None and turn.partial:
                shown.append(answer_bubble(turn.partial))
            if shown != last:
                yield shown
                last = shown
            if turn is None:
                return
            await asyncio.sleep(POLL_SECONDS)

    async def following(
        self, session_id: str, told: list[str], first: LiveTurn | None = None
    ) -> AsyncIterator[tuple[list[Any], list[TraceEvent] | None]]:
        """The chat while the session's turns run (``first``, the turn this page started,
        even if it has ended already; else the running one from its first event), then the
        queued ones, as (messages, trace once answered); a session told of the missing
        vision model is added to ``told``. Ends with the stored chat."""
        trace: list[TraceEvent] | None = None
        notices: list[Any] = []
        live = self.turns.live(session_id)
        if first is not None and first not in live:
            live = [first, *live]
        while live:
            turn = live[0]
            waiting = [user_bubble(t.text, t.image_path) for t in live[1:]]
            view: TurnView | None = None
            async for event in turn.follow():
                if isinstance(event, UserStored):
                    before = await self.store.messages(session_id)
                    view = TurnView(history_messages(m for m in before if m.id < event.message.id))
                if view is None:
                    continue
                view.apply(event)
                if not isinstance(event, ModelDone):
                    yield view.chat(*notices, *waiting), trace
            if view is not None and view.answer is not None:
                trace = view.trace
                notice = vision_notice(view.trace, session_id, told)
                if notice:
                    notices.append(notice_bubble(notice))
                    told.append(session_id)
            if turn.failure is not None:
                notices.append(failure_bubble(turn.failure, logged=True))
            live = self.turns.live(session_id)
        shown = [*await _history(self.store, session_id), *notices]
        yield shown, trace


@dataclass(frozen=True)
class Sidebar:
    """The chats sidebar, laid out at the top of the page (outside the tabs, so it stays
    put whichever tab is open); ``build`` wires it."""

    panel: gr.Sidebar
    new: gr.Button
    rename_row: gr.Row  # shown by a row's ✎: the new title, Save, Cancel
    rename_box: gr.Textbox
    rename_save: gr.Button
    rename_cancel: gr.Button
    delete_row: gr.Row  # shown by a row's 🗑: "Delete “…”?", Delete, Keep
    delete_words: gr.Markdown
    delete_yes: gr.Button
    delete_no: gr.Button
    chats: gr.Dataframe  # one row per chat: title and last activity, ✎, 🗑


def sidebar() -> Sidebar:
    """Lay out the (empty) chats sidebar inside the current Blocks.

    The list is a read-only Dataframe (a click names its row and column), not rows made
    by ``gr.render``: a re-render replaces the rows' event handlers, so a click that lands
    while one is in flight names a handler that no longer exists, and it resets other
    components (the Stop button) to their first state.
    """
    with gr.Sidebar(label="Chats", elem_id="chats", width=300) as panel:
        new = gr.Button("New chat", elem_id="new-session", variant="primary")
        with gr.Row(visible=False, equal_height=True, elem_id="rename-chat") as rename_row:
            rename_box = gr.Textbox(
                show_label=False,
                container=False,
                max_lines=1,
                interactive=True,
                scale=3,
                elem_id="rename-box",
            )
            rename_save = gr.Button("Save", size="sm", scale=0, min_width=56, elem_id="rename-save")
            rename_cancel = gr.Button(
                "Cancel", size="sm", scale=0, min_width=56, elem_id="rename-cancel"
            )
        with gr.Row(visible=False, equal_height=True, elem_id="delete-chat") as delete_row:
            delete_words = gr.Markdown(elem_id="delete-words")
            delete_yes = gr.Button(
                "Delete", variant="stop", size="sm", scale=0, min_width=64, elem_id="delete-yes"
            )
            delete_no = gr.Button("Keep", size="sm", scale=0, min_width=56, elem_id="delete-no")
        chats = gr.Dataframe(
            headers=list(LIST_HEADERS),
            datatype=["str", "str", "str"],
            interactive=False,
            wrap=True,
            show_label=False,
            column_widths=["78%", "11%", "11%"],
            elem_id="chat-list",
        )
    return Sidebar(
        panel,
        new,
        rename_row,
        rename_box,
        rename_save,
        rename_cancel,
        delete_row,
        delete_words,
        delete_yes,
        delete_no,
        chats,
    )


def list_rows(rows: list[dict[str, str]], current: str | None) -> list[list[str]]:
    """The sidebar's table: "● " marks the chat in view; then its title and last activity,
    a rename and a delete cell. Titles are shown as text (the cells are not Markdown)."""
    return [
        [f"{'● ' if row['id'] == current else ''}{row['title']} · {row['when']}", "✎", "🗑"]
        for row in rows
    ]


class Chats:
    """A ``ChatTab`` per person (their store, their turns), made on first use."""

    def __init__(self, people: People, trace: gr.Markdown) -> None:
        self.people, self.trace = people, trace
        self._tabs: dict[int, ChatTab] = {}

    def of(self, request: gr.Request) -> ChatTab:
        """The chat state of the person logged in on this request."""
        factory = self.people.factory(request.username)
        tab = self._tabs.get(id(factory))
        if tab is None:
            tab = self._tabs[id(factory)] = ChatTab(factory, self.trace)
        return tab


def build(people: People, trace: gr.Markdown, load: Any, side: Sidebar, tabs: gr.Tabs) -> None:
    """Lay out the tab inside the current Blocks and fill the chats sidebar ``side``;
    ``load`` is the page's load event, ``trace`` is where the last turn's path goes, and
    ``tabs`` are the page's tabs (choosing a chat in the sidebar opens the Chat tab). Every
    handler works on the logged-in person's ``ChatTab`` (``Chats.of``). The model line and
    the local banner are filled in when the page loads."""
    chats = Chats(people, trace)
    session = gr.State(None)
    told = gr.State([])  # sessions already told that no vision model is set
    listing = gr.State([])  # the sidebar's rows
    renaming = gr.State(None)  # the chat whose row shows the rename box
    deleting = gr.State(None)  # the chat whose row asks to confirm its deletion
    edit = gr.State(None)  # {"id", "text"} of an edit waiting for confirmation
    # The API's handles on the sidebar's row actions (the rows call the same handlers).
    target = gr.Textbox(visible=False, elem_id="target-session")
    new_title = gr.Textbox(visible=False, elem_id="target-title")
    api_delete = gr.Button(visible=False, elem_id="target-delete")
    # The window's width in CSS pixels, set by the page itself (a State never leaves the
    # server, so it could not carry it): 0 until known.
    width = gr.Number(0, visible=False, elem_id="window-width")
    panel, new, chat_list = side.panel, side.new, side.chats
    banner = gr.Markdown(f"⚠️ {LOCAL_BANNER}", visible=False, elem_id="local-banner")
    chatbot = gr.Chatbot(
        elem_id="chatbot",
        height=CHAT_HEIGHT,
        show_label=False,
        buttons=["copy", "copy_all"],
        editable="user",
        feedback_options=None,
    )
    with gr.Row(visible=False, elem_id="confirm-edit") as confirm_edit:
        edit_words = gr.Markdown()
        resend = gr.Button("Send edited message", variant="primary", elem_id="resend-edit")
        cancel_edit = gr.Button("Cancel", elem_id="cancel-edit")
    with gr.Row(equal_height=True, elem_id="composer-row"):
        box = gr.MultimodalTextbox(
            placeholder="Message (attach an image, or paste an image URL)",
            # No file_types: Gradio would refuse other files with its own technical error;
            # on_send checks the bytes and says in plain words why a file can't go.
            file_count="single",
            sources=["upload"],
            show_label=False,
            autofocus=True,
            scale=8,
            elem_id="chat-input",
        )
        stop = gr.Button("⏹ Stop", visible="hidden", scale=0, min_width=90, elem_id="stop-turn")
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

    async def on_load(request: gr.Request) -> tuple[Any, ...]:
        tab = chats.of(request)
        store, make_context = tab.store, tab.make_context
        ctx = await make_context()
        catch_up_once(ctx)
        await tab.recover_once()
        sessions = await store.list_sessions()
        current = sessions[0].id if sessions else None
        return (
            current,
            await tab.rows(),
            await _history(store, current),
            model_line(ctx.settings),
            gr.update(visible=ctx.settings.is_local),
        )

    async def on_switch(going_to: str, left: str | None, request: gr.Request) -> tuple[Any, ...]:
        tab = chats.of(request)
        store = tab.store
        going = await store.get_session(going_to) if going_to else None
        if going is None:
            gr.Warning("That conversation is gone (deleted in another tab?).")
            return left, await tab.rows(), await _history(store, left), None, None
        await tab.leave(left, going.id)
        return going.id, gr.skip(), await _history(store, going.id), None, None

    async def on_new(left: str | None, request: gr.Request) -> tuple[Any, ...]:
        tab = chats.of(request)
        # Nothing is stored until the first message: "New chat" twice is one empty chat.
        await tab.leave(left, None)
        return None, [], None, None

    async def on_rename(chosen: str, title: str, request: gr.Request) -> tuple[Any, Any]:
        tab = chats.of(request)
        store = tab.store
        try:
            await store.rename_session(chosen, title)
        except StoreError as exc:
            gr.Warning(str(exc))
            return gr.skip(), gr.skip()
        return await tab.rows(), None

    async def on_delete(chosen: str, current: str | None, request: gr.Request) -> tuple[Any, ...]:
        tab = chats.of(request)
        store, turns = tab.store, tab.turns
        if chosen:
            await turns.stop(chosen)
            await store.delete_session(chosen)
        rows = await tab.rows()
        if chosen != current:
            return gr.skip(), rows, gr.skip(), None
        after = rows[0]["id"] if rows else None
        return after, rows, await _history(store, after), None

    async def on_remove_note(session_id: str | None, request: gr.Request) -> tuple[Any, Any]:
        tab = chats.of(request)
        store = tab.store
        if session_id and await store.get_session(session_id):
            await store.set_style_note(session_id, None)
        return await active_note(store, session_id)

    async def follow(
        session_id: str | None, noticed: list[str], request: gr.Request
    ) -> AsyncIterator[dict[Any, Any]]:
        """Stream the session's running and queued turns into the chat, if any (after a
        load, a switch: a reload or a second tab re-attaches here)."""
        async for update in following(chats.of(request), session_id, noticed):
            yield update

    async def following(
        tab: ChatTab, session_id: str | None, noticed: list[str], first: LiveTurn | None = None
    ) -> AsyncIterator[dict[Any, Any]]:
        """``follow`` for ``tab``, from ``first`` (the turn this page just started). Always
        yields: a generator that yields nothing would blank every output."""
        turns = tab.turns
        here = bool(session_id and (first is not None or turns.live(session_id)))
        if session_id and not here and await tab.running_elsewhere(session_id):
            # Another app process runs it (several processes on one database).
            yield {stop: gr.update(visible=True)}
            async for polled in tab.elsewhere(session_id):
                yield {chatbot: polled, stop: gr.update(visible=True)}
        if not session_id or (first is None and not turns.live(session_id)):
            yield {stop: gr.update(visible="hidden")}
            return
        yield {stop: gr.update(visible=True)}
        answered: list[TraceEvent] | None = None
        shown: list[Any] = []
        told_now = list(noticed)  # following() adds the sessions it tells
        async for shown, turn_trace in tab.following(session_id, told_now, first):
            answered = turn_trace or answered
            # Stop is shown again each time: a re-render of the sidebar's rows (another
            # event) puts it back in its initial, hidden state.
            yield {chatbot: shown, stop: gr.update(visible=True)}
        settings = await tab.settings()
        yield {
            chatbot: shown,
            stop: gr.update(visible="hidden"),
            told: told_now,
            listing: await tab.rows(),
            line: model_line(settings, list(answered or [])),
            trace: trace_markdown(answered) if answered else gr.skip(),
        }

    async def on_send(
        message: Mapping[str, Any] | None,
        session_id: str | None,
        style_note: str,
        kept: bool,
        noticed: list[str],
        request: gr.Request,
    ) -> AsyncIterator[dict[Any, Any]]:
        tab = chats.of(request)
        store, turns, make_context = tab.store, tab.turns, tab.make_context
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
        image_path = upload or await pasted(ctx, session_id, text)
        try:
            session_id = await ensure_session(store, session_id, text)
            if kept and style_note:
                await store.set_style_note(session_id, style_note)
            stored = None
            if not turns.live(session_id):  # stored now: a failed write keeps the text here
                stored = await store.add_message(session_id, "user", text, image_path=image_path)
        except Exception as exc:
            failed = failure_bubble(exc)
            yield {chatbot: [*await _history(store, session_id), failed], box: message}
            return
        started = turns.start(ctx, session_id, text, image_path=image_path, stored=stored)
        shown_note, remove_shown = await active_note(store, session_id)
        yield {
            box: gr.update(value=None),
            session: session_id,
            note: "",
            keep: False,
            note_line: shown_note,
            remove_note: remove_shown,
            # Not the sidebar's rows yet: re-rendering them mid-turn resets the Stop button
            # to its initial (hidden) state in Gradio 6; they update when the turn ends.
        }
        async for update in following(tab, session_id, noticed, started):
            yield update

    async def on_option(session_id: str | None, choice: gr.SelectData, request: gr.Request) -> None:
        """Allow or Deny under a question: the answer goes to the turn waiting on it."""
        chosen = chosen_option(choice.value)
        if not session_id or chosen is None:
            return
        if not chats.of(request).turns.decide(session_id, *chosen):
            gr.Warning(NOT_WAITING)

    async def on_stop(session_id: str | None, request: gr.Request) -> None:
        tab = chats.of(request)
        turns = tab.turns
        if session_id:
            await turns.stop(session_id, tab.store)

    async def on_retry(
        session_id: str | None, noticed: list[str], request: gr.Request
    ) -> AsyncIterator[dict[Any, Any]]:
        """Answer the chat's last user message again (regenerate, or retry after an error
        or an interruption); what answered it before is deleted first."""
        tab = chats.of(request)
        store, turns, make_context = tab.store, tab.turns, tab.make_context
        messages = await store.messages(session_id) if session_id else []
        asked = next((m for m in reversed(messages) if m.role == "user"), None)
        if not session_id or asked is None or turns.live(session_id):
            if session_id and asked is not None:
                gr.Warning(STILL_ANSWERING)
            yield {stop: gr.skip()}
            return
        after = [m.id for m in messages if m.id > asked.id]
        if after:
            await store.delete_messages_from(session_id, after[0])
        started = turns.start(await make_context(), session_id, asked.content, stored=asked)
        async for update in following(tab, session_id, noticed, started):
            yield update

    async def on_edit(
        session_id: str | None, edited: gr.EditData, request: gr.Request
    ) -> tuple[Any, ...]:
        """An edited user message: ask before the messages after it are deleted."""
        tab = chats.of(request)
        store, turns = tab.store, tab.turns
        messages = await store.messages(session_id) if session_id else []
        entries = history_entries(messages)
        chosen = edited_message(entries, edited.index, edited.previous_value)
        text = edited.value.strip() if isinstance(edited.value, str) else ""
        if session_id and turns.live(session_id):
            gr.Warning(STILL_ANSWERING)
            chosen = None
        if chosen is None or not text:
            return [bubble for bubble, _ in entries], None, gr.update(visible=False), ""
        count = sum(m.id > chosen for m in messages)
        words = EDIT_CONFIRM.format(count=count, s="" if count == 1 else "s")
        return gr.skip(), {"id": chosen, "text": text}, gr.update(visible=True), words

    async def on_resend(
        session_id: str | None,
        pending: dict[str, Any] | None,
        noticed: list[str],
        request: gr.Request,
    ) -> AsyncIterator[dict[Any, Any]]:
        """Delete the edited message and what followed it, then send the edited text."""
        tab = chats.of(request)
        store, turns, make_context = tab.store, tab.turns, tab.make_context
        yield {confirm_edit: gr.update(visible=False), edit: None}
        if not session_id or not pending:
            return
        old = next((m for m in await store.messages(session_id) if m.id == pending["id"]), None)
        if old is None or turns.live(session_id):
            yield {chatbot: await _history(store, session_id)}
            return
        await store.delete_messages_from(session_id, old.id)
        stored = await store.add_message(
            session_id, "user", pending["text"], image_path=old.image_path
        )
        started = turns.start(await make_context(), session_id, stored.content, stored=stored)
        async for update in following(tab, session_id, noticed, started):
            yield update

    async def on_cancel_edit(session_id: str | None, request: gr.Request) -> tuple[Any, ...]:
        tab = chats.of(request)
        store = tab.store
        return await _history(store, session_id), None, gr.update(visible=False)

    async def show_note(session_id: str | None, request: gr.Request) -> tuple[Any, Any]:
        tab = chats.of(request)
        store = tab.store
        return await active_note(store, session_id)

    async def greet(request: gr.Request) -> Any:
        """The greeting and examples for the settings now in effect (shown while empty)."""
        tab = chats.of(request)
        return gr.update(**welcome(await tab.settings()))

    noted = [note_line, remove_note]
    followed = [chatbot, stop, told, listing, line, trace]
    opened = [session, listing, chatbot, renaming, deleting]
    deleted_outputs = [session, listing, chatbot, deleting]

    def fit_sidebar(shown: float | None) -> tuple[Any, Any]:
        """A chat chosen: the Chat tab shows it; on a phone the sidebar, which covers the
        chat, closes."""
        narrow = 0 < (shown or 0) < NARROW
        return gr.Sidebar(open=False) if narrow else gr.skip(), gr.Tabs(selected="chat")

    # The events that stream a turn into this page's chat. Showing another chat (new,
    # switch, delete) cancels them: the turn goes on on the server, but this page stops
    # writing it into a chat that now shows something else.
    followers: list[Any] = []

    def afterwards(event: Any) -> None:
        """Whenever the conversation in view changes, its kept note (if any) shows with
        it, the greeting while it is empty, and a turn running in it (another tab's, or
        this page's before a reload) is followed."""
        event.then(fit_sidebar, width, [panel, tabs], api_visibility="private")
        event.then(show_note, session, noted, api_visibility="private")
        event.then(greet, None, chatbot, api_visibility="private")
        followers.append(event.then(follow, [session, told], followed, api_visibility="private"))

    async def on_pick(
        rows: list[dict[str, str]],
        left: str | None,
        picked: gr.SelectData,
        request: gr.Request,
    ) -> dict[Any, Any]:
        """A click in the chats list: its title opens the chat, ✎ asks for a new title,
        🗑 asks before deleting."""
        hide = gr.update(visible=False)
        row, column = picked.index if isinstance(picked.index, list | tuple) else (-1, 0)
        if not 0 <= row < len(rows):
            return {side.rename_row: hide, side.delete_row: hide}
        chosen = rows[row]
        if column == 1:
            return {
                side.rename_row: gr.update(visible=True),
                side.rename_box: chosen["title"],
                renaming: chosen["id"],
                side.delete_row: hide,
            }
        if column == 2:
            return {
                side.delete_row: gr.update(visible=True),
                side.delete_words: f"Delete “{plain(chosen['title'])}”?",
                deleting: chosen["id"],
                side.rename_row: hide,
            }
        shown, rows_now, history, *_ = await on_switch(chosen["id"], left, request)
        return {
            session: shown,
            listing: rows_now,
            chatbot: history,
            side.rename_row: hide,
            side.delete_row: hide,
        }

    async def on_rename_row(chosen: str | None, title: str, request: gr.Request) -> tuple[Any, ...]:
        if not chosen:
            return gr.skip(), None, gr.update(visible=False)
        rows, renamed = await on_rename(chosen, title, request)
        if isinstance(rows, dict):
            return rows, chosen, gr.skip()  # refused (the warning says why): the box stays
        return rows, renamed, gr.update(visible=False)

    async def on_delete_row(
        chosen: str | None, current: str | None, request: gr.Request
    ) -> tuple[Any, ...]:
        return (*await on_delete(chosen or "", current, request), gr.update(visible=False))

    loaded = load(on_load, None, [session, listing, chatbot, line, banner], api_name="load")
    load(lambda shown: shown, width, width, js=WINDOW_WIDTH, api_visibility="private").then(
        fit_sidebar, width, [panel, tabs], api_visibility="private"
    )
    afterwards(loaded)
    sending = [box, session, note, keep, told]
    sent = [chatbot, box, session, listing, stop, line, trace, note, keep, told, *noted]
    # Sending while a turn runs queues the message: the composer is never blocked.
    sends = box.submit(
        on_send, sending, sent, api_name="send", trigger_mode="multiple", show_progress_on=chatbot
    )
    # A clicked example goes into the composer and is sent from there, like a typed message.
    examples = chatbot.example_select(example_message, None, box, api_visibility="private").then(
        on_send, sending, sent, api_visibility="private", show_progress_on=chatbot
    )
    retried = chatbot.retry(on_retry, [session, told], followed, api_name="retry")
    resent = resend.click(
        on_resend, [session, edit, told], [*followed, confirm_edit, edit], api_name="resend_edit"
    )
    followers += [sends, examples, retried, resent]
    for answered in (sends, examples, retried, resent):
        answered.then(None, js=FOCUS_COMPOSER)
    chatbot.edit(
        on_edit, session, [chatbot, edit, confirm_edit, edit_words], api_visibility="private"
    )
    cancel_edit.click(
        on_cancel_edit, session, [chatbot, edit, confirm_edit], api_visibility="private"
    )
    gr.on(
        [listing.change, session.change],
        list_rows,
        [listing, session],
        chat_list,
        api_visibility="private",
        trigger_mode="always_last",
    )
    hide_rename = [side.rename_row]
    for trigger in (side.rename_box.submit, side.rename_save.click):
        trigger(
            on_rename_row,
            [renaming, side.rename_box],
            [listing, renaming, *hide_rename],
            api_visibility="private",
        )
    side.rename_cancel.click(
        lambda: (None, gr.update(visible=False)),
        None,
        [renaming, side.rename_row],
        api_visibility="private",
    )
    side.delete_no.click(
        lambda: (None, gr.update(visible=False)),
        None,
        [deleting, side.delete_row],
        api_visibility="private",
    )
    stop.click(on_stop, session, None, api_name="stop")
    chatbot.option_select(on_option, session, None, api_visibility="private")
    remove_note.click(on_remove_note, session, noted, api_name="remove_style_note")
    new_title.submit(on_rename, [target, new_title], [listing, renaming], api_name="rename_session")
    switching = list(followers)  # as they are now: a chat shown next is followed afresh
    afterwards(
        target.submit(
            on_switch, [target, session], opened, api_name="switch_session", cancels=switching
        )
    )
    afterwards(
        new.click(
            on_new,
            session,
            [session, chatbot, renaming, deleting],
            api_name="new_session",
            cancels=switching,
        )
    )
    afterwards(
        chat_list.select(
            on_pick,
            [listing, session],
            [
                session,
                listing,
                chatbot,
                renaming,
                deleting,
                side.rename_row,
                side.rename_box,
                side.delete_row,
                side.delete_words,
            ],
            api_visibility="private",
            cancels=switching,
        )
    )
    afterwards(
        side.delete_yes.click(
            on_delete_row,
            [deleting, session],
            [*deleted_outputs, side.delete_row],
            api_visibility="private",
            cancels=switching,
        )
    )
    afterwards(
        api_delete.click(
            on_delete,
            [target, session],
            deleted_outputs,
            api_name="delete_session",
            cancels=switching,
        )
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
