"""The Chat tab's state and handlers: what each click, send and load does.

``ChatTab`` is one person's chat state (their store, their turns, their context
factory); ``Chats`` finds it for a request's login. ``ChatHandlers`` holds the handlers
``chat_tab.build`` wires: each is a method over the person's ``ChatTab`` and the tab's
components (``ChatComponents``, the keys of the updates it returns), so a test calls it
with a fake store and turn runtime, no browser. Turns belong to the server
(``app.turns``): send, retry and edit start one and follow it; stop cancels it; Allow or
Deny answers its question. A message that cannot be sent stays in the composer, and the
chat says why. What each handler does for the person: docs/app.md.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any, cast

import gradio as gr

from app import chat_list
from app.attachments import Attachment, AttachmentError, pasted_image, take_upload, too_long
from app.chat_view import (
    TurnView,
    answer_bubble,
    bubble_text,
    chosen_option,
    history_entries,
    history_messages,
    notice_bubble,
    persona_chip,
    user_bubble,
)
from app.graph_view import plain, trace_markdown
from app.live_tabs import (
    MARK_LIMIT,
    MARKS_KEPT,
    STALE,
    UNFOLLOWED,
    Pages,
    keep_newest,
    redraws,
    shown_mark,
)
from app.settings_view import Connections
from app.turns import LiveTurn, Turns, owner_alive, recover_interrupted
from config.settings import Settings, fixed_fields
from graph.context import Context
from graph.events import ModelDone, UserStored
from graph.jobs import catch_up_once, schedule_segments
from graph.setup import ContextFactory, People
from graph.state import TraceEvent
from memory import AsyncStore, RunningTurn, Session, StoreError, WriteRefused, utc_now
from prompts.templates import persona_greeting
from providers import FoundServer, local_server, local_servers

log = logging.getLogger("companion.app")

NEW_TITLE = "New chat"
TITLE_CHARS = 40
WRITE_FAILURE = "Companion can't write to its database (disk full or read-only): {error}"
# An empty chat's example prompts: what Companion can do (drawing only with an image backend).
EXAMPLES = (
    "What's the weather like today?",
    "Search the web: what's the tallest building in the world?",
    "Remember that my favourite tea is jasmine.",
)
DRAW_EXAMPLE = "Draw a cat napping on a sunny windowsill."
# The bundled model's: it chats, does sums and plays the persona; it calls no tool.
LOCAL_EXAMPLES = (
    "Hi! Tell me a little about yourself.",
    "What is 17 + 25?",
    "I had a long day. Cheer me up?",
)
# The bundled model's banner: what it can't do, in one sentence, and where to fix it.
LOCAL_LIMITS = (
    "⚠️ This is the small bundled model: it chats, does sums and plays the persona, but it "
    "can't search the web, check the weather, remember you or draw — connect a capable "
    "model in **Settings**."
)
FOUND_OFFER = "💡 {offer}"
FOUND_BUTTON = "Use {kind}'s {model}"
USING_FOUND = "Chatting with `{model}` on {kind} at {address}, on this machine."
NOT_ANSWERING = (
    "{kind} at {address} did not answer, or no longer has {model}: start it again (or "
    "get the model back), or press “Back to the bundled model” above the chat."
)
STARTING_MODEL = "Starting the local model…"
STILL_ANSWERING = "Companion is still answering: stop it first, or wait."
NOT_WAITING = "That question was already answered, or it is no longer waiting."
GONE = "That conversation is gone (deleted in another tab?)."
POLL_SECONDS = 0.3  # how often a turn run by another process is read back from the store
NARROW = 768  # CSS pixels: below this the sidebar covers the chat, so it starts closed
EDIT_CONFIRM = "Send the edited message?"
EDIT_REPLACES = " The {count} message{s} after it will be replaced."


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
        await store.rename_session(session.id, title_for(text), by_person=False)
    return session.id


def titled(text: str, attached: Attachment | None) -> str:
    """What a new chat's title is made from: the message, else the attached file's name."""
    return text or (attached.name if attached else "")


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
    if settings.is_local:
        prompts = list(LOCAL_EXAMPLES)
    else:
        prompts = [*EXAMPLES, DRAW_EXAMPLE] if settings.image_backend else list(EXAMPLES)
    greeting = persona_greeting(settings.persona, tools=not settings.is_local)
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
    if isinstance(exc, WriteRefused):  # either backend, translated at the store's edge
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


def session_rows(sessions: list[Session], tz: str) -> list[dict[str, Any]]:
    """The sidebar's rows now (``chat_list.session_rows``): pinned chats first, then by
    last activity, with how long ago that was on the person's clock."""
    return chat_list.session_rows(sessions, tz, utc_now())


def _listed(content: Any) -> list[Any]:
    return content if isinstance(content, list) else [content]


def edited_message(entries: list[tuple[Any, int | None]], index: Any, previous: Any) -> int | None:
    """The stored id of the user message an edit in the chat changed, or None when the
    edited bubble is not a stored user message (or no longer the one shown there)."""
    position = index[0] if isinstance(index, list | tuple) else index
    if not isinstance(position, int) or not 0 <= position < len(entries):
        return None
    bubble, message_id = entries[position]
    if message_id is None:
        return None
    shown = " ".join(part for part in _listed(bubble.content) if isinstance(part, str))
    was = previous if isinstance(previous, str) else ""
    return message_id if not was or " ".join(was.split()) in " ".join(shown.split()) else None


def example_message(example: gr.SelectData) -> dict[str, Any]:
    """The composer's value for a clicked example prompt."""
    return {"text": str(example.value.get("text") or ""), "files": []}


def starting_status(settings: Settings) -> list[Any]:
    """The "Starting the local model…" step shown under a message sent while the bundled
    model is still loading (or a warm start still reads its prompt); none otherwise."""
    if not settings.is_local or local_server().ready:
        return []
    step = {"title": STARTING_MODEL, "status": "pending"}
    return [gr.ChatMessage(role="assistant", content="", metadata=step)]  # type: ignore[arg-type]


def found_notice(settings: Settings) -> str | None:
    """What to say when a turn failed on a model server found on this machine (it
    stopped, or its model went), with the way back; None for any other connection."""
    kind = local_servers().kind_at(settings.base_url)
    if kind is None:
        return None
    address = (settings.base_url or "").removeprefix("http://").split("/")[0]
    return NOT_ANSWERING.format(kind=kind, address=address, model=settings.chat_model)


def banner(settings: Settings, found: FoundServer | None, back: bool) -> list[Any]:
    """Above the chat: the bundled model's limits, and the found server's offer with its
    button; or, on a found server, which one answers and the way back; else nothing.
    (Updates of the banner, the offer's button, the way back, the Settings button.)"""
    kind = local_servers().kind_at(settings.base_url)
    if settings.is_local:
        offer = f" {FOUND_OFFER.format(offer=found.offer)}" if found else ""
        text = f"{LOCAL_LIMITS}{offer}"
    elif kind is not None and back:
        address = (settings.base_url or "").removeprefix("http://").split("/")[0]
        text = USING_FOUND.format(model=settings.chat_model, kind=kind, address=address)
    else:
        text = ""
    label = FOUND_BUTTON.format(kind=found.kind, model=found.model) if found else ""
    return [
        gr.update(value=text, visible=bool(text)),
        gr.update(value=label, visible=settings.is_local and found is not None),
        gr.update(visible=bool(text) and not settings.is_local),
        gr.update(visible=settings.is_local),
    ]


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


def narrow_sidebar(shown: float | None) -> Any:
    """On a phone (``shown``, the window's width, under ``NARROW``) the sidebar, which
    covers the chat, closes."""
    return gr.Sidebar(open=False) if 0 < (shown or 0) < NARROW else gr.skip()


def close_row() -> tuple[None, Any]:
    """Cancel or Keep in the sidebar: the row's chat is forgotten and its row hidden."""
    return None, gr.update(visible=False)


class ChatTab:
    """One person's chat state: their store, their turns and their context factory."""

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
        """The person left a session: what they said there becomes a segment now."""
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
            waiting = [user_bubble(t.text, t.image_path, t.meta) for t in live[1:]]
            view: TurnView | None = None
            async for event in turn.follow():
                if isinstance(event, UserStored):
                    before = await self.store.messages(session_id)
                    view = TurnView(history_messages(m for m in before if m.id < event.message.id))
                if view is None:
                    continue
                view.apply(event)
                # Until the model's first words, a message to the bundled model says so
                # while it loads; the next event (text, a step, an error) replaces it.
                status = []
                if isinstance(event, UserStored):
                    status = starting_status(await self.settings())
                if not isinstance(event, ModelDone):
                    yield view.chat(*status, *notices, *waiting), trace
            if view is not None and view.answer is not None:
                trace = view.trace
                notice = vision_notice(view.trace, session_id, told)
                if notice:
                    notices.append(notice_bubble(notice))
                    told.append(session_id)
            if view is not None and view.error is not None:
                failed_on = found_notice(await self.settings())
                if failed_on:
                    notices.append(notice_bubble(failed_on))
            if turn.failure is not None:
                notices.append(failure_bubble(turn.failure, logged=True))
            live = self.turns.live(session_id)
        shown = [*await _history(self.store, session_id), *notices]
        yield shown, trace


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


@dataclass(frozen=True)
class ChatComponents:
    """The components the handlers update by name (the keys of their update dicts)."""

    session: gr.State  # the session id in view (None: a new, empty chat)
    told: gr.State  # sessions already told that no vision model is set
    listing: gr.State  # the sidebar's rows
    renaming: gr.State  # the chat whose row shows the rename box
    deleting: gr.State  # the chat whose row asks to confirm its deletion
    edit: gr.State  # {"id", "text"} of an edit waiting for confirmation
    chatbot: gr.Chatbot
    box: gr.MultimodalTextbox
    notice: gr.Markdown  # above the composer: why a message or a file was not sent
    stop: gr.Button
    note: gr.Textbox
    keep: gr.Checkbox
    note_line: gr.Markdown
    remove_note: gr.Button
    started: gr.State  # the turn a send started, from on_take to on_taken
    line: gr.Markdown
    trace: gr.Markdown
    confirm_edit: gr.Row
    rename_row: gr.Row
    rename_box: gr.Textbox
    delete_row: gr.Row
    delete_words: gr.Markdown
    focus: gr.Number  # the bubble a search result opened at, for the page to show (-1: none)


class ChatHandlers:
    """The Chat tab's handlers, each on the logged-in person's ``ChatTab`` (``Chats.of``)."""

    def __init__(self, chats: Chats, ui: ChatComponents) -> None:
        self.chats, self.ui = chats, ui
        self.opened = chat_list.OpenedChats()  # the chat each page last chose in the list
        self.pages = Pages()  # the pages following a turn now (app.live_tabs)
        self._marks: dict[tuple[int, str | None, str], str] = {}  # _mark's, newest last
        people = chats.people
        fixed = fixed_fields(people.flags, people.env, accounts_on=people.accounts_on)
        self.connections = Connections(people, fixed)

    async def on_banner(self, request: gr.Request) -> list[Any]:
        """The banner above the chat (after the page load: a model server on this machine
        is looked for meanwhile, never delaying the page)."""
        settings = await self.chats.of(request).settings()
        found = await self.connections.offered(settings) if settings.is_local else None
        return banner(settings, found, self.connections.switchable(settings))

    async def on_shown(self, request: gr.Request) -> list[Any]:
        """A tab chosen (back from Settings after a save): the banner and the model line
        for the settings in effect now."""
        settings = await self.chats.of(request).settings()
        return [*await self.on_banner(request), model_line(settings)]

    async def on_use_found(self, request: gr.Request) -> list[Any]:
        """The banner's one click: the found server's model answers from now on (Verify,
        then saved as Settings' Save does); the banner says what happened."""
        return await self._switched(request, self.connections.use_found)

    async def on_use_bundled(self, request: gr.Request) -> list[Any]:
        """Back to the bundled model (a found server stopped, or the person chose so)."""
        return await self._switched(request, self.connections.use_bundled)

    async def _switched(self, request: gr.Request, switch: Any) -> list[Any]:
        tab = self.chats.of(request)
        said, _ = await switch(tab.make_context)
        settings = await tab.settings()
        shown = await self.on_banner(request)
        note = f"{said}\n\n{shown[0]['value']}" if shown[0]["value"] else said
        return [gr.update(value=note, visible=True), *shown[1:], model_line(settings)]

    async def on_load(self, request: gr.Request) -> tuple[Any, ...]:
        """A page load: the newest chat, the sidebar, the model line and the local banner."""
        tab = self.chats.of(request)
        ctx = await tab.make_context()
        catch_up_once(ctx)
        await tab.recover_once()
        sessions = await tab.store.list_sessions()
        current = sessions[0].id if sessions else None
        # Read before the chat is: a change made meanwhile is shown by the next tick.
        page = request.session_hash or ""
        self.pages.saw(page, await tab.store.chat_version(current))
        rows, history = await tab.rows(), await _history(tab.store, current)
        self.pages.showed(page, "list", rows)
        self.pages.showed(page, "chat", (current, history))
        return (
            current,
            rows,
            history,
            model_line(ctx.settings),
            gr.update(visible=ctx.settings.is_local),
        )

    async def on_switch(
        self, going_to: str, left: str | None, request: gr.Request
    ) -> tuple[Any, ...]:
        """Show chat ``going_to`` (the one ``left`` becomes a segment now)."""
        tab = self.chats.of(request)
        going = await tab.store.get_session(going_to) if going_to else None
        if going is None:
            gr.Warning(GONE)
            return left, await tab.rows(), await _history(tab.store, left), None, None
        await tab.leave(left, going.id)
        history = await _history(tab.store, going.id)
        self.pages.showed(request.session_hash or "", "chat", (going.id, history))
        return going.id, gr.skip(), history, None, None

    async def on_new(self, left: str | None, request: gr.Request) -> tuple[Any, ...]:
        """An empty chat. Nothing is stored until the first message: "New chat" twice is
        one empty chat."""
        self.opened.choose(request.session_hash, None)  # first: a change read meanwhile is dropped
        await self.chats.of(request).leave(left, None)
        return None, [], None, None

    async def on_rename(self, chosen: str, title: str, request: gr.Request) -> tuple[Any, Any]:
        tab = self.chats.of(request)
        try:
            await tab.store.rename_session(chosen, title)
        except StoreError as exc:
            gr.Warning(str(exc))
            return gr.skip(), gr.skip()
        return await tab.rows(), None

    async def on_delete(
        self, chosen: str, current: str | None, request: gr.Request
    ) -> tuple[Any, ...]:
        """Delete chat ``chosen`` (its turn stopped first); if it was in view, the newest
        chat left is shown."""
        tab = self.chats.of(request)
        if chosen:
            await tab.turns.stop(chosen)
            await tab.store.delete_session(chosen)
        rows = await tab.rows()
        if chosen != current:
            return gr.skip(), rows, gr.skip(), None
        after = rows[0]["id"] if rows else None
        return after, rows, await _history(tab.store, after), None

    async def on_remove_note(self, session_id: str | None, request: gr.Request) -> tuple[Any, Any]:
        store = self.chats.of(request).store
        if session_id and await store.get_session(session_id):
            await store.set_style_note(session_id, None)
        return await active_note(store, session_id)

    async def show_note(self, session_id: str | None, request: gr.Request) -> tuple[Any, Any]:
        return await active_note(self.chats.of(request).store, session_id)

    async def greet(self, request: gr.Request) -> Any:
        """The greeting and examples for the settings now in effect (shown while empty)."""
        return gr.update(**welcome(await self.chats.of(request).settings()))

    async def persona(self, request: gr.Request) -> str:
        """The chat's header: the persona in effect now (``persona_chip``)."""
        return persona_chip(await self.chats.of(request).settings())

    async def follow(
        self, session_id: str | None, noticed: list[str], request: gr.Request
    ) -> AsyncIterator[dict[Any, Any]]:
        """Stream the session's running and queued turns into the chat, if any (after a
        load, a switch: a reload or a second tab re-attaches here)."""
        tab, page = self.chats.of(request), request.session_hash
        async for update in self.stream(tab, session_id, noticed, page=page):
            yield update

    async def on_watch(self, session_id: str | None, mark: str, request: gr.Request) -> Any:
        """The token of what this page shows (``AsyncStore.chat_version``), polled by the
        page's timer: when it moves, ``on_changed`` shows the change (app.live_tabs). It
        moves too while the page shows another chat than its session's (``mark``, made by
        ``SHOWN_JS``), or while a turn runs in its chat and the page does not follow it (its
        follow was cancelled by a quick switch). Not asked while the page follows a turn:
        its stream shows it."""
        if self.pages.busy(request.session_hash or ""):
            return gr.skip()
        tab = self.chats.of(request)
        version = await tab.store.chat_version(session_id)
        mark = str(mark or "")[:MARK_LIMIT]  # from the page: a hostile one could be long
        if mark and mark != await self._mark(tab.store, session_id, version):
            return f"{version} {STALE} {mark}"  # one re-show for each wrong chat on screen
        if session_id and tab.turns.live(session_id):
            return f"{version} {UNFOLLOWED}"
        return version

    async def _mark(self, store: AsyncStore, session_id: str | None, version: str) -> str:
        """``shown_mark`` of the stored chat, kept per chat and version."""
        key = (id(store), session_id, version)
        if key not in self._marks:
            bubbles = await _history(store, session_id)
            asked = [bubble_text(b) for b in bubbles if b.role == "user"]
            mark = shown_mark(asked, bubble_text(bubbles[-1]) if bubbles else "")
            keep_newest(self._marks, key, mark, MARKS_KEPT)
        return self._marks[key]

    async def on_changed(
        self,
        session_id: str | None,
        noticed: list[str],
        token: str | None,
        request: gr.Request,
    ) -> AsyncIterator[dict[Any, Any]]:
        """Something changed elsewhere: the chat list and the chat, from the store, then
        the turn running in it followed; nothing while this page follows a turn already
        (its stream shows it), nor for a ``token`` the page was shown already. The list
        and the chat are each sent only if they differ from what the page was shown last
        (``Pages.fresh``), the chat always when the page shows another one or does not
        follow its turn (the token says so)."""
        page = request.session_hash or ""
        if self.pages.busy(page) or (token is not None and token == self.pages.seen(page)):
            yield {self.ui.told: gr.skip()}  # nothing changes (a generator must yield)
            return
        tab, ui = self.chats.of(request), self.ui
        self.pages.saw(page, await tab.store.chat_version(session_id))  # read first, as above
        rows, history = await tab.rows(), await _history(tab.store, session_id)
        if not self.opened.still(page, session_id):  # the page chose another chat meanwhile
            yield {ui.told: gr.skip()}
            return
        redraw = redraws(token)
        shown: dict[Any, Any] = {ui.told: gr.skip()}
        if self.pages.fresh(page, "list", rows):
            shown[ui.listing] = rows
        if self.pages.fresh(page, "chat", (session_id, history)) or redraw:
            shown[ui.chatbot] = history
        yield shown
        if session_id:
            async for update in self.stream(tab, session_id, noticed, page=page):
                if not self.opened.still(page, session_id):
                    return
                yield update

    async def stream(
        self,
        tab: ChatTab,
        session_id: str | None,
        noticed: list[str],
        first: LiveTurn | None = None,
        *,
        page: str | None,
    ) -> AsyncIterator[dict[Any, Any]]:
        """``follow`` for ``tab``, from ``first`` (the turn this page just started), while
        ``page`` counts as following (app.live_tabs)."""
        with self.pages.following(page or ""):
            async for update in self._stream(tab, session_id, noticed, first, page=page):
                yield update

    async def _stream(
        self,
        tab: ChatTab,
        session_id: str | None,
        noticed: list[str],
        first: LiveTurn | None = None,
        *,
        page: str | None = None,
    ) -> AsyncIterator[dict[Any, Any]]:
        """``stream``'s updates. Always yields: a generator that yields nothing would
        blank every output."""
        ui, turns = self.ui, tab.turns
        here = bool(session_id and (first is not None or turns.live(session_id)))
        if session_id and not here and await tab.running_elsewhere(session_id):
            # Another app process runs it (several processes on one database).
            yield {ui.stop: gr.update(visible=True)}
            async for polled in tab.elsewhere(session_id):
                yield {ui.chatbot: polled, ui.stop: gr.update(visible=True)}
        if not session_id or (first is None and not turns.live(session_id)):
            yield {ui.stop: gr.update(visible="hidden")}
            return
        yield {ui.stop: gr.update(visible=True)}
        answered: list[TraceEvent] | None = None
        shown: list[Any] = []
        told_now = list(noticed)  # ChatTab.following adds the sessions it tells
        async for shown, turn_trace in tab.following(session_id, told_now, first):
            answered = turn_trace or answered
            # Stop is shown again each time: a re-render of the sidebar's rows (another
            # event) puts it back in its initial, hidden state.
            yield {ui.chatbot: shown, ui.stop: gr.update(visible=True)}
        if page:  # it ends on the stored chat and list: the next tick shows nothing again
            self.pages.saw(page, await tab.store.chat_version(session_id))  # read first
        settings, rows = await tab.settings(), await tab.rows()
        if page:
            self.pages.showed(page, "list", rows)
            self.pages.showed(page, "chat", (session_id, shown))
        yield {
            ui.chatbot: shown,
            ui.stop: gr.update(visible="hidden"),
            ui.told: told_now,
            ui.listing: rows,
            ui.line: model_line(settings, list(answered or [])),
            ui.trace: trace_markdown(answered) if answered else gr.skip(),
        }

    async def on_send(
        self,
        message: Mapping[str, Any] | None,
        session_id: str | None,
        style_note: str,
        kept: bool,
        noticed: list[str],
        request: gr.Request,
    ) -> AsyncIterator[dict[Any, Any]]:
        """Send the composer's message and follow its turn, in one streamed event (the
        ``send`` API; the page runs the same two steps as two events, ``on_take`` then
        ``on_taken``)."""
        taken = await self.on_take(message, session_id, style_note, kept, request)
        started = taken.pop(self.ui.started)
        yield taken
        if started is not None:
            tab = self.chats.of(request)
            async for update in self.stream(
                tab, started.session_id, noticed, started, page=request.session_hash
            ):
                yield update

    async def on_take(
        self,
        message: Mapping[str, Any] | None,
        session_id: str | None,
        style_note: str,
        kept: bool,
        request: gr.Request,
    ) -> dict[Any, Any]:
        """Store the composer's message (text, an attached or pasted image, the style note)
        and start its turn: the composer and the note are cleared, and the started turn
        goes to ``on_taken`` (``ui.started``). A message that cannot go stays in the
        composer, with the reason in the chat, and starts nothing.

        The page's first step of a send, two events and not one: an event that streams
        sends every output with each chunk, and Gradio's page re-reads a component named
        by an update without a value from the component itself, late, so the composer
        could come back with the sent text and a note typed while the answer streamed
        could vanish. The streaming step (``on_taken``) names only the chat's outputs."""
        ui, tab = self.ui, self.chats.of(request)
        text = str((message or {}).get("text") or "").strip()
        files = [str(f) for f in (message or {}).get("files") or []]
        if not text and not files:
            return {ui.box: gr.update(value=None), ui.started: None}
        style_note = (style_note or "").strip()
        # A copy: the factory's Context is shared, the style note is this turn's only (a
        # kept note is read from the session by build_context instead).
        ctx = await tab.make_context()
        ctx = dataclasses.replace(ctx, style_note=None if kept else style_note or None)
        # Refused before the composer is cleared: the text stays there to be fixed (a
        # refused file goes), and the reason shows above the composer, not in the chat.
        refusal = too_long(text, ctx.settings)
        attached = None
        if refusal is None and files:
            try:
                attached = await take_upload(files[0], tab.store.media_dir, ctx.settings)
            except AttachmentError as exc:
                refusal, message = str(exc), {"text": text, "files": []}
        if refusal is not None:
            shown = gr.update(value=f"⚠️ {refusal}", visible=True)
            return {ui.notice: shown, ui.box: message, ui.started: None}
        image_path = attached.image_path if attached else await pasted(ctx, session_id, text)
        meta = attached.meta() if attached else {}
        try:
            session_id = await ensure_session(tab.store, session_id, titled(text, attached))
            if kept and style_note:
                await tab.store.set_style_note(session_id, style_note)
            stored = None
            if not tab.turns.live(session_id):  # stored now: a failed write keeps the text
                stored = await tab.store.add_message(
                    session_id, "user", text, image_path=image_path, meta=meta
                )
        except Exception as exc:
            failed = failure_bubble(exc)
            kept_back = {ui.chatbot: [*await _history(tab.store, session_id), failed]}
            return {**kept_back, ui.box: message, ui.started: None}
        started = tab.turns.start(
            ctx, session_id, text, image_path=image_path, stored=stored, meta=meta
        )
        return {**await self._sent(tab, session_id), ui.started: started}

    async def on_taken(
        self,
        session_id: str | None,
        noticed: list[str],
        started: LiveTurn | None,
        request: gr.Request,
    ) -> AsyncIterator[dict[Any, Any]]:
        """The page's second step of a send: follow the turn ``on_take`` started."""
        if started is None:  # refused, or the write failed: the first step said so
            yield {self.ui.stop: gr.skip()}
            return
        async for update in self.stream(
            self.chats.of(request), session_id, noticed, started, page=request.session_hash
        ):
            yield update

    async def _sent(self, tab: ChatTab, session_id: str) -> dict[Any, Any]:
        """The composer cleared once a message is on its way, and the chat's kept note."""
        ui = self.ui
        shown_note, remove_shown = await active_note(tab.store, session_id)
        return {
            ui.box: gr.update(value=None),
            ui.notice: gr.update(value="", visible=False),
            ui.session: session_id,
            ui.note: "",
            ui.keep: False,
            ui.note_line: shown_note,
            ui.remove_note: remove_shown,
        }

    async def on_option(
        self, session_id: str | None, choice: gr.SelectData, request: gr.Request
    ) -> None:
        """Allow or Deny under a question: the answer goes to the turn waiting on it."""
        chosen = chosen_option(choice.value)
        if not session_id or chosen is None:
            return
        if not self.chats.of(request).turns.decide(session_id, *chosen):
            gr.Warning(NOT_WAITING)

    async def on_stop(self, session_id: str | None, request: gr.Request) -> None:
        tab = self.chats.of(request)
        if session_id:
            await tab.turns.stop(session_id, tab.store)

    async def on_retry(
        self, session_id: str | None, noticed: list[str], request: gr.Request
    ) -> AsyncIterator[dict[Any, Any]]:
        """Answer the chat's last user message again (regenerate, or retry after an error
        or an interruption); what answered it before is deleted first."""
        tab = self.chats.of(request)
        messages = await tab.store.messages(session_id) if session_id else []
        asked = next((m for m in reversed(messages) if m.role == "user"), None)
        if not session_id or asked is None or tab.turns.live(session_id):
            if session_id and asked is not None:
                gr.Warning(STILL_ANSWERING)
            yield {self.ui.stop: gr.skip()}
            return
        after = [m.id for m in messages if m.id > asked.id]
        if after:
            await tab.store.delete_messages_from(session_id, after[0])
        started = tab.turns.start(await tab.make_context(), session_id, asked.content, stored=asked)
        page = request.session_hash
        async for update in self.stream(tab, session_id, noticed, started, page=page):
            yield update

    async def on_edit(
        self, session_id: str | None, edited: gr.EditData, request: gr.Request
    ) -> tuple[Any, ...]:
        """An edited user message: ask before the messages after it are deleted."""
        tab = self.chats.of(request)
        messages = await tab.store.messages(session_id) if session_id else []
        entries = history_entries(messages)
        chosen = edited_message(entries, edited.index, edited.previous_value)
        text = edited.value.strip() if isinstance(edited.value, str) else ""
        if session_id and tab.turns.live(session_id):
            gr.Warning(STILL_ANSWERING)
            chosen = None
        if chosen is None or not text:
            return [bubble for bubble, _ in entries], None, gr.update(visible=False), ""
        count = sum(m.id > chosen for m in messages)
        replaced = EDIT_REPLACES.format(count=count, s="" if count == 1 else "s") if count else ""
        words = f"**{EDIT_CONFIRM}**{replaced}"
        return gr.skip(), {"id": chosen, "text": text}, gr.update(visible=True), words

    async def on_resend(
        self,
        session_id: str | None,
        pending: dict[str, Any] | None,
        noticed: list[str],
        request: gr.Request,
    ) -> AsyncIterator[dict[Any, Any]]:
        """Delete the edited message and what followed it, then send the edited text (with
        the file attached to it). An edited first message retitles the chat, unless the
        person has renamed it."""
        ui, tab = self.ui, self.chats.of(request)
        yield {ui.confirm_edit: gr.update(visible=False), ui.edit: None}
        if not session_id or not pending:
            return
        messages = await tab.store.messages(session_id)
        old = next((m for m in messages if m.id == pending["id"]), None)
        if old is None or tab.turns.live(session_id):
            yield {ui.chatbot: await _history(tab.store, session_id)}
            return
        await tab.store.delete_messages_from(session_id, old.id)
        kept = {"attachment": old.meta["attachment"]} if "attachment" in old.meta else {}
        stored = await tab.store.add_message(
            session_id, "user", pending["text"], image_path=old.image_path, meta=kept
        )
        if not any(m.role == "user" and m.id < old.id for m in messages):
            await tab.store.rename_session(session_id, title_for(stored.content), by_person=False)
        ctx = await tab.make_context()
        started = tab.turns.start(ctx, session_id, stored.content, stored=stored)
        page = request.session_hash
        async for update in self.stream(tab, session_id, noticed, started, page=page):
            yield update

    async def on_cancel_edit(self, session_id: str | None, request: gr.Request) -> tuple[Any, ...]:
        store = self.chats.of(request).store
        return await _history(store, session_id), None, gr.update(visible=False)

    async def on_open(
        self, left: str | None, opened: gr.EventData, request: gr.Request
    ) -> dict[Any, Any]:
        """A chat's row in the list clicked: the chat is shown (the rename and delete rows
        close)."""
        ui, hide = self.ui, gr.update(visible=False)
        self.opened.choose(request.session_hash, str(opened.id))
        shown, rows_now, history, *_ = await self.on_switch(str(opened.id), left, request)
        if shown != opened.id and self.opened.still(request.session_hash, str(opened.id)):
            self.opened.choose(request.session_hash, shown)  # gone: the chat stays
        return {
            ui.session: shown,
            ui.listing: rows_now,
            ui.chatbot: history,
            ui.renaming: None,
            ui.deleting: None,
            ui.rename_row: hide,
            ui.delete_row: hide,
        }

    async def on_open_hit(
        self, left: str | None, hit: gr.EventData, request: gr.Request
    ) -> dict[Any, Any]:
        """A search result clicked: its chat is shown, and where its message sits in the
        chat goes to the page (``ui.focus``), which brings that bubble into view."""
        shown = await self.on_open(left, hit, request)
        chosen = shown[self.ui.session]
        messages = await self.chats.of(request).store.messages(chosen) if chosen else []
        found = chat_list.bubble_at(messages, hit.message) if chosen == hit.id else -1
        return {**shown, self.ui.focus: found}

    async def follow_opened(
        self, session_id: str | None, noticed: list[str], request: gr.Request
    ) -> AsyncIterator[dict[Any, Any]]:
        """``follow`` for a chat opened from the list, for as long as the page has not
        asked for another one (``OpenedChats``)."""
        page = request.session_hash
        stream = self.follow(session_id, noticed, request)
        followed = cast(AsyncGenerator[dict[Any, Any], None], stream)
        async with aclosing(followed) as updates:
            async for update in updates:
                if not self.opened.still(page, session_id):
                    yield {self.ui.stop: gr.skip()}  # a stream that yields nothing blanks all
                    return
                yield update

    async def on_row_action(
        self, rows: list[dict[str, Any]], asked: gr.EventData, request: gr.Request
    ) -> dict[Any, Any]:
        """An item of a row's menu: Rename opens the rename row with the title, Delete asks
        first in the delete row, Pin and Unpin move the chat to or from the top."""
        ui, hide = self.ui, gr.update(visible=False)
        chosen = next((row for row in rows if row["id"] == asked.id), None)
        if chosen is None or asked.action not in chat_list.ACTIONS:
            return {ui.rename_row: hide, ui.delete_row: hide}
        if asked.action == "rename":
            return {
                ui.rename_row: gr.update(visible=True),
                ui.rename_box: chosen["title"],
                ui.renaming: chosen["id"],
                ui.delete_row: hide,
            }
        if asked.action == "delete":
            return {
                ui.delete_row: gr.update(visible=True),
                ui.delete_words: f"Delete “{plain(chosen['title'])}”?",
                ui.deleting: chosen["id"],
                ui.rename_row: hide,
            }
        tab = self.chats.of(request)
        try:
            await tab.store.set_pinned(chosen["id"], asked.action == "pin")
        except StoreError as exc:  # deleted meanwhile (another tab)
            gr.Warning(str(exc))
        return {ui.listing: await tab.rows(), ui.rename_row: hide, ui.delete_row: hide}

    async def on_search(self, query: str, request: gr.Request) -> dict[str, Any] | None:
        """The sidebar's search: the chats whose title or messages match ``query``, as
        the list shows them (None, the list itself, for an empty query)."""
        if not (query or "").strip():
            return None
        hits = await self.chats.of(request).store.search_chats(query.strip())
        return {"query": query, "hits": chat_list.hit_rows(hits)}

    async def on_rename_row(
        self, chosen: str | None, title: str, request: gr.Request
    ) -> tuple[Any, ...]:
        """Save in a row's rename box: the new title, or the box stays with a warning."""
        if not chosen:
            return gr.skip(), None, gr.update(visible=False)
        rows, renamed = await self.on_rename(chosen, title, request)
        if isinstance(rows, dict):
            return rows, chosen, gr.skip()  # refused (the warning says why): the box stays
        return rows, renamed, gr.update(visible=False)

    async def on_delete_row(
        self, chosen: str | None, current: str | None, request: gr.Request
    ) -> tuple[Any, ...]:
        return (*await self.on_delete(chosen or "", current, request), gr.update(visible=False))
