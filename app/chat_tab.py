"""The Chat tab's layout: the chats sidebar, the chat, and the composer that starts turns.

``build`` lays the tab out inside the current Blocks and wires each event to a handler of
``app.chat_handlers.ChatHandlers`` (what the handlers do is said there). Showing another
chat (new, switch, delete) cancels the events that stream a turn into this page (the
turn goes on on the server). Whenever the chat in view changes, its kept style note, the
greeting while it is empty and a turn running in it follow (``afterwards``). Above the
chat, the persona that answers: filled when the page loads and whenever a tab is
chosen, so a persona saved in Settings shows on coming back to the chat. The layout and
its reasons: docs/app.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gradio as gr

from app import api as script_api
from app import chat_list
from app.chat_handlers import (
    LOCAL_LIMITS,
    ChatComponents,
    ChatHandlers,
    Chats,
    close_row,
    example_message,
    narrow_sidebar,
)
from app.feedback_view import FEEDBACK_OPTIONS
from app.feedback_view import wire as wire_feedback
from app.keyboard import FOCUS_RESEND
from app.live_tabs import SHOWN_JS, WATCH_SECONDS
from graph.setup import People

# The chat fills the window's height, less the tab bar, the composer and the lines under it.
CHAT_HEIGHT = "calc(100dvh - 270px)"
WINDOW_WIDTH = "() => window.innerWidth"
# LaTeX in answers: $$…$$ and \[…\] on a line of their own, \(…\) inline. A single $ is
# not a delimiter: "$5 and $10" is a price, not math.
LATEX: list[dict[str, str | bool]] = [
    {"left": "$$", "right": "$$", "display": True},
    {"left": "\\[", "right": "\\]", "display": True},
    {"left": "\\(", "right": "\\)", "display": False},
]
PASTE_CHARS = 1_000_000
# After an answer the composer takes the focus, unless the person is typing elsewhere
# (the style note, a rename): focus is never taken from another field.
FOCUS_COMPOSER = """() => {
  const typing = document.activeElement;
  const elsewhere = typing && typing.matches('input, textarea') && !typing.closest('#chat-input');
  if (!elsewhere) document.querySelector('#chat-input textarea')?.focus();
}"""


# The style note's fold opens and closes in the page. The note and "Keep for this chat" are
# mounted with the page and only hidden by CSS (ui.CSS): a closed gr.Accordion mounts its
# fields when first opened and, a frame or more later, puts back the values they had
# when the page loaded (Gradio 6.31, render_previously_invisible_children), so a "Keep"
# ticked in that moment was lost (seen in CI under load: the kept note was sent as a
# one-off). ``aria-expanded`` starts "false" (NOTE_FOLDED, on load).
NOTE_FOLD = """() => {
  const panel = document.querySelector('#style-note-panel');
  const open = panel.classList.toggle('unfolded');
  document.querySelector('#style-note-toggle').setAttribute('aria-expanded', String(open));
  if (open) document.querySelector('#style-note textarea')?.focus();
}"""
NOTE_FOLDED = """() => {
  const fold = document.querySelector('#style-note-toggle');
  fold?.setAttribute('aria-expanded', 'false');
  fold?.setAttribute('aria-controls', 'style-note-body');
}"""


# A chat chosen brings the Chat tab forward at once, in the page, with the click: a switch
# made by the server's answer would come later and take back a tab the person chose since.
SHOW_CHAT_TAB = """() => {
  const tab = document.querySelector('#tab-chat-button');
  if (tab && tab.getAttribute('aria-selected') !== 'true') tab.click();
}"""


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
    search: gr.Textbox  # search across chats: titles and messages
    found: gr.State  # the search's results ({"query", "hits"}), or None: the list shows
    focus: gr.Number  # where a search result opened the chat (read by the page's script)
    chats: gr.HTML  # chat_list's rows: pinned first, title and time, a ⋯ menu each
    who: gr.Markdown  # "Signed in as …" when a login is on
    logout: gr.Button  # ends every login of the person (app.logins answers /logout)


def sidebar() -> Sidebar:
    """Lay out the (empty) chats sidebar inside the current Blocks.

    The list is one ``gr.HTML`` whose rows are buttons (``app.chat_list``): its script
    turns a click into an event of the component, so a new list is new HTML and never
    new handlers. Rows made by ``gr.render`` were not kept: a re-render replaces the rows'
    event handlers, so a click that lands while one is in flight names a handler that no
    longer exists, and it resets other components (the Stop button) to their first state.
    """
    with gr.Sidebar(label="Chats", elem_id="chats", width=300) as panel:
        new = gr.Button("New chat", elem_id="new-session", variant="primary")
        search = gr.Textbox(
            label="Search chats",
            show_label=False,
            placeholder="Search chats",
            container=False,
            max_lines=1,
            elem_id="chat-search",
        )
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
        chats = gr.HTML(
            chat_list.list_html([], None), js_on_load=chat_list.LIST_JS, elem_id="chat-list"
        )
        found = gr.State(None)
        focus = gr.Number(-1, visible=False, elem_id="chat-focus")
        with gr.Row(equal_height=True, elem_id="who-row"):
            who = gr.Markdown(visible=False, elem_id="who")
            logout = gr.Button(
                "Log out", link="/logout", size="sm", scale=0, visible=False, elem_id="logout"
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
        search,
        found,
        focus,
        chats,
        who,
        logout,
    )


def who_is_here(request: gr.Request) -> tuple[dict[str, Any], dict[str, Any]]:
    """The signed-in name and the Log out button, shown only when a login is on."""
    name = request.username if request else None
    shown = f"Signed in as **{name}**" if name else ""
    return gr.update(value=shown, visible=bool(name)), gr.update(visible=bool(name))


@dataclass(frozen=True)
class ChatLayout:
    """The tab's components: the handlers' (``ui``) and what only the wiring uses."""

    ui: ChatComponents
    target: gr.Textbox  # the API's handles on the sidebar's row actions
    new_title: gr.Textbox
    api_delete: gr.Button
    api_send: gr.Button  # the API's send: the whole turn as one streamed event
    # The window's width in CSS pixels, set by the page itself (a State never leaves the
    # server, so it could not carry it): 0 until known.
    width: gr.Number
    banner: gr.Markdown  # the bundled model's limits, or the found server in use
    offers: tuple[gr.Button, gr.Button, gr.Button]  # use the found server, back, Settings
    edit_words: gr.Markdown
    resend: gr.Button
    cancel_edit: gr.Button
    persona: gr.HTML  # the chat's header: the persona's avatar and name


def style_note() -> tuple[gr.Markdown, gr.Button, gr.Textbox, gr.Checkbox]:
    """Under the composer: the chat's kept note and its Remove button (hidden while there
    is none), then the Style note box and its "Keep for this chat"."""
    with gr.Row(equal_height=True):
        note_line = gr.Markdown(visible=False, elem_id="active-note")
        remove_note = gr.Button(
            "Remove note", size="sm", scale=0, visible=False, elem_id="remove-note"
        )
    # A fold of the page's own (NOTE_FOLD), not a gr.Accordion: see NOTE_FOLD.
    with gr.Column(elem_id="style-note-panel"):
        fold = gr.Button("Style note", size="sm", elem_id="style-note-toggle")
        with gr.Group(elem_id="style-note-body"):
            note = gr.Textbox(
                label="For your next message (the persona stays)",
                placeholder="e.g. answer in three bullet points",
                max_lines=3,
                elem_id="style-note",
            )
            keep = gr.Checkbox(label="Keep for this chat", elem_id="style-keep")
    fold.click(None, js=NOTE_FOLD)
    return note_line, remove_note, note, keep


def layout(trace: gr.Markdown, side: Sidebar) -> ChatLayout:
    """Lay the tab out inside the current Blocks (the sidebar ``side`` is laid out already)."""
    target = gr.Textbox(visible=False, elem_id="target-session")
    new_title = gr.Textbox(visible=False, elem_id="target-title")
    api_delete = gr.Button(visible=False, elem_id="target-delete")
    api_send = gr.Button(visible=False, elem_id="api-send")
    width = gr.Number(0, visible=False, elem_id="window-width")
    with gr.Row(equal_height=True):
        banner = gr.Markdown(LOCAL_LIMITS, visible=False, elem_id="local-banner")
        offers = (
            gr.Button(visible=False, variant="primary", size="sm", scale=0, elem_id="banner-use"),
            gr.Button(
                "Back to the bundled model",
                visible=False,
                size="sm",
                scale=0,
                elem_id="banner-back",
            ),
            gr.Button(
                "Settings",
                visible=False,
                size="sm",
                scale=0,
                min_width=90,  # the banner's words get the rest of a phone's width
                elem_id="banner-settings",
            ),
        )
    persona = gr.HTML(elem_id="persona-chip", js_on_load=None)
    chatbot = gr.Chatbot(
        elem_id="chatbot",
        height=CHAT_HEIGHT,
        show_label=False,
        buttons=["copy", "copy_all"],
        editable="user",
        feedback_options=FEEDBACK_OPTIONS,
        latex_delimiters=LATEX,
    )
    with gr.Row(visible=False, elem_id="confirm-edit") as confirm_edit:
        edit_words = gr.Markdown(elem_id="edit-words")
        resend = gr.Button("Send", variant="primary", scale=0, elem_id="resend-edit")
        cancel_edit = gr.Button("Cancel", scale=0, elem_id="cancel-edit")
    notice = gr.Markdown(visible=False, elem_id="composer-notice")
    with gr.Row(equal_height=True, elem_id="composer-row"):
        box = gr.MultimodalTextbox(
            placeholder="Message (attach an image, a text or PDF file, or paste an image URL)",
            # No file_types: Gradio would refuse other files with its own technical error;
            # on_take checks the bytes and says in plain words why a file can't go.
            file_count="single",
            sources=["upload"],
            label="Message",
            show_label=False,
            autofocus=True,
            scale=8,
            elem_id="chat-input",
            # A long paste stays text in the composer (Gradio makes one over this a
            # "pasted_text.txt" file); one over the message limit is refused there.
            max_plain_text_length=PASTE_CHARS,
        )
        stop = gr.Button("⏹ Stop", visible="hidden", scale=0, min_width=90, elem_id="stop-turn")
    note_line, remove_note, note, keep = style_note()
    line = gr.Markdown(elem_id="model-line")
    ui = ChatComponents(
        session=gr.State(None),
        told=gr.State([]),
        listing=gr.State([]),
        renaming=gr.State(None),
        deleting=gr.State(None),
        edit=gr.State(None),
        chatbot=chatbot,
        box=box,
        notice=notice,
        stop=stop,
        note=note,
        keep=keep,
        note_line=note_line,
        remove_note=remove_note,
        started=gr.State(None),
        line=line,
        trace=trace,
        confirm_edit=confirm_edit,
        rename_row=side.rename_row,
        rename_box=side.rename_box,
        delete_row=side.delete_row,
        delete_words=side.delete_words,
        focus=side.focus,
    )
    return ChatLayout(
        ui,
        target,
        new_title,
        api_delete,
        api_send,
        width,
        banner,
        offers,
        edit_words,
        resend,
        cancel_edit,
        persona,
    )


class Wiring:
    """Connects the tab's events to ``handlers``; ``followers`` are the events that stream
    a turn into this page's chat (showing another chat cancels them)."""

    def __init__(
        self, handlers: ChatHandlers, parts: ChatLayout, side: Sidebar, tabs: gr.Tabs
    ) -> None:
        self.handlers, self.parts, self.side, self.tabs = handlers, parts, side, tabs
        ui = parts.ui
        self.followers: list[Any] = []
        self.loaded: Any = None  # the page load's event, once ``turns`` has wired it
        self.followed = [ui.chatbot, ui.stop, ui.told, ui.listing, ui.line, ui.trace]
        self.noted = [ui.note_line, ui.remove_note]

    def afterwards(self, event: Any, follow_with: Any = None, *, chosen: bool = True) -> None:
        """Whenever the conversation in view changes, its kept note (if any) shows with
        it, the greeting while it is empty, and a turn running in it (another tab's, or
        this page's before a reload) is followed (by ``follow_with``, else ``follow``). A
        chat ``chosen`` (not the page's load) closes the sidebar on a phone (the Chat tab
        came forward with the click: ``SHOW_CHAT_TAB``)."""
        h, ui = self.handlers, self.parts.ui
        if chosen:
            event.then(narrow_sidebar, self.parts.width, self.side.panel, api_visibility="private")
        event.then(h.show_note, ui.session, self.noted, api_visibility="private")
        event.then(h.greet, None, ui.chatbot, api_visibility="private")
        # No progress overlay: on Stop, it would cover the button and take its clicks.
        follow = event.then(
            follow_with or h.follow,
            [ui.session, ui.told],
            self.followed,
            api_visibility="private",
            show_progress="hidden",
        )
        self.followers.append(follow)

    def turns(self, load: Any) -> None:
        """The page load, sending, retry and edit-and-resend."""
        h, parts, ui = self.handlers, self.parts, self.parts.ui
        width, shown = parts.width, [ui.session, ui.listing, ui.chatbot, ui.line, parts.banner]
        loaded = load(h.on_load, None, shown, api_name="load")
        self.loaded = loaded
        # The window's width, for a chat chosen later; the page's head script closes a
        # phone's sidebar as it opens (``keyboard.NARROW_SIDEBAR``).
        load(lambda seen: seen, width, width, js=WINDOW_WIDTH, api_visibility="private")
        self.afterwards(loaded, chosen=False)  # a tab clicked while the page loads stays
        taking = [ui.box, ui.session, ui.note, ui.keep]
        taken = [ui.chatbot, ui.box, ui.notice, ui.session, ui.note, ui.keep, *self.noted]
        taken.append(ui.started)
        following = [ui.session, ui.told, ui.started]
        streamed: dict[str, Any] = {"api_visibility": "private", "show_progress_on": ui.chatbot}
        # Sending while a turn runs queues the message: the composer is never blocked. The
        # page sends in two steps (ChatHandlers.on_take): the composer and the note are
        # cleared, then only the chat's outputs stream.
        sends = ui.box.submit(
            h.on_take, taking, taken, api_visibility="private", trigger_mode="multiple"
        ).then(h.on_taken, following, self.followed, **streamed)
        # A clicked example goes into the composer and is sent from there, like a typed one.
        examples = (
            ui.chatbot.example_select(example_message, None, ui.box, api_visibility="private")
            .then(h.on_take, taking, taken, api_visibility="private")
            .then(h.on_taken, following, self.followed, **streamed)
        )
        # The same send as one streamed event, for API clients that follow the chat as the
        # page shows it (/send_streamed; scripts take app.api's /send).
        sent = [ui.chatbot, ui.box, ui.session, ui.listing, ui.stop, ui.line, ui.trace]
        sent += [ui.note, ui.keep, ui.told, *self.noted, ui.notice]
        api_send = parts.api_send.click(
            h.on_send,
            [ui.box, ui.session, ui.note, ui.keep, ui.told],
            sent,
            api_name="send_streamed",
            trigger_mode="multiple",
        )
        retried = ui.chatbot.retry(
            h.on_retry, [ui.session, ui.told], self.followed, api_name="retry"
        )
        resent = parts.resend.click(
            h.on_resend,
            [ui.session, ui.edit, ui.told],
            [*self.followed, ui.confirm_edit, ui.edit],
            api_name="resend_edit",
        )
        self.followers += [sends, examples, retried, resent, api_send]
        for answered in (sends, examples, retried, resent):
            answered.then(None, js=FOCUS_COMPOSER)
        edited = [ui.chatbot, ui.edit, ui.confirm_edit, parts.edit_words]
        ui.chatbot.edit(h.on_edit, ui.session, edited, api_visibility="private").then(
            None, js=FOCUS_RESEND
        )
        parts.cancel_edit.click(h.on_cancel_edit, ui.session, edited[:3], api_visibility="private")

    def banner(self) -> None:
        """The banner above the chat, once the page has loaded (a model server on this
        machine is looked for then); its buttons switch the connection or open Settings."""
        h, parts, ui = self.handlers, self.parts, self.parts.ui
        use, back, settings = parts.offers
        shown = [parts.banner, *parts.offers]
        private: dict[str, Any] = {"api_visibility": "private"}
        self.loaded.then(h.on_banner, None, shown, **private)
        for button, switch in ((use, h.on_use_found), (back, h.on_use_bundled)):
            button.click(switch, None, [*shown, ui.line], **private).then(
                h.greet, None, ui.chatbot, **private
            )
        settings.click(lambda: gr.Tabs(selected="settings"), None, self.tabs, **private)
        # Back from Settings after a save: what the chat shows follows what is in effect.
        # A tab chosen refreshes these quietly: Gradio's fade and timer on the chat and the
        # model line at every tab click would be noise (and its grey timer fails contrast).
        quiet = {**private, "show_progress": "hidden"}
        shows = self.tabs.select(h.on_shown, None, [*shown, ui.line], **quiet)
        shows.then(h.greet, None, ui.chatbot, **quiet)

    def persona(self, load: Any) -> None:
        """The persona chip, on the page load and whenever a tab is chosen (back from
        Settings after a save)."""
        gr.on(
            [load, self.tabs.select],
            self.handlers.persona,
            None,
            self.parts.persona,
            api_visibility="private",
            show_progress="hidden",
        )

    def controls(self) -> None:
        """The chats list's rows and their menus, the search, rename and delete in a row,
        Stop, Allow/Deny, the note."""
        h, side, ui = self.handlers, self.side, self.parts.ui
        gr.on(
            [ui.listing.change, ui.session.change, side.found.change],
            chat_list.shown_html,
            [ui.listing, ui.session, side.found],
            side.chats,
            api_visibility="private",
            trigger_mode="always_last",
        )
        for typed in (side.search.input, side.search.submit):
            typed(
                h.on_search,
                side.search,
                side.found,
                api_visibility="private",
                trigger_mode="always_last",
            )
        asked = [ui.listing, ui.rename_row, ui.rename_box, ui.renaming]
        asked += [ui.delete_row, ui.delete_words, ui.deleting]
        side.chats.row_action(h.on_row_action, ui.listing, asked, api_visibility="private").then(
            None, js=chat_list.FOCUS_ROW
        )
        for trigger in (side.rename_box.submit, side.rename_save.click):
            trigger(
                h.on_rename_row,
                [ui.renaming, side.rename_box],
                [ui.listing, ui.renaming, side.rename_row],
                api_visibility="private",
            )
        side.rename_cancel.click(
            close_row, None, [ui.renaming, side.rename_row], api_visibility="private"
        )
        side.delete_no.click(
            close_row, None, [ui.deleting, side.delete_row], api_visibility="private"
        )
        ui.stop.click(h.on_stop, ui.session, None, api_name="stop")
        ui.chatbot.option_select(h.on_option, ui.session, None, api_visibility="private")
        ui.remove_note.click(h.on_remove_note, ui.session, self.noted, api_name="remove_style_note")
        self.parts.new_title.submit(
            h.on_rename,
            [self.parts.target, self.parts.new_title],
            [ui.listing, ui.renaming],
            api_name="rename_session",
        )

    def live(self) -> None:
        """Every ``WATCH_SECONDS`` the page asks whether what it shows changed elsewhere
        (another tab, another process); when it did, the chat list and the chat are shown
        again and a turn running in the chat is followed (app.live_tabs)."""
        h, ui = self.handlers, self.parts.ui
        version = gr.Textbox(visible=False, elem_id="chat-version")
        quiet: dict[str, Any] = {"api_visibility": "private", "show_progress": "hidden"}
        # The timer starts once the page's load has shown its chat (a tick before would
        # name no chat), and a change is shown and followed in one event.
        timer = gr.Timer(WATCH_SECONDS, active=False)
        self.loaded.then(lambda: gr.Timer(active=True), None, timer, **quiet)
        mark = gr.Textbox(visible=False, elem_id="chat-mark")  # what the page shows
        timer.tick(h.on_watch, [ui.session, mark], version, js=SHOWN_JS, **quiet)
        changed = version.change(
            h.on_changed, [ui.session, ui.told, version], self.followed, **quiet
        )
        self.followers.append(changed)

    def switches(self) -> None:
        """Showing another chat: switch, new, a click in the list, delete. Each cancels
        every follower, those of the switches too: a chat shown next is followed afresh."""
        h, side, parts, ui = self.handlers, self.side, self.parts, self.parts.ui
        triggers: list[Any] = []
        opened = [ui.session, ui.listing, ui.chatbot, ui.renaming, ui.deleting]
        deleted = [ui.session, ui.listing, ui.chatbot, ui.deleting]
        picked = [*opened, side.rename_row, side.delete_row]
        private = {"api_visibility": "private"}

        before = list(self.followers)  # the sends, retries, edits, the live tabs' follow

        def shows(trigger: Any, handler: Any, inputs: Any, outputs: Any, **api: Any) -> Any:
            # Wired first: the page runs one trigger's listeners in order, so a cancel wired
            # after the handler would come once the new chat is shown, and the old chat's
            # last update could land on it.
            trigger(None, None, None, cancels=before, js=SHOW_CHAT_TAB, **private)
            triggers.append(trigger)
            follow_with = api.pop("follow_with", None)
            shown = trigger(handler, inputs, outputs, **api)
            self.afterwards(shown, follow_with)
            return shown

        named = [parts.target, ui.session]  # the API's calls name the chat
        shows(parts.target.submit, h.on_switch, named, opened, api_name="switch_session")
        fresh = [ui.session, ui.chatbot, ui.renaming, ui.deleting]
        shows(side.new.click, h.on_new, ui.session, fresh, api_name="new_session")
        # A click while a chat opens is let go (Gradio's "once"): "always_last" would run
        # the last click with the first click's event data, and clicks run side by side
        # could end in any order.
        listed = {**private, "follow_with": h.follow_opened}
        shows(side.chats.open_chat, h.on_open, ui.session, picked, **listed)
        at = [*picked, side.focus]
        hit = shows(side.chats.open_hit, h.on_open_hit, ui.session, at, **listed)
        hit.then(None, side.focus, None, js=chat_list.SHOW_FOUND)
        shows(
            side.delete_yes.click,
            h.on_delete_row,
            [ui.deleting, ui.session],
            [*deleted, side.delete_row],
            **private,
        )
        shows(parts.api_delete.click, h.on_delete, named, deleted, api_name="delete_session")
        # The cancel is a listener of its own: the page runs a listener's cancels only once
        # its handler is done, so a message sent meanwhile was cancelled (it stayed in the
        # composer). Wired last, so that it stops the chat a switch before is following too.
        switching = self.followers[len(before) :]  # the follows the switches start
        for trigger in triggers:
            trigger(None, None, None, cancels=switching, **private)


def build(
    people: People, trace: gr.Markdown, load: Any, side: Sidebar, tabs: gr.Tabs
) -> ChatComponents:
    """Lay out the tab inside the current Blocks and fill the chats sidebar ``side``;
    ``load`` is the page's load event, ``trace`` is where the last turn's path goes, and
    ``tabs`` are the page's tabs (choosing a chat in the sidebar opens the Chat tab). Every
    handler works on the logged-in person's ``ChatTab`` (``Chats.of``). The model line and
    the banner (``Wiring.banner``) are filled in when the page loads. Returns the tab's
    components (the Memories tab's imports update its sidebar)."""
    parts = layout(trace, side)
    chats = Chats(people, trace)
    wiring = Wiring(ChatHandlers(chats, parts.ui), parts, side, tabs)
    script_api.register(chats)
    load(who_is_here, None, [side.who, side.logout], api_visibility="private")
    load(None, js=NOTE_FOLDED)
    wiring.turns(load)
    wiring.banner()
    wiring.persona(load)
    wiring.controls()
    wiring.live()
    wiring.switches()
    wire_feedback(people, parts.ui)  # 👍/👎 and a comment under each answer
    return parts.ui
