"""The Memories tab's "Your data" handlers (app.data_view.DataHandlers), called as Gradio
would call them, on real SQLite stores in a temporary home: no browser."""

from __future__ import annotations

import asyncio
import json
import zipfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import gradio as gr
import pytest

from app.data_view import (
    BUSY,
    DELETE_STOPPED,
    EXPORTS,
    NOT_CONFIRMED,
    NOT_DELETED,
    DataHandlers,
    asking,
    bar,
    confirmed,
    keep_data,
    megabytes,
)
from app.exports import MANIFEST
from app.imports import BadExport, import_export
from graph.setup import ContextFactory, People
from memory.sqlite.accounts import SqliteAccounts
from tests.support.app_fakes import FAKE_MODEL, OnePerson, person, request
from tests.support.chat_model import ScriptedChatModel
from tests.support.exports import CHATGPT, CLAUDE
from tests.unit.test_chat_handlers import Page

STEP_SECONDS = 5.0  # the most any step here may take on a busy machine
NO_DOWNLOAD = gr.update(visible=False)


class TwoPeople:
    """``People`` with accounts on: each login has its own store."""

    accounts_on = True

    def __init__(self, home: Path) -> None:
        self.by_name = {name: person(home / name) for name in ("ana", "budi")}

    def factory(self, username: str | None) -> ContextFactory:
        return self.by_name[username or ""]


class Gate:
    """Holds a store's imports after the first chat until ``open``: an import caught in
    the middle."""

    def __init__(self, store: Any) -> None:
        self.opened = asyncio.Event()
        self.first_in = asyncio.Event()
        self.real = store.import_chat
        store.import_chat = self.import_chat

    async def import_chat(self, chat: Any) -> Any:
        if self.first_in.is_set():
            await self.opened.wait()
        session = await self.real(chat)
        self.first_in.set()
        return session


async def drain(updates: AsyncIterator[Any]) -> list[Any]:
    return [update async for update in updates]


def titles(rows: list[dict[str, str]]) -> set[str]:
    return {row["title"] for row in rows}


@pytest.fixture
def data(tmp_path: Path) -> DataHandlers:
    return DataHandlers(OnePerson(person(tmp_path)))  # type: ignore[arg-type]


def store_of(handlers: DataHandlers, username: str | None = None) -> Any:
    return handlers.people.factory(username).store


async def filled(handlers: DataHandlers) -> Any:
    """The person's store with ChatGPT's export imported and one memory saved."""
    store = store_of(handlers)
    await drain(handlers.on_import(str(CHATGPT), request()))
    await store.create_memory("identity", "name", "Budi")
    return store


async def test_an_upload_is_imported_with_progress_then_its_report_and_the_new_chats(
    data: DataHandlers,
) -> None:
    updates = await drain(data.on_import(str(CHATGPT), request()))
    statuses = [status for status, _, _ in updates]
    assert statuses[0] == f"⏳ Checking {CHATGPT.name}…"  # shown before anything is read
    status, upload, rows = updates[-1]
    assert status.splitlines() == [
        "✅ Imported 2 chats with 9 messages from ChatGPT (2 conversations in it).",
        "- skipped 1: content type thoughts",
        "- skipped 1: hidden message",
        "- skipped 1: image or file",
        "- skipped 1: message to a tool",
        "- skipped 1: system message",
        "- skipped 3: tool output",
    ]
    assert upload is None  # the control is emptied for the next file
    assert titles(rows) == {"Lisbon trip", "Sourdough starter"}  # the sidebar's new rows
    assert all(rows_now == gr.skip() for _, _, rows_now in updates[:-1])
    store = store_of(data)
    sessions = await store.list_sessions()
    assert [row["id"] for row in rows] == [s.id for s in sessions]
    assert all([await store.recent_segments()])  # episodes cut, as `companion import` does


async def test_importing_the_same_file_again_adds_nothing_and_says_so(data: DataHandlers) -> None:
    await drain(data.on_import(str(CLAUDE), request()))
    status, _, rows = (await drain(data.on_import(str(CLAUDE), request())))[-1]
    assert status.startswith("✅ Imported 0 chats with 0 messages from Claude")
    assert "- 2 chats were imported before: left as they were." in status.splitlines()
    assert len(rows) == 2 and len(await store_of(data).list_sessions()) == 2


@pytest.mark.parametrize("content", ["[{", json.dumps([{"title": "x", "something": []}])])
async def test_a_bad_file_says_the_importers_line_adds_nothing_and_the_next_file_goes_in(
    data: DataHandlers, tmp_path: Path, content: str
) -> None:
    bad = tmp_path / "upload" / "conversations.json"
    bad.parent.mkdir()
    bad.write_text(content)
    with pytest.raises(BadExport) as refused:
        await import_export(person(tmp_path / "elsewhere").store, bad)
    status, upload, rows = (await drain(data.on_import(str(bad), request())))[-1]
    assert status == f"❌ Cannot import conversations.json: {refused.value}"
    assert upload is None and rows == []
    assert await store_of(data).list_sessions() == []
    status, _, rows = (await drain(data.on_import(str(CHATGPT), request())))[-1]
    assert status.startswith("✅ Imported 2 chats") and len(rows) == 2


async def test_a_message_sent_during_an_import_is_answered(tmp_path: Path) -> None:
    chat = Page(tmp_path)
    data = DataHandlers(chat.chats.people)
    gate = Gate(chat.store)
    following = data.on_import(str(CHATGPT), request())
    async with asyncio.timeout(STEP_SECONDS):
        await anext(following)
        await gate.first_in.wait()
        progress = await anext(following)  # the page is told how far the import got
    assert progress[0].startswith("⏳ Importing conversations: 1 of 2")
    assert bar(1, 2) in progress[0]
    async with asyncio.timeout(STEP_SECONDS):
        sent = await chat.send("hello while importing")
    answered = sent[-1][chat.ui.chatbot]
    assert str(answered[-1].content) == "echo: hello while importing"
    job = data.jobs[id(data.people.factory(None))]
    assert not job.finished  # it was answered while the import was held mid-way
    gate.opened.set()
    async with asyncio.timeout(STEP_SECONDS):
        status, _, rows = (await drain(following))[-1]
    assert status.startswith("✅ Imported 2 chats") and len(rows) == 3


async def test_one_job_at_a_time_and_it_outlives_the_page_that_started_it(
    data: DataHandlers,
) -> None:
    gate = Gate(store_of(data))
    first = data.on_import(str(CHATGPT), request())
    async with asyncio.timeout(STEP_SECONDS):
        await anext(first)
        await gate.first_in.wait()
        assert await drain(data.on_import(str(CLAUDE), request())) == [(BUSY, None, gr.skip())]
        shown = data.on_show(request())  # the tab chosen again while it runs
        assert (await anext(shown))[0].startswith("⏳ Importing conversations: 1 of 2")
        assert await drain(data.on_export(request())) == [(BUSY, gr.skip())]
    await first.aclose()  # the page that uploaded it is closed: the import goes on
    gate.opened.set()
    async with asyncio.timeout(STEP_SECONDS):
        assert (await drain(shown))[-1][0].startswith("✅ Imported 2 chats")
    sessions = await store_of(data).list_sessions()
    assert {s.title for s in sessions} == {"Lisbon trip", "Sourdough starter"}  # not Claude's


async def test_nothing_to_show_before_a_job(data: DataHandlers) -> None:
    assert await drain(data.on_show(request())) == [("", NO_DOWNLOAD)]
    assert await drain(data.on_import(None, request())) == []


async def test_with_accounts_the_history_goes_into_the_logged_in_persons_store(
    tmp_path: Path,
) -> None:
    data = DataHandlers(TwoPeople(tmp_path))  # type: ignore[arg-type]
    status, _, rows = (await drain(data.on_import(str(CHATGPT), request("budi"))))[-1]
    assert status.startswith("✅ Imported 2 chats") and len(rows) == 2
    assert len(await store_of(data, "budi").list_sessions()) == 2
    assert await store_of(data, "ana").list_sessions() == []
    assert await drain(data.on_show(request("ana"))) == [("", NO_DOWNLOAD)]  # not budi's job


async def test_a_store_failure_midway_keeps_the_chats_before_it_and_says_so(
    data: DataHandlers, caplog: pytest.LogCaptureFixture
) -> None:
    store = store_of(data)
    real = store.import_chat
    calls = 0

    async def failing(chat: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == 2:
            raise OSError("disk full")
        return await real(chat)

    store.import_chat = failing
    status, _, rows = (await drain(data.on_import(str(CHATGPT), request())))[-1]
    assert status.startswith(f"❌ The import of {CHATGPT.name} stopped (OSError: disk full).")
    assert len(rows) == 1 and "importing chatgpt_conversations.json failed" in caplog.text
    store.import_chat = real
    again = await import_export(store, CHATGPT)  # importing the file again adds the rest
    assert (again.chats, again.already) == (1, 1)


def test_the_limit_and_the_bar_in_words() -> None:
    assert megabytes(20 * 1024 * 1024) == "20 MB"
    assert bar(0, 4) == f"`{'▱' * 20}` 0%"
    assert bar(1, 4) == f"`{'▰' * 5}{'▱' * 15}` 25%"


async def test_delete_all_asks_for_the_word_then_leaves_nothing_and_an_empty_chat(
    data: DataHandlers,
) -> None:
    store = await filled(data)
    assert asking(True) == (gr.update(visible=True), "")
    assert keep_data() == (gr.update(visible=False), "", NOT_DELETED)
    for typed in ("", "yes", "delete it"):
        refused = await data.on_delete_all(typed, request())
        assert refused == (NOT_CONFIRMED, *(gr.skip(),) * 6)
    assert len(await store.list_sessions()) == 2
    status, row, box, gone, rows, session, chat = await data.on_delete_all(" Delete ", request())
    assert status.startswith("🗑️ Deleted 2 chats, 9 messages, 1 memories")
    assert (row, box, gone, rows, session, chat) == (
        gr.update(visible=False),
        "",
        False,
        [],
        None,
        [],
    )
    assert await store.list_sessions() == [] and await store.ranked_memories(store.clock()) == []
    assert await store.recent_segments() == []
    assert await drain(data.on_show(request())) == [("", NO_DOWNLOAD)]  # the import is forgotten


async def test_a_turn_running_during_the_deletion_stops_first_and_leaves_nothing(
    data: DataHandlers,
) -> None:
    store = store_of(data)
    session = await store.create_session("Running")
    asked = await store.add_message(session.id, "user", "tell me a long story")
    record = await store.begin_turn(session.id, asked.id, "another-process")

    async def turn_elsewhere() -> None:
        """Another process's turn: on Stop it stores its text so far, then ends."""
        while not await store.stop_requested(record):
            await asyncio.sleep(0.05)
        await store.add_message(session.id, "assistant", "Once upon a", meta={"stopped": True})
        await store.end_turn(record)

    running = asyncio.get_running_loop().create_task(turn_elsewhere())
    async with asyncio.timeout(STEP_SECONDS):
        status, *_ = await data.on_delete_all("delete", request())
    assert running.done() and status.startswith("🗑️ Deleted 1 chats, 2 messages")
    assert await store.list_sessions() == [] and await store.running_turns() == []


async def test_deleting_during_an_import_stops_it(data: DataHandlers) -> None:
    gate = Gate(store_of(data))
    following = data.on_import(str(CHATGPT), request())
    async with asyncio.timeout(STEP_SECONDS):
        await anext(following)
        await gate.first_in.wait()
        status, *_ = await data.on_delete_all("delete", request())
        assert status.startswith("🗑️ Deleted 1 chats")
        assert (await drain(following))[-1][0] == f"❌ {DELETE_STOPPED}"
    assert await store_of(data).list_sessions() == []


async def test_with_accounts_delete_all_takes_the_login_and_logs_out_and_no_one_else(
    tmp_path: Path,
) -> None:
    accounts = SqliteAccounts.open_home(tmp_path)
    for name in ("ana", "budi"):
        accounts.add(name, f"{name}-password-1")
    people = People(
        {"home": str(tmp_path), "provider": "openai-compatible", "chat_model": FAKE_MODEL},
        env={},
        chat_model=ScriptedChatModel(),
    )
    data = DataHandlers(people)
    for name in ("ana", "budi"):
        await drain(data.on_import(str(CLAUDE), request(name)))
    ana, old_budi = people.factory("ana").store, people.factory("budi")
    refused, *_ = await data.on_delete_all("ana", request("budi"))  # someone else's name
    assert refused == NOT_CONFIRMED
    status, _, _, gone, rows, _, _ = await data.on_delete_all("Budi", request("budi"))
    assert status.startswith("🗑️ Deleted 2 chats") and status.endswith("the login of budi.")
    assert gone is True and rows == []  # the page goes to the login
    assert accounts.get("budi") is None and accounts.get("ana") is not None
    assert len(await ana.list_sessions()) == 2
    accounts.add("budi", "budi-password-2")  # a new budi is a new person, with a new folder
    again = people.factory("budi")
    assert again is not old_budi and again.store.location != old_budi.store.location
    assert await again.store.list_sessions() == []


def test_the_confirming_word() -> None:
    assert confirmed("delete", None) and confirmed("  DELETE ", "ana")
    assert confirmed("Ana", "ana") and not confirmed("ana", None)
    assert not confirmed("", None) and not confirmed(None, "ana")


async def test_export_writes_one_zip_of_everything_to_download_and_keeps_only_the_newest(
    data: DataHandlers,
) -> None:
    store = await filled(data)
    updates = await drain(data.on_export(request()))
    assert updates[0] == ("⏳ Preparing your export…", NO_DOWNLOAD)
    status, button = updates[-1]
    assert status.startswith("✅ Exported 2 chats with 9 messages, 1 memories, ")
    assert status.endswith("images: the zip is ready to download.")
    zipped = Path(button["value"])
    assert button["visible"] and zipped.parent == store.media_dir / EXPORTS  # served to them only
    with zipfile.ZipFile(zipped) as archive:
        names = archive.namelist()
    assert MANIFEST in names and "memories.json" in names
    assert len([name for name in names if name.endswith(".json")]) == 2 + 4  # chats, the rest
    assert (await drain(data.on_show(request())))[-1] == (status, button)  # shown on coming back
    _, again = (await drain(data.on_export(request())))[-1]
    assert list((store.media_dir / EXPORTS).iterdir()) == [Path(again["value"])]


async def test_a_failed_export_says_why_and_leaves_no_zip(data: DataHandlers) -> None:
    store = store_of(data)
    (store.media_dir / EXPORTS).write_text("a file where the folder goes")
    status, button = (await drain(data.on_export(request())))[-1]
    assert status.startswith("❌ The export failed (") and button == NO_DOWNLOAD


async def held(store: Any) -> tuple[dict[str, list[tuple[str, str, str]]], set[tuple[str, ...]]]:
    """A person's chats by title (each message's role, text and time) and memories."""
    chats = {
        s.title: [(m.role, m.content, str(m.created_at)) for m in await store.messages(s.id)]
        for s in await store.list_sessions()
    }
    memories = {(m.category, m.key, m.value) for m in await store.ranked_memories(store.clock())}
    return chats, memories


async def test_the_export_uploaded_to_another_person_gives_back_the_chats_and_memories(
    tmp_path: Path,
) -> None:
    data = DataHandlers(TwoPeople(tmp_path))  # type: ignore[arg-type]
    await drain(data.on_import(str(CHATGPT), request("ana")))
    await store_of(data, "ana").create_memory("identity", "name", "Ana")
    _, button = (await drain(data.on_export(request("ana"))))[-1]
    status, _, rows = (await drain(data.on_import(button["value"], request("budi"))))[-1]
    assert status.startswith("✅ Imported 2 chats with 9 messages from Companion")
    assert len(rows) == 2
    assert await held(store_of(data, "budi")) == await held(store_of(data, "ana"))
