"""The store's contract, run on both backends: SQLite (``AsyncSqliteStore``) and Postgres
(``PgStore``); then what only Postgres has to prove: people sharing one database never see
each other's rows, whatever SQL the app role runs."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path

import psycopg
import pytest
from psycopg import errors
from psycopg_pool import AsyncConnectionPool

from memory import (
    Edit,
    EditConflict,
    InvalidMemory,
    Memory,
    MemoryExists,
    MemoryNotFound,
    Message,
    RunningTurn,
    Segment,
    Session,
    StoreError,
    TurnReads,
    format_time,
)
from memory.postgres import sql_guard as pg_sql_guard
from memory.postgres.schema import APP_TABLES, PG_MIGRATIONS, migrate
from memory.postgres.store import PgStore
from memory.rules import scoring
from memory.rules.episodes import split_spans
from memory.sqlite.async_store import AsyncSqliteStore
from memory.sqlite.store import Store
from tests.conftest import FIXED_NOW
from tests.support.postgres import APP_ROLE, PostgresServer

ContractStore = AsyncSqliteStore | PgStore
_people = itertools.count()


@pytest.fixture(scope="module")
def postgres() -> Iterator[PostgresServer]:
    """One server for the module, migrated once; each test is a new person on it."""
    with PostgresServer() as server:
        asyncio.run(migrate(server.admin_url, APP_ROLE))
        asyncio.run(pg_sql_guard.prepare(server.admin_url))
        yield server


def ticking() -> Callable[[], datetime]:
    """A clock a second further on at every reading, from FIXED_NOW."""
    ticks = itertools.count()
    return lambda: FIXED_NOW + timedelta(seconds=next(ticks))


def new_person() -> str:
    return f"person-{next(_people)}"


@pytest.fixture(params=["sqlite", "postgres"])
async def store(
    request: pytest.FixtureRequest, tmp_path: Path, postgres: PostgresServer
) -> AsyncIterator[ContractStore]:
    if request.param == "sqlite":
        sqlite = AsyncSqliteStore(Store.open_home(tmp_path / "home", clock=ticking()))
        yield sqlite
        await sqlite.close()
    else:
        pg = await PgStore.open(postgres.url, new_person(), clock=ticking())
        yield pg
        await pg.close()


async def summarise(messages: list[Message]) -> str:
    """A scripted summariser: the span's words in order."""
    return " / ".join(message.content for message in messages)


async def cut_segments(store: ContractStore, session_id: str) -> None:
    """Cut the session's unsegmented messages into segments summarised by ``summarise``,
    each backend its own way: SQLite through memory.segments (a forced refresh), Postgres
    (which cannot cut segments yet) by storing the same spans with ``add_segment``."""
    if isinstance(store, AsyncSqliteStore):
        await store.refresh_segments(session_id, summarise, force=True, tz="UTC")
        return
    done = max(
        (s.end_message_id for s in await store.recent_segments(1000) if s.session_id == session_id),
        default=0,
    )
    fresh = [m for m in await store.messages(session_id) if m.id > done]
    for span in split_spans(fresh):
        await store.add_segment(session_id, span, await summarise(span), "model")


def spans(segments: list[Segment]) -> list[tuple[str, str, str, str]]:
    """What a segment says, without its id (each backend numbers its own)."""
    return [(s.session_id, s.start_at, s.end_at, s.summary) for s in segments]


def without_id(memories: list[Memory]) -> list[Memory]:
    return [replace(memory, id="") for memory in memories]


# the contract ---------------------------------------------------------------------


async def test_sessions_are_created_read_and_listed_by_last_activity(
    store: ContractStore,
) -> None:
    first = await store.create_session("Dinner")
    second = await store.create_session()
    assert first.title == "Dinner" and second.title == "New chat"
    assert first.created_at == format_time(FIXED_NOW)
    assert await store.get_session(first.id) == first
    assert await store.get_session("nope") is None
    assert [s.id for s in await store.list_sessions()] == [second.id, first.id]

    said = await store.add_message(first.id, "user", "hello")
    listed = await store.list_sessions()
    assert [s.id for s in listed] == [first.id, second.id]
    assert listed[0].active_at == said.created_at
    assert listed[1].active_at == second.created_at
    assert listed[0].created_at == first.created_at


async def test_rename_refuses_an_empty_title_and_an_unknown_session(
    store: ContractStore,
) -> None:
    session = await store.create_session()
    await store.rename_session(session.id, "  Trip to Bali  ")
    renamed = await store.get_session(session.id)
    assert renamed is not None and renamed.title == "Trip to Bali"
    with pytest.raises(StoreError, match="empty"):
        await store.rename_session(session.id, "   ")
    with pytest.raises(StoreError, match="no session"):
        await store.rename_session("unknown", "Title")


async def test_style_note_is_kept_and_blank_removes_it(store: ContractStore) -> None:
    session = await store.create_session()
    assert await store.style_note(session.id) is None
    await store.set_style_note(session.id, "  short answers ")
    assert await store.style_note(session.id) == "short answers"
    await store.set_style_note(session.id, "  ")
    assert await store.style_note(session.id) is None
    await store.set_style_note(session.id, "again")
    await store.set_style_note(session.id, None)
    assert await store.style_note(session.id) is None
    assert await store.style_note("unknown") is None
    with pytest.raises(StoreError, match="no session"):
        await store.set_style_note("unknown", "note")


async def test_messages_round_trip_in_order_and_create_their_session(
    store: ContractStore,
) -> None:
    asked = await store.add_message("fresh", "user", "weather in Ubud?")
    answered = await store.add_message(
        "fresh",
        "weather_tool",
        "🔧 TOOL RESULT — WEATHER",
        tool_name="weather",
        tool_call_id="call-1",
        meta={"raw": {"temp": 28.5}, "when": FIXED_NOW, "ok": True},
    )
    drawn = await store.add_message("fresh", "assistant", "Here", image_path="media/cat.png")
    session = await store.get_session("fresh")
    assert session == Session("fresh", "New chat", None, asked.created_at)

    stored = await store.messages("fresh")
    assert [m.id for m in stored] == [asked.id, answered.id, drawn.id]
    assert asked.id < answered.id < drawn.id
    assert stored[0] == asked and stored[2] == drawn
    # meta is stored as JSON: what is not JSON (a datetime) comes back as text.
    assert stored[1].meta == {"raw": {"temp": 28.5}, "when": str(FIXED_NOW), "ok": True}
    assert stored[1] == replace(answered, meta=stored[1].meta)
    assert (answered.tool_name, answered.tool_call_id, answered.is_tool) == (
        "weather",
        "call-1",
        True,
    )
    assert drawn.image_path == "media/cat.png" and asked.meta == {}
    assert asked.created_at == format_time(FIXED_NOW)
    assert await store.count_messages("fresh") == 3
    assert await store.count_messages("other") == 0
    assert await store.messages("other") == []
    when = datetime(2026, 1, 2, 3, 4, 5, 678, tzinfo=FIXED_NOW.tzinfo)
    dated = await store.add_message("fresh", "user", "dated", created_at=when)
    assert dated.created_at == "2026-01-02 03:04:05"
    with pytest.raises(StoreError, match="role"):
        await store.add_message("fresh", "robot", "beep")
    assert await store.count_messages("fresh") == 4


async def test_delete_messages_from_cuts_the_session_from_that_id_on(
    store: ContractStore,
) -> None:
    one = await store.add_message("a", "user", "one")
    two = await store.add_message("a", "assistant", "two")
    await store.add_message("a", "user", "three")
    other = await store.add_message("b", "user", "elsewhere")
    assert await store.delete_messages_from("a", two.id) == 2
    assert await store.messages("a") == [one]
    assert await store.messages("b") == [other]
    assert await store.delete_messages_from("a", two.id) == 0


async def test_deleting_a_session_deletes_everything_in_it(store: ContractStore) -> None:
    doomed = await store.create_session("Doomed")
    kept = await store.add_message("kept", "user", "stay")
    asked = await store.add_message(doomed.id, "user", "go")
    await store.begin_turn(doomed.id, asked.id, "owner-1")
    await store.delete_session(doomed.id)
    assert await store.get_session(doomed.id) is None
    assert await store.messages(doomed.id) == []
    assert await store.count_messages(doomed.id) == 0
    assert await store.running_turns() == []
    assert [s.id for s in await store.list_sessions()] == ["kept"]
    assert await store.messages("kept") == [kept]
    await store.delete_session("unknown")


async def test_a_running_turn_keeps_its_partial_answer_until_it_ends(
    store: ContractStore,
) -> None:
    asked = await store.add_message("s", "user", "tell me a story")
    first = await store.begin_turn("s", asked.id, "owner-1")
    second = await store.begin_turn("s", asked.id, "owner-2")
    assert await store.running_turns() == [
        RunningTurn(first, "s", asked.id, "owner-1", ""),
        RunningTurn(second, "s", asked.id, "owner-2", ""),
    ]
    await store.save_partial(first, "Once upon")
    await store.save_partial(first, "Once upon a time")
    await store.end_turn(second)
    assert await store.running_turns() == [
        RunningTurn(first, "s", asked.id, "owner-1", "Once upon a time")
    ]
    await store.end_turn(first)
    assert await store.running_turns() == []


async def test_an_interrupted_turn_is_closed_once_with_its_text_so_far(
    store: ContractStore,
) -> None:
    asked = await store.add_message("s", "user", "tell me a story")
    turn_id = await store.begin_turn("s", asked.id, "dead-process")
    await store.save_partial(turn_id, "Once upon")
    (turn,) = await store.running_turns()
    closed = await store.close_interrupted(turn, {"interrupted": True})
    assert closed is not None
    assert (closed.role, closed.content, closed.meta) == (
        "assistant",
        "Once upon",
        {"interrupted": True},
    )
    assert await store.messages("s") == [asked, closed]
    assert await store.running_turns() == []
    assert await store.close_interrupted(turn, {"interrupted": True}) is None
    assert await store.count_messages("s") == 2


async def test_profile_values_are_text_and_none_removes_a_key(store: ContractStore) -> None:
    assert await store.profile() == {}
    await store.set_profile({"persona": "journal", "latitude": -8.5, "days": 3})
    assert await store.profile() == {"persona": "journal", "latitude": "-8.5", "days": "3"}
    await store.set_profile({"persona": "coach", "days": None, "missing": None})
    assert await store.profile() == {"persona": "coach", "latitude": "-8.5"}


async def test_memories_are_created_updated_and_deleted_with_sqlites_errors(
    store: ContractStore,
) -> None:
    name = await store.create_memory(" Identity ", "  name ", " Budi ", now=FIXED_NOW)
    assert replace(name, id="") == Memory(
        "",
        "identity",
        "name",
        "Budi",
        format_time(FIXED_NOW),
        format_time(FIXED_NOW),
        scoring.INITIAL_STABILITY,
        scoring.INITIAL_DIFFICULTY,
        None,
        0,
    )
    with pytest.raises(MemoryExists, match=r"identity/NAME already exists \(value: 'Budi'\)"):
        await store.create_memory("identity", "NAME", "Other")
    with pytest.raises(InvalidMemory, match="unknown category 'hobbies'; use one of"):
        await store.create_memory("hobbies", "chess", "yes")
    with pytest.raises(InvalidMemory, match="key cannot be empty"):
        await store.create_memory("identity", "  ", "yes")
    with pytest.raises(InvalidMemory, match="value cannot be empty"):
        await store.create_memory("identity", "age", " ")
    # Keys fold ASCII letters only, as SQLite's NOCASE does.
    await store.create_memory("signals", "café", "quiet", now=FIXED_NOW)
    await store.create_memory("signals", "CAFÉ", "loud", now=FIXED_NOW)

    later = FIXED_NOW + timedelta(days=3)
    renamed = await store.update_memory(
        name.id, " Budi Santoso ", key="Full  name", category="IDENTITY", now=later
    )
    assert (renamed.id, renamed.key, renamed.value) == (name.id, "Full name", "Budi Santoso")
    assert renamed.updated_at == renamed.last_recalled_at == format_time(later)
    assert renamed.created_at == name.created_at and renamed.recall_count == 1
    assert renamed.stability > name.stability
    work = await store.create_memory("focus", "work", "thesis")
    with pytest.raises(MemoryExists, match="memory identity/full name already exists"):
        await store.update_memory(work.id, "thesis", key="full name", category="identity")
    with pytest.raises(InvalidMemory, match="value cannot be empty"):
        await store.update_memory(work.id, "  ", key=None, category=None)
    with pytest.raises(MemoryNotFound, match="no memory with id 'nope'"):
        await store.update_memory("nope", "value", key=None, category=None)
    with pytest.raises(MemoryNotFound, match="no memory with id 'nope'"):
        await store.delete_memory("nope")
    await store.delete_memory(work.id)
    with pytest.raises(MemoryNotFound):
        await store.delete_memory(work.id)
    assert sorted(m.key for m in await store.ranked_memories(later)) == [
        "CAFÉ",
        "Full name",
        "café",
    ]


async def test_memories_rank_by_retrievability_then_last_update_then_key(
    store: ContractStore,
) -> None:
    hour = timedelta(hours=1)
    mood = await store.create_memory("signals", "mood", "calm", now=FIXED_NOW)
    name = await store.create_memory("identity", "name", "Budi", now=FIXED_NOW + hour)
    work = await store.create_memory("focus", "work", "thesis", now=FIXED_NOW + 2 * hour)

    async def order(now: datetime) -> list[str]:
        return [m.key for m in await store.ranked_memories(now)]

    assert await order(FIXED_NOW + 2 * hour) == ["work", "name", "mood"]
    await store.update_memory(
        mood.id, "cheerful", key=None, category=None, now=FIXED_NOW + 3 * hour
    )
    assert await order(FIXED_NOW + 3 * hour) == ["mood", "work", "name"]
    assert await order(FIXED_NOW + timedelta(days=30)) == ["mood", "work", "name"]
    await store.create_memory("focus", "apple", "x", now=FIXED_NOW + 4 * hour)
    await store.create_memory("focus", "Zed", "y", now=FIXED_NOW + 4 * hour)
    # A skewed clock: every memory is fully retrievable, so the last update decides, then
    # category and key in code point order ("Zed" before "apple", as in SQLite).
    assert await order(FIXED_NOW - timedelta(days=1)) == ["Zed", "apple", "mood", "work", "name"]
    assert {m.id for m in await store.ranked_memories(FIXED_NOW)} >= {name.id, work.id}


async def test_both_backends_rank_the_same_memories_alike(
    tmp_path: Path, postgres: PostgresServer
) -> None:
    sqlite = AsyncSqliteStore(Store.open_home(tmp_path / "home", clock=ticking()))
    pg = await PgStore.open(postgres.url, new_person(), clock=ticking())
    try:
        both: tuple[ContractStore, ...] = (sqlite, pg)
        for store in both:
            made = [
                await store.create_memory(category, key, value)
                for category, key, value in [
                    ("identity", "name", "Budi"),
                    ("focus", "thesis", "FSRS"),
                    ("signals", "mood", "calm"),
                    ("principles", "tone", "gentle"),
                    ("focus", "Trip", "Bali"),
                ]
            ]
            await store.update_memory(made[0].id, "Budi S.", key=None, category=None)
            await store.update_memory(made[2].id, "tired", key="energy", category="focus")
            await store.update_memory(made[0].id, "Budi Santoso", key=None, category=None)
            await store.delete_memory(made[3].id)
        for now in (
            FIXED_NOW - timedelta(days=1),
            FIXED_NOW,
            FIXED_NOW + timedelta(seconds=5),
            FIXED_NOW + timedelta(days=2),
            FIXED_NOW + timedelta(days=400),
        ):
            on_sqlite = without_id(await sqlite.ranked_memories(now))
            assert on_sqlite == without_id(await pg.ranked_memories(now)), now
            assert len(on_sqlite) == 4
    finally:
        await sqlite.close()
        await pg.close()


async def test_recent_segments_are_the_newest_first_across_sessions(
    store: ContractStore,
) -> None:
    def at(minutes: int) -> datetime:
        return FIXED_NOW + timedelta(minutes=minutes)

    for session_id, content, minutes in [
        ("a", "one", 0),
        ("a", "two", 1),
        ("a", "three", 120),
        ("b", "four", 60),
        ("c", "five", 120),
    ]:
        await store.add_message(session_id, "user", content, created_at=at(minutes))
    for session_id in ("a", "b", "c"):
        await cut_segments(store, session_id)
    newest = [
        ("c", format_time(at(120)), format_time(at(120)), "five"),
        ("a", format_time(at(120)), format_time(at(120)), "three"),
        ("b", format_time(at(60)), format_time(at(60)), "four"),
        ("a", format_time(at(0)), format_time(at(1)), "one / two"),
    ]
    segments = await store.recent_segments()
    assert spans(segments) == newest
    assert spans(await store.recent_segments(2)) == newest[:2]
    assert {s.summary_kind for s in segments} == {"model"}
    first = segments[-1]
    assert (first.start_message_id, first.end_message_id) == (
        (await store.messages("a"))[0].id,
        (await store.messages("a"))[1].id,
    )


async def test_read_turn_reads_the_turn_the_history_the_note_and_ranked_memories(
    store: ContractStore,
) -> None:
    said = await store.add_message("s", "user", "hi")
    heard = await store.add_message("s", "assistant", "hello")
    asked = await store.add_message("s", "user", "weather?")
    called = await store.add_message(
        "s", "weather_tool", "sunny", tool_name="weather", tool_call_id="c1"
    )
    answered = await store.add_message("s", "assistant", "It is sunny")
    await store.add_message("elsewhere", "user", "not this one")
    await store.set_style_note("s", "short answers")
    await store.create_memory("identity", "name", "Budi", now=FIXED_NOW)
    await store.create_memory("focus", "work", "thesis", now=FIXED_NOW + timedelta(hours=1))
    now = FIXED_NOW + timedelta(days=1)

    reads = await store.read_turn("s", asked.id, history=2, now=now)
    assert reads == TurnReads(
        turn=[called, answered],
        history=[heard, asked],
        style_note="short answers",
        memories=await store.ranked_memories(now),
    )
    assert [m.key for m in reads.memories] == ["work", "name"]
    everything = await store.read_turn("s", asked.id, history=50, now=now)
    assert everything.history == [said, heard, asked]
    assert (await store.read_turn("s", asked.id, history=0, now=now)).history == []
    assert (await store.read_turn("s", answered.id, history=1, now=now)).turn == []
    unknown = await store.read_turn("unknown", asked.id, history=5, now=now)
    assert (unknown.turn, unknown.history, unknown.style_note) == ([], [], None)


async def test_delete_messages_from_drops_the_segments_that_covered_them(
    store: ContractStore,
) -> None:
    later = FIXED_NOW + timedelta(hours=2)
    one = await store.add_message("a", "user", "one", created_at=FIXED_NOW)
    two = await store.add_message("a", "user", "two", created_at=FIXED_NOW)
    await store.add_message("a", "user", "three", created_at=later)
    four = await store.add_message("a", "user", "four", created_at=later)
    await store.add_message("b", "user", "elsewhere", created_at=later)
    await cut_segments(store, "a")
    await cut_segments(store, "b")
    assert [s.summary for s in await store.recent_segments()] == [
        "elsewhere",
        "three / four",
        "one / two",
    ]
    assert await store.delete_messages_from("a", four.id) == 1
    assert [s.summary for s in await store.recent_segments()] == ["elsewhere", "one / two"]
    assert await store.delete_messages_from("a", two.id) == 2
    assert [s.summary for s in await store.recent_segments()] == ["elsewhere"]
    assert await store.messages("a") == [one]
    await store.delete_session("b")
    assert await store.recent_segments() == []


async def test_stop_is_asked_through_the_running_turn(store: ContractStore) -> None:
    asked = await store.add_message("s", "user", "a long story, please")
    elsewhere = await store.add_message("t", "user", "and another")
    assert await store.request_stop("s") is False  # no turn runs yet
    turn_id = await store.begin_turn("s", asked.id, "owner-1")
    other = await store.begin_turn("t", elsewhere.id, "owner-2")
    assert await store.stop_requested(turn_id) is False
    assert await store.request_stop("s") is True
    assert await store.stop_requested(turn_id) is True
    assert await store.stop_requested(other) is False
    assert await store.request_stop("unknown") is False
    await store.end_turn(turn_id)
    assert await store.stop_requested(turn_id) is False
    assert await store.request_stop("s") is False


async def test_a_job_lease_is_refused_to_others_until_it_expires(store: ContractStore) -> None:
    # The store's clock moves a second at each claim.
    assert await store.claim("sweep", "process-a", 60) is True
    assert await store.claim("sweep", "process-b", 60) is False
    assert await store.claim("sweep", "process-a", 1) is True  # renewed, now for 1 s
    assert await store.claim("other-job", "process-b", 60) is True
    # A second later process-a's lease has run out: process-b takes it, and holds it.
    assert await store.claim("sweep", "process-b", 60) is True
    assert await store.claim("sweep", "process-a", 60) is False
    assert await store.claim("other-job", "process-a", 60) is False
    assert await store.claim("sweep", "process-b", 60) is True


async def test_the_memory_tools_gates(store: ContractStore) -> None:
    assert await store.has_history() is False
    assert await store.has_memories() is False
    asked = await store.add_message("s", "user", "hello")
    assert await store.has_history(before_id=asked.id) is False  # the question itself
    assert await store.has_history(before_id=asked.id + 1) is True
    assert await store.has_history() is True
    assert await store.has_memories() is False
    await store.remember("identity", "name", "Budi", FIXED_NOW)
    assert await store.has_memories() is True
    assert await store.has_history(before_id=asked.id) is True  # a memory is history
    await store.forget(None, "name")
    assert await store.has_memories() is False
    assert await store.has_history(before_id=asked.id) is False


async def test_latest_image_is_the_sessions_newest_message_with_one(
    store: ContractStore,
) -> None:
    assert await store.latest_image("s") is None
    await store.add_message("s", "user", "look", image_path="media/first.png")
    second = await store.add_message("s", "assistant", "drawn", image_path="media/second.png")
    await store.add_message("s", "user", "thanks")
    await store.add_message("t", "user", "elsewhere", image_path="media/other.png")
    assert await store.latest_image("s") == second
    assert await store.latest_image("unknown") is None


async def test_remember_revise_and_forget_find_a_fact_by_key_with_sqlites_errors(
    store: ContractStore,
) -> None:
    made = await store.remember(" Identity ", " name ", " Budi ", FIXED_NOW)
    assert (made.category, made.key, made.value, made.recall_count) == (
        "identity",
        "name",
        "Budi",
        0,
    )
    with pytest.raises(MemoryExists, match=r"identity/NAME already exists \(value: 'Budi'\)"):
        await store.remember("identity", "NAME", "Other", FIXED_NOW)
    with pytest.raises(InvalidMemory, match="unknown category 'hobbies'"):
        await store.remember("hobbies", "chess", "yes", FIXED_NOW)

    later = FIXED_NOW + timedelta(days=2)
    revised = await store.revise(None, "NAME", " Budi Santoso ", later)
    assert (revised.id, revised.key, revised.value) == (made.id, "name", "Budi Santoso")
    assert revised.updated_at == revised.last_recalled_at == format_time(later)
    assert revised.recall_count == 1 and revised.stability > made.stability
    with pytest.raises(MemoryNotFound, match="no memory focus/name to change"):
        await store.revise("focus", "name", "x", later)
    with pytest.raises(MemoryNotFound, match="no memory with key 'nope' to change"):
        await store.revise(None, " nope ", "x", later)
    with pytest.raises(InvalidMemory, match="value cannot be empty"):
        await store.revise(None, "name", "  ", later)
    with pytest.raises(InvalidMemory, match="unknown category 'hobbies'"):
        await store.revise("hobbies", "name", "x", later)

    await store.remember("focus", "Name", "the thesis", later)
    several = r"key 'name' exists in several categories \(focus, identity\); say which"
    with pytest.raises(MemoryNotFound, match=several):
        await store.revise(None, "name", "x", later)
    with pytest.raises(MemoryNotFound, match=several):
        await store.forget(None, "name")
    assert await store.forget("identity", "NAME") == revised
    with pytest.raises(MemoryNotFound, match="no memory identity/name to change"):
        await store.forget("identity", "name")
    assert [(m.category, m.key) for m in await store.ranked_memories(later)] == [("focus", "Name")]
    gone = await store.forget(None, "name")
    assert gone.value == "the thesis"
    assert await store.ranked_memories(later) == []


async def test_memory_sql_reads_edits_and_undoes_the_newest_batch_only(
    store: ContractStore,
) -> None:
    said = await store.add_message("s", "user", "I live in Jakarta")
    await store.add_message("s", "memory_tool", "tool secret")
    name = await store.remember("identity", "name", "Budi", FIXED_NOW)
    await store.set_profile({"timezone": "Asia/Jakarta", "api_key": "sk-secret"})
    edited_at = FIXED_NOW + timedelta(hours=1)
    assert await store.undo_last_sql_edit() is None

    read = await store.run_sql("SELECT role, content FROM messages ORDER BY id", now=edited_at)
    assert read["rows"] == [["user", "I live in Jakarta"]]
    assert (await store.run_sql("SELECT key, value FROM memories", now=edited_at))["rows"] == [
        ["name", "Budi"]
    ]
    assert (await store.run_sql("SELECT key, value FROM profile", now=edited_at))["rows"] == [
        ["timezone", "Asia/Jakarta"]
    ]
    hidden = "UPDATE messages SET content = 'x' WHERE role = 'memory_tool'"
    assert await store.run_sql(hidden, now=edited_at) == {"updated": 0}
    assert "error" in await store.run_sql("DELETE FROM messages", now=edited_at)

    moved = f"UPDATE messages SET content = 'I live in Bandung' WHERE id = {said.id}"
    assert await store.run_sql(moved, now=edited_at) == {"updated": 1}
    renamed = await store.run_sql(
        "UPDATE memories SET value = 'Budi Santoso' WHERE key = 'name'", now=edited_at
    )
    assert renamed == {"updated": 1}
    titled = await store.run_sql(
        "UPDATE sessions SET title = 'Moving' WHERE id = 's'", now=edited_at
    )
    assert titled == {"updated": 1}
    assert [m.content for m in await store.messages("s")] == ["I live in Bandung", "tool secret"]

    undone = await store.undo_last_sql_edit()  # the title only
    assert undone is not None
    assert undone.created_at == format_time(edited_at)
    assert undone.edits == (Edit("sessions", "s", "title", "New chat", "Moving"),)
    session = await store.get_session("s")
    assert session is not None and session.title == "New chat"
    assert [m.value for m in await store.ranked_memories(edited_at)] == ["Budi Santoso"]
    undone = await store.undo_last_sql_edit()
    assert undone is not None
    assert undone.edits == (Edit("memories", name.id, "value", "Budi", "Budi Santoso"),)
    undone = await store.undo_last_sql_edit()
    assert undone is not None
    assert undone.edits == (
        Edit("messages", said.id, "content", "I live in Jakarta", "I live in Bandung"),
    )
    assert [m.content for m in await store.messages("s")] == ["I live in Jakarta", "tool secret"]
    assert [m.value for m in await store.ranked_memories(edited_at)] == ["Budi"]
    assert await store.undo_last_sql_edit() is None


async def test_undo_refuses_a_batch_whose_rows_changed_since(store: ContractStore) -> None:
    await store.create_session("Plans")
    (session,) = await store.list_sessions()
    memory = await store.remember("focus", "work", "thesis", FIXED_NOW)
    await store.run_sql(
        f"UPDATE sessions SET title = 'Trip' WHERE id = '{session.id}'", now=FIXED_NOW
    )
    await store.rename_session(session.id, "Trip to Bali")
    with pytest.raises(EditConflict, match=f"sessions {session.id} changed since"):
        await store.undo_last_sql_edit()
    again = await store.get_session(session.id)
    assert again is not None and again.title == "Trip to Bali"
    with pytest.raises(EditConflict):  # still the newest batch: nothing walks past it
        await store.undo_last_sql_edit()
    await store.rename_session(session.id, "Trip")
    assert await store.undo_last_sql_edit() is not None
    again = await store.get_session(session.id)
    assert again is not None and again.title == "Plans"

    await store.run_sql("UPDATE memories SET value = 'the thesis'", now=FIXED_NOW)
    await store.update_memory(memory.id, "a new job", key=None, category=None)
    with pytest.raises(EditConflict, match=f"memories {memory.id} changed since"):
        await store.undo_last_sql_edit()
    assert [m.value for m in await store.ranked_memories(FIXED_NOW)] == ["a new job"]

    # A deleted row's entries go with it: its text does not live on in the journal.
    await store.delete_memory(memory.id)
    said = await store.add_message("s", "user", "old words")
    await store.run_sql(f"UPDATE messages SET content = 'new' WHERE id = {said.id}", now=FIXED_NOW)
    await store.delete_messages_from("s", said.id)
    assert await store.undo_last_sql_edit() is None


# Postgres only: one database, many people -------------------------------------------


@pytest.fixture
async def shared_pool(postgres: PostgresServer) -> AsyncIterator[AsyncConnectionPool]:
    pool = AsyncConnectionPool(
        postgres.url, min_size=2, max_size=4, open=False, kwargs={"autocommit": True}
    )
    await pool.open(wait=True)
    yield pool
    await pool.close()


async def test_two_people_on_one_database_never_see_each_other(
    shared_pool: AsyncConnectionPool,
) -> None:
    alice = PgStore.for_person(shared_pool, new_person())
    bob = PgStore.for_person(shared_pool, new_person())
    session = await alice.create_session("Alice's")
    asked = await alice.add_message(session.id, "user", "my secret")
    turn_id = await alice.begin_turn(session.id, asked.id, "owner")
    await alice.save_partial(turn_id, "alice's partial")
    await alice.set_profile({"persona": "alice"})
    await alice.set_style_note(session.id, "alice's note")

    assert await bob.list_sessions() == []
    assert await bob.get_session(session.id) is None
    assert await bob.messages(session.id) == []
    assert await bob.count_messages() == 0
    assert await bob.running_turns() == []
    assert await bob.profile() == {}
    assert await bob.style_note(session.id) is None
    assert await bob.search_messages("secret") == []
    # What bob does to alice's ids touches nothing of hers.
    with pytest.raises(StoreError):
        await bob.rename_session(session.id, "Bob's now")
    with pytest.raises(StoreError):
        await bob.set_style_note(session.id, "bob's note")
    assert await bob.delete_messages_from(session.id, 0) == 0
    await bob.save_partial(turn_id, "bob was here")
    await bob.end_turn(turn_id)
    (turn,) = await alice.running_turns()
    assert await bob.close_interrupted(turn, {}) is None
    await bob.delete_session(session.id)
    await bob.set_profile({"persona": None})
    # The same session id is bob's own session, apart from alice's.
    await bob.add_message(session.id, "user", "bob's words")
    assert [m.content for m in await bob.messages(session.id)] == ["bob's words"]

    assert await alice.messages(session.id) == [asked]
    assert await alice.list_sessions() == [
        Session(session.id, "Alice's", None, session.created_at, asked.created_at)
    ]
    assert turn.partial == "alice's partial"
    assert await alice.profile() == {"persona": "alice"}
    assert await alice.style_note(session.id) == "alice's note"


async def test_two_people_never_see_each_others_memories_or_segments(
    shared_pool: AsyncConnectionPool,
) -> None:
    alice = PgStore.for_person(shared_pool, new_person())
    bob = PgStore.for_person(shared_pool, new_person())
    asked = await alice.add_message("s", "user", "my secret trip")
    segment = await alice.add_segment("s", [asked], "alice's trip", "model")
    memory = await alice.create_memory("identity", "name", "Alice", now=FIXED_NOW)

    assert await bob.ranked_memories(FIXED_NOW) == []
    assert await bob.recent_segments() == []
    assert await bob.read_turn("s", 0, history=10, now=FIXED_NOW) == TurnReads([], [], None, [])
    with pytest.raises(MemoryNotFound):
        await bob.update_memory(memory.id, "Bob", key=None, category=None)
    with pytest.raises(MemoryNotFound):
        await bob.delete_memory(memory.id)
    assert await bob.delete_messages_from("s", 0) == 0
    # The same category and key, and the same session id, are bob's own.
    bobs = await bob.create_memory("identity", "name", "Bob", now=FIXED_NOW)
    heard = await bob.add_message("s", "user", "bob's words")
    await bob.add_segment("s", [heard], "bob's words", "model")
    assert [m.value for m in await bob.ranked_memories(FIXED_NOW)] == ["Bob"]
    assert [s.summary for s in await bob.recent_segments()] == ["bob's words"]
    await bob.delete_memory(bobs.id)

    assert await alice.ranked_memories(FIXED_NOW) == [memory]
    assert await alice.recent_segments() == [segment]
    reads = await alice.read_turn("s", asked.id, history=5, now=FIXED_NOW)
    assert reads == TurnReads([], [asked], None, [memory])


async def test_raw_sql_as_the_app_role_sees_only_the_person_it_names(
    shared_pool: AsyncConnectionPool,
) -> None:
    alice, bob = new_person(), new_person()
    for person in (alice, bob):
        store = PgStore.for_person(shared_pool, person)
        asked = await store.add_message("s", "user", f"{person} speaks")
        await store.begin_turn("s", asked.id, "owner")
        await store.set_profile({"name": person})
        await store.create_memory("identity", "name", person)
        await store.add_segment("s", [asked], f"{person} spoke", "model")
        await store.claim("sweep", "owner", 60)
        edit = f"UPDATE messages SET content = '{person} edited' WHERE id = {asked.id}"
        assert await store.run_sql(edit, now=FIXED_NOW) == {"updated": 1}

    async with shared_pool.connection() as conn, conn.transaction():
        await conn.execute("SELECT set_config('app.person', %s, true)", (bob,))
        for table in APP_TABLES:
            cursor = await conn.execute(f"SELECT DISTINCT person FROM {table}")
            assert await cursor.fetchall() == [(bob,)], table
        cursor = await conn.execute("SELECT content FROM messages WHERE person = %s", (alice,))
        assert await cursor.fetchall() == []
        cursor = await conn.execute(
            "UPDATE messages SET content = 'hacked' WHERE person = %s", (alice,)
        )
        assert cursor.rowcount == 0
        cursor = await conn.execute("DELETE FROM profile WHERE person = %s", (alice,))
        assert cursor.rowcount == 0
    async with shared_pool.connection() as conn:
        with pytest.raises(errors.InsufficientPrivilege, match="row-level security"):
            async with conn.transaction():
                await conn.execute("SELECT set_config('app.person', %s, true)", (bob,))
                await conn.execute(
                    "INSERT INTO profile (person, key, value) VALUES (%s, 'k', 'v')", (alice,)
                )
        with pytest.raises(errors.InsufficientPrivilege, match="row-level security"):
            async with conn.transaction():
                await conn.execute("SELECT set_config('app.person', %s, true)", (bob,))
                await conn.execute("UPDATE profile SET person = %s", (alice,))
        # Without app.person (and after it, on the same pooled connection): nothing.
        for table in APP_TABLES:
            cursor = await conn.execute(f"SELECT COUNT(*) FROM {table}")
            assert await cursor.fetchone() == (0,), table
        with pytest.raises((errors.CheckViolation, errors.UndefinedObject)):
            await conn.execute("INSERT INTO profile (key, value) VALUES ('k', 'v')")
    assert await PgStore.for_person(shared_pool, alice).profile() == {"name": alice}


async def test_the_app_role_cannot_turn_row_level_security_off(
    shared_pool: AsyncConnectionPool, postgres: PostgresServer
) -> None:
    await PgStore.for_person(shared_pool, new_person()).set_profile({"k": "v"})
    async with await psycopg.AsyncConnection.connect(postgres.url, autocommit=True) as conn:
        cursor = await conn.execute(
            "SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = current_user"
        )
        assert await cursor.fetchone() == (False, False)
        for table in APP_TABLES:
            for change in ("DISABLE ROW LEVEL SECURITY", "NO FORCE ROW LEVEL SECURITY"):
                with pytest.raises(errors.InsufficientPrivilege, match="must be owner"):
                    await conn.execute(f"ALTER TABLE {table} {change}")
            with pytest.raises(errors.InsufficientPrivilege, match="must be owner"):
                await conn.execute(f"DROP POLICY {table}_person ON {table}")
        await conn.execute("SET row_security = off")
        with pytest.raises(errors.InsufficientPrivilege, match="row-level security policy"):
            await conn.execute("SELECT * FROM profile")
        await conn.execute("RESET row_security")
        with pytest.raises(errors.InsufficientPrivilege, match="permission denied"):
            await conn.execute("SET ROLE postgres")
        with pytest.raises(errors.InsufficientPrivilege, match="permission denied"):
            await conn.execute("SELECT * FROM schema_version")


async def test_full_text_search_finds_english_and_indonesian_words_of_its_person(
    shared_pool: AsyncConnectionPool,
) -> None:
    alice = PgStore.for_person(shared_pool, new_person())
    bob = PgStore.for_person(shared_pool, new_person())
    hiking = await alice.add_message("a", "user", "We went hiking near the volcano")
    cat = await alice.add_message("a", "user", "Kucing saya suka makan ikan")
    lunch = await alice.add_message("b", "assistant", "Jangan lupa makan siang!")
    bobs = await bob.add_message("a", "user", "Aku makan bakso, kucingnya tidur; hiking later")

    assert await alice.search_messages("hiking") == [hiking]
    assert await alice.search_messages("kucing") == [cat]
    assert await alice.search_messages("KUCING makan") == [cat]
    assert await alice.search_messages("makan") == [lunch, cat]
    assert await alice.search_messages("makan", limit=1) == [lunch]
    assert await alice.search_messages("makan -ikan") == [lunch]
    assert await alice.search_messages('"makan siang"') == [lunch]
    assert await alice.search_messages("rendang") == []
    assert await bob.search_messages("makan") == [bobs]
    assert await bob.search_messages("hiking") == [bobs]


async def test_migrating_again_changes_nothing_and_the_location_hides_the_password(
    postgres: PostgresServer, shared_pool: AsyncConnectionPool
) -> None:
    person = new_person()
    await PgStore.for_person(shared_pool, person).set_profile({"kept": "yes"})
    assert await migrate(postgres.admin_url, APP_ROLE) == len(PG_MIGRATIONS)
    async with await psycopg.AsyncConnection.connect(postgres.admin_url) as conn:
        cursor = await conn.execute("SELECT version FROM schema_version ORDER BY version")
        assert await cursor.fetchall() == [(v,) for v in range(1, len(PG_MIGRATIONS) + 1)]
    assert await PgStore.for_person(shared_pool, person).profile() == {"kept": "yes"}
    store = await PgStore.open(postgres.url.replace("companion@", "companion:secret@"), person)
    try:
        assert "secret" not in store.location and "companion" in store.location
    finally:
        await store.close()
    with pytest.raises(ValueError, match="person"):
        PgStore.for_person(shared_pool, "")


async def test_two_people_never_reach_each_other_through_the_tools_calls(
    shared_pool: AsyncConnectionPool, tmp_path: Path
) -> None:
    alice = PgStore.for_person(shared_pool, new_person(), media_dir=tmp_path / "alice")
    bob = PgStore.for_person(shared_pool, new_person(), media_dir=tmp_path / "bob")
    photo = await alice.add_message("s", "user", "my photo", image_path="alice.png")
    turn_id = await alice.begin_turn("s", photo.id, "owner")
    memory = await alice.remember("identity", "name", "Alice", FIXED_NOW)
    await alice.set_profile({"persona": "alice's persona"})
    edit = f"UPDATE messages SET content = 'alice edited' WHERE id = {photo.id}"
    assert await alice.run_sql(edit, now=FIXED_NOW) == {"updated": 1}
    assert await alice.claim("sweep", "process-a", 60) is True

    assert await bob.has_history() is False
    assert await bob.has_memories() is False
    assert await bob.latest_image("s") is None
    assert await bob.request_stop("s") is False
    assert await bob.stop_requested(turn_id) is False
    assert await bob.claim("sweep", "process-b", 60) is True  # bob's own lease
    with pytest.raises(MemoryNotFound):
        await bob.revise(None, "name", "Bob", FIXED_NOW)
    with pytest.raises(MemoryNotFound):
        await bob.forget("identity", "name")
    for sql in (
        "SELECT * FROM messages",
        "SELECT * FROM sessions",
        "SELECT * FROM memories",
        "SELECT * FROM profile",
        "SELECT * FROM segments",
    ):
        assert (await bob.run_sql(sql, now=FIXED_NOW))["rows"] == [], sql
    for sql in (
        "UPDATE messages SET content = 'bob was here'",
        "UPDATE memories SET value = 'bob was here'",
        "UPDATE sessions SET title = 'bob was here'",
    ):
        assert await bob.run_sql(sql, now=FIXED_NOW) == {"updated": 0}, sql
    assert await bob.undo_last_sql_edit() is None
    bobs = await bob.remember("identity", "name", "Bob", FIXED_NOW)  # his own fact
    assert await bob.forget(None, "name") == bobs

    assert await alice.stop_requested(turn_id) is False
    assert await alice.claim("sweep", "process-c", 60) is False  # still process-a's
    assert await alice.latest_image("s") == replace(photo, content="alice edited")
    assert await alice.ranked_memories(FIXED_NOW) == [memory]
    undone = await alice.undo_last_sql_edit()
    assert undone is not None and undone.edits[0].row_id == photo.id
    assert await alice.messages("s") == [photo]
    assert alice.media_dir == tmp_path / "alice" and alice.media_dir.is_dir()
    assert bob.media_dir == tmp_path / "bob"
    with pytest.raises(StoreError, match="without a media folder"):
        _ = PgStore.for_person(shared_pool, new_person()).media_dir
