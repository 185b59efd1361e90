"""The store behind server-owned turns (deleting from a message on, running_turns,
sessions' last activity, migration 5) and how the chat shows stopped and interrupted
answers."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from app.chat_view import (
    INTERRUPTED_NOTE,
    STEP_STOPPED,
    STOPPED_NOTE,
    TurnView,
    answer_bubble,
    ending_of,
    history_entries,
    history_messages,
    tool_step,
    user_bubble,
)
from graph.events import Answer, TextDelta, ToolStart, TurnStopped, UserStored
from memory import Message, RunningTurn, format_time
from memory.sqlite.async_store import AsyncSqliteStore
from memory.sqlite.db import MIGRATIONS, connect
from memory.sqlite.retrieval import search_messages
from memory.sqlite.segments import list_segments, refresh_segments
from memory.sqlite.store import SqliteStore

START = datetime(2026, 11, 19, 12, 0, tzinfo=UTC)
NOW = datetime(2026, 11, 25, 9, 30, tzinfo=UTC)


class Clock:
    """A clock a test moves by hand."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock(START)


@pytest.fixture
def store(tmp_path: Path, clock: Clock) -> Iterator[SqliteStore]:
    """The store on a clock these tests move (conftest's ``async_store`` wraps it)."""
    s = SqliteStore.open_home(tmp_path, clock=clock)
    yield s
    s.close()


def msg(role: str, content: str = "", id: int = 0, **kwargs: Any) -> Message:
    """A stored message (times do not matter to the view)."""
    return Message(id=id, session_id="s", role=role, content=content, created_at="", **kwargs)


async def two_evenings(store: SqliteStore, clock: Clock) -> list[Message]:
    """Session "a": two evenings a day apart (two segments), with session "b" talking in
    between, so the ids of the two sessions interleave."""
    a1 = store.add_message("a", "user", "I baked sourdough bread", created_at=START)
    a2 = store.add_message(
        "a", "assistant", "Lovely crust?", created_at=START + timedelta(minutes=1)
    )
    b1 = store.add_message("b", "user", "Planning a hike to Merapi", created_at=START)
    later = START + timedelta(days=1)
    a3 = store.add_message("a", "user", "Tried a kimchi recipe", created_at=later)
    a4 = store.add_message("a", "assistant", "Was it tangy?", created_at=later)
    b2 = store.add_message("b", "assistant", "Start before dawn", created_at=later)
    clock.now = NOW  # both evenings are over: each is a segment
    assert await refresh_segments(store, "a") == 2
    return [a1, a2, b1, a3, a4, b2]


# delete_messages_from --------------------------------------------------------------


async def test_deleting_from_a_message_on_keeps_the_earlier_ones_and_other_sessions(
    store: SqliteStore, clock: Clock
) -> None:
    a1, a2, b1, a3, a4, b2 = await two_evenings(store, clock)
    (first, second) = list_segments(store, "a")
    assert (first.end_message_id, second.end_message_id) == (a2.id, a4.id)
    assert [m.id for m in search_messages(store, "kimchi")] == [a3.id]

    assert store.delete_messages_from("a", a3.id) == 2

    assert store.messages("a") == [a1, a2]
    assert store.messages("b") == [b1, b2]  # b2's id is past a3's: another session's
    assert list_segments(store, "a") == [first]
    assert search_messages(store, "kimchi") == []
    assert search_messages(store, "tangy") == []
    assert [m.id for m in search_messages(store, "sourdough")] == [a1.id]
    assert [m.id for m in search_messages(store, "dawn")] == [b2.id]


async def test_a_segment_ending_at_the_first_deleted_message_goes_too(
    store: SqliteStore, clock: Clock
) -> None:
    a1, a2, *_ = await two_evenings(store, clock)
    assert store.delete_messages_from("a", a2.id) == 3
    assert store.messages("a") == [a1]
    assert list_segments(store, "a") == []
    assert store.delete_messages_from("a", a2.id) == 0


async def test_deleting_through_the_async_store(
    store: SqliteStore, async_store: AsyncSqliteStore, clock: Clock
) -> None:
    a1, a2, b1, a3, a4, b2 = await two_evenings(store, clock)
    assert await async_store.delete_messages_from("a", a4.id) == 1
    assert await async_store.messages("a") == [a1, a2, a3]
    assert await async_store.messages("b") == [b1, b2]
    assert [s.end_message_id for s in list_segments(store, "a")] == [a2.id]
    assert search_messages(store, "tangy") == []


# list_sessions ----------------------------------------------------------------------


async def test_sessions_are_listed_with_their_last_activity(
    store: SqliteStore, async_store: AsyncSqliteStore, clock: Clock
) -> None:
    talked = store.create_session("Talked")
    clock.now = START + timedelta(minutes=5)
    store.add_message(talked.id, "user", "hi")
    clock.now = START + timedelta(minutes=7)
    store.add_message(talked.id, "assistant", "hello")
    clock.now = START + timedelta(hours=2)
    empty = store.create_session("Empty")

    listed = store.list_sessions()  # an empty chat is as active as when it was started
    assert [(s.id, s.created_at, s.active_at) for s in listed] == [
        (
            empty.id,
            format_time(START + timedelta(hours=2)),
            format_time(START + timedelta(hours=2)),
        ),
        (talked.id, format_time(START), format_time(START + timedelta(minutes=7))),
    ]
    assert listed == [empty, talked]  # active_at takes no part in comparing sessions
    assert [s.active_at for s in await async_store.list_sessions()] == [s.active_at for s in listed]


# running_turns ----------------------------------------------------------------------


async def test_a_running_turn_is_recorded_its_text_kept_and_forgotten_at_the_end(
    store: SqliteStore, clock: Clock
) -> None:
    user = store.add_message("s", "user", "Tell me a story")
    turn_id = store.begin_turn("s", user.id, "host:1:token")
    assert store.running_turns() == [RunningTurn(turn_id, "s", user.id, "host:1:token", "")]
    clock.now = START + timedelta(seconds=3)
    store.save_partial(turn_id, "Once upon")
    assert [t.partial for t in store.running_turns()] == ["Once upon"]
    updated = store.conn.execute(
        "SELECT started_at, updated_at FROM running_turns WHERE id = ?", (turn_id,)
    ).fetchone()
    assert tuple(updated) == (format_time(START), format_time(START + timedelta(seconds=3)))
    store.end_turn(turn_id)
    assert store.running_turns() == []
    assert store.messages("s") == [user]


async def test_closing_an_interrupted_turn_stores_its_text_once(
    store: SqliteStore, async_store: AsyncSqliteStore
) -> None:
    user = store.add_message("s", "user", "Tell me a story")
    turn_id = store.begin_turn("s", user.id, "host:1:token")
    store.save_partial(turn_id, "Once upon a time")
    (turn,) = store.running_turns()

    answer = store.close_interrupted(turn, {"interrupted": True})
    assert answer is not None
    assert (answer.session_id, answer.role, answer.content, answer.meta) == (
        "s",
        "assistant",
        "Once upon a time",
        {"interrupted": True},
    )
    assert store.close_interrupted(turn, {"interrupted": True}) is None
    assert store.messages("s") == [user, answer]
    assert store.running_turns() == []


async def test_two_processes_closing_the_same_turn_store_one_answer(
    store: SqliteStore, async_store: AsyncSqliteStore
) -> None:
    user = store.add_message("s", "user", "Tell me a story")
    turn_id = store.begin_turn("s", user.id, "host:1:token")
    store.save_partial(turn_id, "Once")
    (turn,) = await async_store.running_turns()
    other = SqliteStore(store.path, clock=store.clock)  # another process on the same file
    try:
        results = await asyncio.gather(
            async_store.close_interrupted(turn, {"interrupted": True}),
            asyncio.to_thread(other.close_interrupted, turn, {"interrupted": True}),
        )
    finally:
        other.close()
    stored = [result for result in results if result is not None]
    assert len(stored) == 1 and stored[0].content == "Once"
    assert store.messages("s") == [user, stored[0]]
    assert await async_store.running_turns() == []


async def test_the_async_store_records_running_turns(async_store: AsyncSqliteStore) -> None:
    user = await async_store.add_message("s", "user", "hi")
    turn_id = await async_store.begin_turn("s", user.id, "host:1:token")
    await async_store.save_partial(turn_id, "Hel")
    assert await async_store.running_turns() == [
        RunningTurn(turn_id, "s", user.id, "host:1:token", "Hel")
    ]
    await async_store.end_turn(turn_id)
    assert await async_store.running_turns() == []


def test_a_version_4_database_upgrades_to_the_latest_and_keeps_its_rows(tmp_path: Path) -> None:
    path = tmp_path / "companion.db"
    old = connect(path)
    old.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
    for version, script in enumerate(MIGRATIONS[:4], start=1):
        old.executescript(script)
        old.execute("INSERT INTO schema_version (version) VALUES (?)", (version,))
    old.execute(
        "INSERT INTO sessions (id, title, created_at) VALUES ('s', 'Old chat', ?)",
        (format_time(START),),
    )
    old.execute(
        "INSERT INTO messages (session_id, role, content, created_at) VALUES ('s', 'user', ?, ?)",
        ("remember the lighthouse", format_time(START)),
    )
    old.commit()
    assert "running_turns" not in {
        row[0] for row in old.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
    }
    old.close()

    store = SqliteStore(path, clock=lambda: NOW)
    try:
        assert store.health() == ("ok", len(MIGRATIONS))
        (message,) = store.messages("s")
        assert (message.role, message.content) == ("user", "remember the lighthouse")
        assert store.get_session("s") is not None
        assert store.running_turns() == []
        turn_id = store.begin_turn("s", message.id, "host:1:token")
        assert [t.id for t in store.running_turns()] == [turn_id]
        assert [m.id for m in search_messages(store, "lighthouse")] == [message.id]
    finally:
        store.close()


# the chat view ----------------------------------------------------------------------


def test_history_entries_name_the_stored_user_message_of_each_user_bubble() -> None:
    messages = [
        msg("user", "weather?", id=1),
        msg(
            "weather_tool",
            "🔧 TOOL RESULT — WEATHER\n\nTokyo\n\n---",
            id=2,
            tool_name="weather",
            meta={"arguments": {"location": "Tokyo"}, "result": {"temperature": 14.2}},
        ),
        msg("assistant", "14 °C in Tokyo.", id=3),
        msg("user", "and tomorrow?", id=4),
        msg("assistant", "Cooler", id=5, meta={"stopped": True}),
    ]
    entries = history_entries(messages)
    assert [message_id for _, message_id in entries] == [1, None, None, 4, None]
    assert [bubble for bubble, _ in entries] == history_messages(messages)
    assert [bubble.role for bubble, _ in entries] == [
        "user",
        "assistant",
        "assistant",
        "user",
        "assistant",
    ]


def test_stopped_and_interrupted_answers_say_so_after_their_text() -> None:
    stopped, interrupted, plain = history_messages(
        [
            msg("assistant", "Once upon", meta={"stopped": True}),
            msg("assistant", "Half a story", meta={"interrupted": True}),
            msg("assistant", "A whole story."),
        ]
    )
    assert stopped.content == f"Once upon\n\n{STOPPED_NOTE}"
    assert interrupted.content == f"Half a story\n\n{INTERRUPTED_NOTE}"
    assert plain.content == "A whole story."
    (nothing_yet,) = history_messages([msg("assistant", "", meta={"stopped": True})])
    assert nothing_yet.content == STOPPED_NOTE
    assert ending_of({"stopped": True}) == STOPPED_NOTE
    assert ending_of({"interrupted": True}) == INTERRUPTED_NOTE
    assert ending_of({"model": "x"}) == ""


def test_a_stopped_turn_streams_into_one_bubble_marked_stopped() -> None:
    user = msg("user", "Hello?", id=6)
    view = TurnView([])
    for event in (UserStored(user), TextDelta("Hel"), TurnStopped(7), Answer("Hel", 7, [], [])):
        view.apply(event)
    assert view.stopped and view.answer == "Hel" and view.user_message_id == 6
    assert view.messages == [user_bubble("Hello?"), answer_bubble("Hel", ending=STOPPED_NOTE)]
    assert view.messages[1].content == f"Hel\n\n{STOPPED_NOTE}"


def test_a_step_still_running_when_stopped_is_done_and_says_stopped() -> None:
    view = TurnView([])
    view.apply(UserStored(msg("user", "search it", id=1)))
    view.apply(ToolStart("c1", "web_search", {"query": "kimchi"}, None))
    assert (view.messages[1].metadata or {}).get("status") == "pending"
    view.apply(TurnStopped(2))
    view.apply(Answer("", 2, [], []))
    step = view.messages[1]
    running = tool_step("web_search", {"query": "kimchi"}, None)
    assert step.content == running.content
    assert step.metadata == {**(running.metadata or {}), "status": "done", "log": STEP_STOPPED}
    assert STEP_STOPPED == "stopped"
    assert [m.content for m in view.messages[2:]] == [STOPPED_NOTE]
