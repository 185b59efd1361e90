"""Episodic segments: cutting spans, summaries (model and extractive), search."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memory import Message
from memory.rules.segments import extractive_summary
from memory.rules.temporal import parse_temporal
from memory.sqlite.segments import (
    catch_up_segments,
    list_segments,
    pending_sessions,
    refresh_segments,
    search_segments,
)
from memory.sqlite.store import SqliteStore

NOW = datetime(2026, 11, 25, 9, 30, tzinfo=UTC)
THURSDAY_EVENING = datetime(2026, 11, 19, 12, 0, tzinfo=UTC)  # 19:00 in Jakarta


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteStore]:
    s = SqliteStore.open_home(tmp_path, clock=lambda: NOW)
    yield s
    s.close()


def seed_two_evenings(store: SqliteStore) -> None:
    t = THURSDAY_EVENING
    store.add_message("s", "user", "I cooked nasi goreng with extra chili tonight", created_at=t)
    store.add_message("s", "assistant", "Yum! Was it spicy?", created_at=t + timedelta(minutes=1))
    store.add_message("s", "memory_tool", "SECRET tool output", created_at=t + timedelta(minutes=2))
    store.add_message("s", "user", "ok", created_at=t + timedelta(minutes=3))
    later = t + timedelta(days=1)
    store.add_message("s", "user", "Went jogging around the lake", created_at=later)


async def test_gaps_cut_segments_and_the_open_span_waits(store: SqliteStore) -> None:
    seed_two_evenings(store)
    assert await refresh_segments(store, "s") == 2  # the last span is closed by time
    assert await refresh_segments(store, "s") == 0  # nothing new
    store.add_message("s", "user", "still here", created_at=NOW - timedelta(minutes=5))
    assert await refresh_segments(store, "s") == 0  # open span: the talk may go on
    assert await refresh_segments(store, "s", force=True) == 1
    spans = list_segments(store, "s")
    assert [(sg.end_message_id - sg.start_message_id + 1) for sg in spans] == [4, 1, 1]


async def test_forty_messages_close_a_segment(store: SqliteStore) -> None:
    start = NOW - timedelta(minutes=50)
    for i in range(45):
        store.add_message("s", "user", f"line {i}", created_at=start + timedelta(seconds=i))
    store.add_message("s", "user", "just now", created_at=NOW)
    # 40 + 5 messages, both closed (the 5 by the gap before "just now"), which stays open.
    assert await refresh_segments(store, "s") == 2
    assert [sg.end_message_id for sg in list_segments(store, "s")] == [40, 45]


async def test_extractive_summary_heading_and_informative_lines(store: SqliteStore) -> None:
    seed_two_evenings(store)
    await refresh_segments(store, "s", tz="Asia/Jakarta")
    first = list_segments(store, "s")[0]
    assert first.summary_kind == "extractive"
    assert first.summary.startswith("Thu 19 Nov, evening: ")
    assert "nasi goreng" in first.summary
    assert "SECRET" not in first.summary


async def test_model_summary_sees_only_speakers_and_failures_fall_back(
    store: SqliteStore, caplog: pytest.LogCaptureFixture
) -> None:
    seed_two_evenings(store)
    seen: list[list[Message]] = []

    async def summarize(messages: list[Message]) -> str:
        seen.append(messages)
        if len(seen) == 2:
            raise RuntimeError("model down")
        return "Cooked spicy nasi goreng."

    assert await refresh_segments(store, "s", summarize) == 2
    first, second = list_segments(store, "s")
    assert (first.summary, first.summary_kind) == ("Cooked spicy nasi goreng.", "model")
    assert second.summary_kind == "extractive" and "jogging" in second.summary
    assert all(m.role in ("user", "assistant") for m in seen[0])
    failed = [r for r in caplog.records if r.name == "companion.segments"]
    assert len(failed) == 1 and failed[0].exc_info is not None
    assert failed[0].exc_info[0] is RuntimeError


def test_extractive_summary_truncates() -> None:
    long = Message(1, "s", "user", "word " * 500, "2026-11-19 12:00:00")
    summary = extractive_summary([long])
    assert len(summary) <= 400 and summary.endswith("…")
    assert extractive_summary([]) == ""


async def test_search_by_keyword_and_window(store: SqliteStore) -> None:
    seed_two_evenings(store)
    await refresh_segments(store, "s", tz="Asia/Jakarta")
    found = search_segments(store, "what did I cook?")
    assert len(found) == 1 and "nasi goreng" in found[0].summary
    thursday = parse_temporal("last Thursday", NOW, "Asia/Jakarta")
    in_window = search_segments(store, "anything", cue=thursday)
    assert [sg.id for sg in in_window] == [found[0].id]
    # Jogging was on Friday: inside Thursday's window the window's segments come back.
    assert search_segments(store, "jogging", cue=thursday) == [found[0]]
    assert search_segments(store, "nothing matches") == []


def seed_chats(store: SqliteStore, count: int, lines: int = 3) -> list[str]:
    """``count`` chats, each a few lines one evening apart, the last one an hour ago."""
    ids = []
    for n in range(count):
        session = store.create_session(f"chat {n}").id
        start = NOW - timedelta(days=count - n - 1, hours=1)
        for i in range(lines):
            store.add_message(session, "user", f"chat {n} line {i}", created_at=start)
        ids.append(session)
    return ids


async def test_forcing_closes_the_open_span_when_the_person_moves_on(store: SqliteStore) -> None:
    store.add_message("a", "user", "Tonight I cooked nasi goreng", created_at=NOW)
    assert await refresh_segments(store, "a") == 0  # still going on
    assert await refresh_segments(store, "a", force=True) == 1  # switched to another chat
    assert "nasi goreng" in list_segments(store, "a")[0].summary
    assert pending_sessions(store) == []


async def test_refresh_limit_bounds_spans_and_keeps_order(store: SqliteStore) -> None:
    start = NOW - timedelta(days=1)
    for i in range(130):  # 40 + 40 + 40 + 10, all closed by the day since
        store.add_message("s", "user", f"line {i}", created_at=start + timedelta(seconds=i))
    assert await refresh_segments(store, "s", limit=2) == 2
    assert [sg.end_message_id for sg in list_segments(store, "s")] == [40, 80]
    assert await refresh_segments(store, "s", limit=2) == 2
    assert await refresh_segments(store, "s", limit=2) == 0
    assert [sg.end_message_id for sg in list_segments(store, "s")] == [40, 80, 120, 130]


async def test_catch_up_does_every_quiet_span_a_budget_at_a_time(store: SqliteStore) -> None:
    ids = seed_chats(store, 5)
    store.add_message(ids[0], "user", "back in the first chat", created_at=NOW)
    calls: list[int] = []

    async def summarize(messages: list[Message]) -> str:
        calls.append(len(messages))
        return f"talked: {messages[0].content}"

    assert await catch_up_segments(store, summarize, budget=3) == 3
    assert len(calls) == 3
    assert await catch_up_segments(store, summarize, budget=3) == 2
    assert await catch_up_segments(store, summarize, budget=3) == 0
    # Every span older than 30 minutes is a segment; the one going on now is not.
    assert [len(list_segments(store, s)) for s in ids] == [1, 1, 1, 1, 1]
    assert pending_sessions(store) == [ids[0]]
    assert all(sg.summary_kind == "model" for s in ids for sg in list_segments(store, s))


async def test_deleting_a_session_deletes_its_episodes(store: SqliteStore) -> None:
    seed_two_evenings(store)
    store.add_message("t", "user", "I cooked soto", created_at=THURSDAY_EVENING)
    await catch_up_segments(store)
    assert len(search_segments(store, "cooked")) == 2
    store.delete_session("s")
    assert [sg.session_id for sg in search_segments(store, "cooked")] == ["t"]
    assert search_segments(store, "nasi goreng") == []  # gone from the FTS index too
    assert store.conn.execute("SELECT COUNT(*) FROM segments").fetchone()[0] == 1
