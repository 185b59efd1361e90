"""The Chat tab's handlers (app.chat_handlers), called as Gradio would call them, with a
store in a temporary home and a fake turn runtime: no browser, no server."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import gradio as gr
import pytest

from app import chat_handlers
from app.attachments import Attachment
from app.chat_handlers import (
    GONE,
    NOT_WAITING,
    STILL_ANSWERING,
    ChatHandlers,
    Chats,
    ChatTab,
)
from app.chat_tab import layout, sidebar
from tests.support.app_fakes import FAKE_MODEL, FakeTurns, OnePerson, person, request
from tests.support.pdfs import pdf_bytes


class Page:
    """One browser's Chat tab: its components, the handlers and the person's chat state."""

    def __init__(self, home: Path, **flags: Any) -> None:
        with gr.Blocks():
            trace = gr.Markdown()
            self.ui = layout(trace, sidebar()).ui  # the tab's own components
        self.chats = Chats(OnePerson(person(home, **flags)), trace)  # type: ignore[arg-type]
        self.handlers = ChatHandlers(self.chats, self.ui)
        self.tab: ChatTab = self.chats.of(request())
        self.store = self.tab.store
        self.turns = FakeTurns(self.store)
        self.tab.turns = self.turns  # type: ignore[assignment]

    async def send(self, text: str, session: str | None = None, **kw: Any) -> list[dict[Any, Any]]:
        message = {"text": text, "files": kw.pop("files", [])}
        note, kept = kw.pop("note", ""), kw.pop("kept", False)
        return await drain(self.handlers.on_send(message, session, note, kept, [], request()))

    async def chat(self, session: str, *texts: str) -> list[int]:
        """Store a conversation: each text asked and answered; the user messages' ids."""
        asked = []
        for text in texts:
            asked.append((await self.store.add_message(session, "user", text)).id)
            await self.store.add_message(session, "assistant", f"answer to {text}")
        return asked


async def drain(updates: AsyncIterator[dict[Any, Any]]) -> list[dict[Any, Any]]:
    return [update async for update in updates]


def contents(chat: list[Any]) -> list[str]:
    return [str(bubble.content) for bubble in chat]


def visible(update: Any) -> Any:
    return update.get("visible") if isinstance(update, dict) else update


@pytest.fixture
def page(tmp_path: Path) -> Page:
    return Page(tmp_path)


async def test_send_stores_the_message_in_a_new_titled_chat_and_streams_the_answer(
    page: Page,
) -> None:
    updates = await page.send("What is jasmine tea?")
    ui = page.ui
    session = updates[0][ui.session]
    assert updates[0][ui.box]["value"] is None  # the composer is cleared once it is on its way
    assert (await page.store.get_session(session)).title == "What is jasmine tea?"
    assert page.turns.started[0]["stored"].content == "What is jasmine tea?"  # stored first
    streamed = [u[ui.chatbot] for u in updates if ui.chatbot in u]
    assert contents(streamed[0]) == ["What is jasmine tea?"]  # stored, then the answer grows
    assert "echo: What is jasmine tea?" in contents(streamed[1])
    last = updates[-1]
    assert contents(last[ui.chatbot]) == ["What is jasmine tea?", "echo: What is jasmine tea?"]
    assert visible(last[ui.stop]) == "hidden"
    assert last[ui.line] == f"model: {FAKE_MODEL}"
    assert [row["id"] for row in last[ui.listing]] == [session]
    assert "call_model" in last[ui.trace]


async def test_the_page_sends_in_two_steps_and_only_the_first_names_the_composer(
    page: Page,
) -> None:
    """on_take clears the composer and the note and hands the started turn on; on_taken
    streams the chat without naming the composer or the note (see ChatHandlers.on_take)."""
    ui = page.ui
    message = {"text": "hello", "files": []}
    taken = await page.handlers.on_take(message, None, "Be brief.", True, request())
    session, started = taken[ui.session], taken[ui.started]
    assert taken[ui.box]["value"] is None and taken[ui.note] == "" and taken[ui.keep] is False
    assert "Be brief." in taken[ui.note_line]["value"]
    assert started is not None and started.session_id == session
    updates = await drain(page.handlers.on_taken(session, [], started, request()))
    assert contents(updates[-1][ui.chatbot]) == ["hello", "echo: hello"]
    named = {component for update in updates for component in update}
    assert named.isdisjoint({ui.box, ui.note, ui.keep, ui.note_line, ui.remove_note})


async def test_a_refused_send_starts_nothing_for_the_second_step(tmp_path: Path) -> None:
    page = Page(tmp_path, max_message_chars=3)
    message = {"text": "far too long", "files": []}
    taken = await page.handlers.on_take(message, None, "", False, request())
    assert taken[page.ui.started] is None and taken[page.ui.box] == message
    updates = await drain(page.handlers.on_taken(None, [], None, request()))
    assert all(page.ui.chatbot not in update for update in updates)
    assert page.turns.started == []


async def test_an_empty_message_only_clears_the_composer(page: Page) -> None:
    updates = await page.send("   ")
    assert updates == [{page.ui.box: {"__type__": "update", "value": None}}]
    assert page.turns.started == [] and await page.store.list_sessions() == []


async def test_a_message_too_long_stays_in_the_composer_and_is_not_stored(tmp_path: Path) -> None:
    page = Page(tmp_path, max_message_chars=10)
    [update] = await page.send("far more than ten characters")
    assert update[page.ui.box] == {"text": "far more than ten characters", "files": []}
    assert "limit is 10 (COMPANION_MAX_MESSAGE_CHARS)" in update[page.ui.notice]["value"]
    assert update[page.ui.notice]["visible"] is True
    # Said above the composer, not as an answer in the chat (whose Retry would do nothing).
    assert page.ui.chatbot not in update
    assert page.turns.started == [] and await page.store.list_sessions() == []


async def test_a_failed_write_keeps_the_message_and_says_what_went_wrong(
    page: Page, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def refuse(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(page.store, "add_message", refuse)
    [update] = await page.send("hello")
    assert update[page.ui.box] == {"text": "hello", "files": []}
    assert contents(update[page.ui.chatbot])[-1].endswith("RuntimeError: disk on fire")
    assert page.turns.started == []


async def test_a_kept_style_note_is_saved_on_the_chat_and_shown(page: Page) -> None:
    updates = await page.send("hi", note=" answer in French ", kept=True)
    ui, session = page.ui, updates[0][page.ui.session]
    assert await page.store.style_note(session) == "answer in French"
    assert "answer in French" in updates[0][ui.note_line]["value"]
    assert updates[0][ui.note] == "" and updates[0][ui.keep] is False


async def test_a_message_sent_while_a_turn_runs_waits_unstored(page: Page) -> None:
    session = (await page.store.create_session("chat")).id
    page.turns.hold = True
    first = page.handlers.on_send({"text": "one"}, session, "", False, [], request())
    await anext(first)  # the first turn runs (held)
    second = page.handlers.on_send({"text": "two"}, session, "", False, [], request())
    await anext(second)
    assert [t["stored"] is None for t in page.turns.started] == [False, True]
    page.turns.release()
    await drain(first)
    await drain(second)
    stored = [m.content for m in await page.store.messages(session)]
    assert stored == ["one", "echo: one", "two", "echo: two"]


async def test_retry_deletes_the_last_answer_and_answers_the_last_message_again(
    page: Page,
) -> None:
    session = (await page.store.create_session("chat")).id
    asked = await page.chat(session, "first", "second")
    updates = await drain(page.handlers.on_retry(session, [], request()))
    assert page.turns.started[0]["stored"].id == asked[1]
    stored = [m.content for m in await page.store.messages(session)]
    assert stored == ["first", "answer to first", "second", "echo: second"]
    assert contents(updates[-1][page.ui.chatbot])[-1] == "echo: second"


async def test_retry_while_answering_is_refused(page: Page) -> None:
    session = (await page.store.create_session("chat")).id
    await page.chat(session, "first")
    page.turns.hold = True
    running = page.handlers.on_send({"text": "next"}, session, "", False, [], request())
    await anext(running)
    with pytest.warns(UserWarning, match=re.escape(STILL_ANSWERING)):
        updates = await drain(page.handlers.on_retry(session, [], request()))
    assert len(updates) == 1 and len(page.turns.started) == 1
    page.turns.release()
    await drain(running)


async def test_edit_asks_first_then_resend_replaces_the_message_and_what_followed(
    page: Page,
) -> None:
    session = (await page.store.create_session("chat")).id
    asked = await page.chat(session, "first", "second", "third")
    edited = gr.EditData(None, {"index": 2, "previous_value": "second", "value": " 2nd "})
    shown, pending, row, words = await page.handlers.on_edit(session, edited, request())
    assert shown == gr.skip() and pending == {"id": asked[1], "text": "2nd"}
    assert visible(row) is True
    assert words == "**Send the edited message?** The 3 messages after it will be replaced."
    assert len(await page.store.messages(session)) == 6  # nothing deleted before the yes
    updates = await drain(page.handlers.on_resend(session, pending, [], request()))
    assert updates[0] == {page.ui.confirm_edit: gr.update(visible=False), page.ui.edit: None}
    stored = [m.content for m in await page.store.messages(session)]
    assert stored == ["first", "answer to first", "2nd", "echo: 2nd"]


async def test_editing_an_answer_asks_nothing_and_shows_the_chat_again(page: Page) -> None:
    session = (await page.store.create_session("chat")).id
    await page.chat(session, "first")
    edited = gr.EditData(None, {"index": 1, "previous_value": "answer", "value": "changed"})
    chat, pending, row, words = await page.handlers.on_edit(session, edited, request())
    assert contents(chat) == ["first", "answer to first"]
    assert pending is None and visible(row) is False and words == ""


async def test_cancel_edit_shows_the_stored_chat(page: Page) -> None:
    session = (await page.store.create_session("chat")).id
    await page.chat(session, "first")
    chat, pending, row = await page.handlers.on_cancel_edit(session, request())
    assert contents(chat) == ["first", "answer to first"]
    assert pending is None and visible(row) is False


async def test_stop_asks_the_runtime_to_stop_the_chat_turn(page: Page) -> None:
    await page.handlers.on_stop("s1", request())
    await page.handlers.on_stop(None, request())
    assert page.turns.stopped == [("s1", page.store)]


async def test_allow_and_deny_go_to_the_waiting_turn(page: Page) -> None:
    page.turns.waiting.add("q1")
    allow = gr.SelectData(None, {"index": 0, "value": "allow:q1"})
    await page.handlers.on_option("s1", allow, request())
    with pytest.warns(UserWarning, match=re.escape(NOT_WAITING)):
        await page.handlers.on_option(
            "s1", gr.SelectData(None, {"index": 1, "value": "deny:q2"}), request()
        )
    await page.handlers.on_option("s1", gr.SelectData(None, {"index": 0, "value": "?"}), request())
    assert page.turns.decided == [("s1", "q1", True), ("s1", "q2", False)]


async def test_load_shows_the_newest_chat(page: Page, monkeypatch: pytest.MonkeyPatch) -> None:
    swept: list[Any] = []
    monkeypatch.setattr(chat_handlers, "catch_up_once", swept.append)
    old = (await page.store.create_session("old")).id
    await page.chat(old, "before")
    new = (await page.store.create_session("new")).id
    await page.chat(new, "latest")
    current, rows, chat, line, banner = await page.handlers.on_load(request())
    assert current == new and {row["id"] for row in rows} == {old, new}
    assert contents(chat) == ["latest", "answer to latest"]
    assert line == f"model: {FAKE_MODEL}" and visible(banner) is False
    assert len(swept) == 1  # the background jobs catch up


async def test_switch_shows_the_chat_and_makes_the_one_left_an_episode(
    page: Page, monkeypatch: pytest.MonkeyPatch
) -> None:
    left: list[str] = []
    monkeypatch.setattr(
        chat_handlers, "schedule_segments", lambda ctx, sid, force: left.append(sid)
    )
    one = (await page.store.create_session("one")).id
    two = (await page.store.create_session("two")).id
    await page.chat(two, "hello")
    shown, rows, chat, *_ = await page.handlers.on_switch(two, one, request())
    assert shown == two and contents(chat) == ["hello", "answer to hello"]
    assert left == [one]
    with pytest.warns(UserWarning, match=re.escape(GONE)):
        shown, rows, chat, *_ = await page.handlers.on_switch("gone", one, request())
    assert shown == one and [row["id"] for row in rows] == [two, one]


async def test_new_chat_stores_nothing(page: Page) -> None:
    assert await page.handlers.on_new(None, request()) == (None, [], None, None)
    assert await page.store.list_sessions() == []


async def test_rename_and_an_empty_title_refused(page: Page) -> None:
    session = (await page.store.create_session("old")).id
    rows, renaming = await page.handlers.on_rename(session, "new title", request())
    assert rows[0]["title"] == "new title" and renaming is None
    with pytest.warns(UserWarning, match="cannot be empty"):
        refused = await page.handlers.on_rename(session, "  ", request())
    assert refused == (gr.skip(), gr.skip())
    assert (await page.store.get_session(session)).title == "new title"


async def test_rename_row_keeps_the_box_open_when_refused(page: Page) -> None:
    session = (await page.store.create_session("old")).id
    rows, renaming, row = await page.handlers.on_rename_row(session, "fine", request())
    assert rows[0]["title"] == "fine" and renaming is None and visible(row) is False
    with pytest.warns(UserWarning):
        kept = await page.handlers.on_rename_row(session, "", request())
    assert kept[1:] == (session, gr.skip())


async def test_delete_the_chat_in_view_shows_the_newest_left(page: Page) -> None:
    older = (await page.store.create_session("older")).id
    await page.chat(older, "kept")
    doomed = (await page.store.create_session("doomed")).id
    shown, rows, chat, deleting = await page.handlers.on_delete(doomed, doomed, request())
    assert shown == older and [row["id"] for row in rows] == [older]
    assert contents(chat) == ["kept", "answer to kept"] and deleting is None
    assert page.turns.stopped == [(doomed, None)]  # its turn is stopped first
    assert await page.store.get_session(doomed) is None


async def test_delete_another_chat_keeps_the_one_in_view(page: Page) -> None:
    here = (await page.store.create_session("here")).id
    other = (await page.store.create_session("other")).id
    *outputs, row = await page.handlers.on_delete_row(other, here, request())
    assert outputs[0] == gr.skip() and [r["id"] for r in outputs[1]] == [here]
    assert visible(row) is False


async def test_remove_note_clears_the_kept_note(page: Page) -> None:
    session = (await page.store.create_session("chat")).id
    await page.store.set_style_note(session, "short answers")
    shown, button = await page.handlers.show_note(session, request())
    assert "short answers" in shown["value"] and visible(button) is True
    shown, button = await page.handlers.on_remove_note(session, request())
    assert visible(shown) is False and visible(button) is False
    assert await page.store.style_note(session) is None


async def test_a_rows_menu_renames_deletes_and_pins(page: Page) -> None:
    ui = page.ui
    older = (await page.store.create_session("Trip “plans”")).id
    await page.store.create_session("newer")
    rows = await page.tab.rows()

    async def asked(action: str, chosen: str = older) -> dict[Any, Any]:
        data = gr.EventData(None, {"action": action, "id": chosen})
        return await page.handlers.on_row_action(rows, data, request())

    renaming = await asked("rename")
    assert renaming[ui.renaming] == older and renaming[ui.rename_box] == "Trip “plans”"
    assert visible(renaming[ui.rename_row]) is True and visible(renaming[ui.delete_row]) is False
    deleting = await asked("delete")
    assert deleting[ui.deleting] == older and visible(deleting[ui.delete_row]) is True
    assert "Trip" in deleting[ui.delete_words] and visible(deleting[ui.rename_row]) is False
    pinned = await asked("pin")
    first = pinned[ui.listing][0]
    assert (first["id"], first["pinned"]) == (older, True)
    assert (await page.store.get_session(older)).pinned
    unpinned = await asked("unpin")
    assert [row["pinned"] for row in unpinned[ui.listing]] == [False, False]
    assert set(await asked("rename", "gone")) == {ui.rename_row, ui.delete_row}
    assert set(await asked("explode")) == {ui.rename_row, ui.delete_row}


async def test_a_click_on_a_row_opens_its_chat(page: Page) -> None:
    ui = page.ui
    session = (await page.store.create_session("Tea")).id
    await page.chat(session, "jasmine?")
    opened = await page.handlers.on_open(None, gr.EventData(None, {"id": session}), request())
    assert opened[ui.session] == session and visible(opened[ui.rename_row]) is False
    assert contents(opened[ui.chatbot]) == ["jasmine?", "answer to jasmine?"]
    with pytest.warns(UserWarning, match="gone"):
        gone = await page.handlers.on_open(session, gr.EventData(None, {"id": "x"}), request())
    assert gone[ui.session] == session


async def test_a_chat_opened_from_the_list_is_followed_until_another_is_chosen(
    page: Page,
) -> None:
    ui, handlers = page.ui, page.handlers
    running = (await page.store.create_session("running")).id
    other = (await page.store.create_session("other")).id
    page.turns.hold = True
    sending = page.handlers.on_send({"text": "slow"}, running, "", False, [], request())
    await anext(sending)
    await handlers.on_open(None, gr.EventData(None, {"id": running}), request())
    following = handlers.follow_opened(running, [], request())
    assert await anext(following) == {ui.stop: gr.update(visible=True)}
    await handlers.on_open(running, gr.EventData(None, {"id": other}), request())
    assert await drain(following) == [{ui.stop: gr.skip()}]  # the old chat is let go
    page.turns.release()
    await drain(sending)


async def test_search_finds_a_message_and_opens_its_chat_at_it(page: Page) -> None:
    ui = page.ui
    session = (await page.store.create_session("Weekend")).id
    await page.chat(session, "hello", "shall we take the train to Bandung?", "bye")
    found = await page.handlers.on_search("  bandung ", request())
    assert found is not None and found["query"] == "  bandung "
    assert {hit["id"] for hit in found["hits"]} == {session}  # the question and its answer
    hit = next(hit for hit in found["hits"] if hit["line"].startswith("shall we"))
    assert await page.handlers.on_search("  ", request()) is None
    assert (await page.handlers.on_search("ferry", request()))["hits"] == []

    opened = await page.handlers.on_open_hit(None, gr.EventData(None, hit), request())
    assert opened[ui.session] == session and opened[ui.focus] == 2  # its bubble
    assert contents(opened[ui.chatbot])[2] == "shall we take the train to Bandung?"
    titled = gr.EventData(None, {**hit, "message": None})
    assert (await page.handlers.on_open_hit(None, titled, request()))[ui.focus] == -1


async def test_follow_with_no_turn_running_hides_stop(page: Page) -> None:
    updates = await drain(page.handlers.follow(None, [], request()))
    assert updates == [{page.ui.stop: gr.update(visible="hidden")}]


async def test_follow_reads_a_turn_another_process_runs_until_it_ends(
    page: Page, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(chat_handlers, "POLL_SECONDS", 0.01)
    session = (await page.store.create_session("chat")).id
    asked = await page.store.add_message(session, "user", "hello?")
    turn = await page.store.begin_turn(session, asked.id, "another-host:4242:token")
    await page.store.save_partial(turn, "Hel")
    ui, follow = page.ui, page.handlers.follow(session, [], request())
    assert await anext(follow) == {ui.stop: gr.update(visible=True)}
    polled = await anext(follow)
    assert contents(polled[ui.chatbot]) == ["hello?", "Hel"]
    await page.store.add_message(session, "assistant", "Hello!")
    await page.store.end_turn(turn)
    updates = await drain(follow)
    assert contents(updates[-2][ui.chatbot]) == ["hello?", "Hello!"]
    assert updates[-1] == {ui.stop: gr.update(visible="hidden")}


async def test_greet_shows_the_persona_greeting(page: Page) -> None:
    update = await page.handlers.greet(request())
    assert update["placeholder"].startswith("### ") and update["examples"]


async def test_a_refused_file_is_said_above_the_composer_and_the_text_stays(
    page: Page, tmp_path: Path
) -> None:
    archive = tmp_path / "photos.zip"
    archive.write_bytes(b"PK\x03\x04 an archive")
    [update] = await page.send("look", files=[str(archive)])
    assert update[page.ui.box] == {"text": "look", "files": []}  # the text stays, the file goes
    notice = update[page.ui.notice]
    assert notice["visible"] is True and notice["value"].startswith("⚠️ “photos.zip” can't be")
    assert "PNG, JPEG, WebP, GIF, .txt, .md, .pdf" in notice["value"]
    assert page.ui.chatbot not in update  # not in the chat, under the last answer
    assert page.turns.started == [] and await page.store.list_sessions() == []


async def test_a_pdf_goes_with_its_message_and_titles_a_new_chat_by_its_name(
    page: Page, tmp_path: Path
) -> None:
    pdf = tmp_path / "minutes.pdf"
    pdf.write_bytes(pdf_bytes(["We agreed on jasmine tea."]))
    updates = await page.send("", files=[str(pdf)])
    session = updates[0][page.ui.session]
    assert updates[0][page.ui.notice] == gr.update(value="", visible=False)
    [stored, _] = await page.store.messages(session)
    attached = stored.meta["attachment"]
    assert (attached["name"], attached["kind"], attached["pages"]) == ("minutes.pdf", "pdf", 1)
    assert attached["excerpt"] == "We agreed on jasmine tea." and attached["cut"] is False
    assert (await page.store.get_session(session)).title == "minutes.pdf"
    [asked, _] = updates[-1][page.ui.chatbot]
    assert asked.content == ["📎 **minutes\\.pdf** · PDF, 1 page"]  # the name, not the text


async def test_an_edit_confirmed_while_a_turn_runs_changes_nothing(page: Page) -> None:
    session = (await page.store.create_session("chat")).id
    asked = await page.chat(session, "first")
    page.turns.hold = True
    running = page.handlers.on_send({"text": "next"}, session, "", False, [], request())
    await anext(running)
    pending = {"id": asked[0], "text": "changed"}
    updates = await drain(page.handlers.on_resend(session, pending, [], request()))
    assert contents(updates[-1][page.ui.chatbot])[:2] == ["first", "answer to first"]
    assert len(page.turns.started) == 1
    page.turns.release()
    await drain(running)


def test_closing_a_row_and_an_example_prompt() -> None:
    assert chat_handlers.close_row() == (None, gr.update(visible=False))
    example = gr.SelectData(None, {"index": 0, "value": {"text": "Draw a cat"}})
    assert chat_handlers.example_message(example) == {"text": "Draw a cat", "files": []}


def test_choosing_a_chat_closes_the_sidebar_only_on_a_phone() -> None:
    assert chat_handlers.narrow_sidebar(400).open is False
    assert chat_handlers.narrow_sidebar(1280) == gr.skip()
    assert chat_handlers.narrow_sidebar(0) == gr.skip()  # width not known yet


class TwoPeople(OnePerson):
    """``People`` with ann (the login "ann") and bob (any other login), each their own home."""

    def __init__(self, ann: Any, bob: Any) -> None:
        super().__init__(ann)
        self.bob = bob
        self.accounts_on = True

    def factory(self, username: str | None) -> Any:
        return self.one if username == "ann" else self.bob


async def test_an_answer_reaches_only_the_askers_own_turns(tmp_path: Path) -> None:
    with gr.Blocks():
        trace = gr.Markdown()
        ui = layout(trace, sidebar()).ui
    people = TwoPeople(person(tmp_path / "ann"), person(tmp_path / "bob"))
    chats = Chats(people, trace)  # type: ignore[arg-type]
    handlers = ChatHandlers(chats, ui)
    ann_tab, bob_tab = chats.of(request("ann")), chats.of(request("bob"))
    assert ann_tab is not bob_tab
    ann_turns, bob_turns = FakeTurns(ann_tab.store), FakeTurns(bob_tab.store)
    ann_tab.turns, bob_tab.turns = ann_turns, bob_turns  # type: ignore[assignment]
    ann_turns.waiting.add("q1")  # ann's turn waits on question q1 in her chat s1
    allow = gr.SelectData(None, {"index": 0, "value": "allow:q1"})
    with pytest.warns(UserWarning, match=re.escape(NOT_WAITING)):
        await handlers.on_option("s1", allow, request("bob"))  # bob knows both ids
    assert ann_turns.decided == []
    await handlers.on_option("s1", allow, request("ann"))
    assert ann_turns.decided == [("s1", "q1", True)]


async def test_an_edited_first_message_keeps_its_file_and_retitles_the_chat(page: Page) -> None:
    session = (await page.store.create_session("what is it?")).id
    meta = Attachment("plan.pdf", "pdf", excerpt="The plan.", pages=1).meta()
    asked = await page.store.add_message(session, "user", "what is it?", meta=meta)
    await page.store.add_message(session, "assistant", "A plan.")
    edited = gr.EditData(None, {"index": 0, "previous_value": "what is it?", "value": "why?"})
    _, pending, _, _ = await page.handlers.on_edit(session, edited, request())
    assert pending == {"id": asked.id, "text": "why?"}
    await drain(page.handlers.on_resend(session, pending, [], request()))
    first = (await page.store.messages(session))[0]
    assert (first.content, first.meta) == ("why?", meta)
    assert (await page.store.get_session(session)).title == "why?"


async def test_a_title_the_person_chose_stays_after_an_edit(page: Page) -> None:
    session = (await page.store.create_session("first")).id
    asked = (await page.chat(session, "first", "second"))[0]
    await page.store.rename_session(session, "Holiday plans")
    pending = {"id": asked, "text": "first, edited"}
    await drain(page.handlers.on_resend(session, pending, [], request()))
    assert (await page.store.get_session(session)).title == "Holiday plans"


async def test_a_queued_message_shows_its_files_chip_while_it_waits(
    page: Page, tmp_path: Path
) -> None:
    session = (await page.store.create_session("chat")).id
    pdf = tmp_path / "menu.pdf"
    pdf.write_bytes(pdf_bytes(["Soup of the day."]))
    page.turns.hold = True
    first = page.handlers.on_send({"text": "one"}, session, "", False, [], request())
    await anext(first)
    second = page.handlers.on_send(
        {"text": "two", "files": [str(pdf)]}, session, "", False, [], request()
    )
    await anext(second)  # taken: queued behind the first
    update = await anext(second)
    while page.ui.chatbot not in update:
        update = await anext(second)
    assert update[page.ui.chatbot][-1].content == ["📎 **menu\\.pdf** · PDF, 1 page", "two"]
    page.turns.release()
    await drain(first)
    await drain(second)
