"""Episodes: segments listed newest first, and dropped with the messages they covered."""

from __future__ import annotations

from datetime import datetime, timedelta

from memory import AsyncStore, format_time
from tests.conftest import FIXED_NOW
from tests.memory.backends import cut_segments, spans


async def test_recent_segments_are_the_newest_first_across_sessions(
    store: AsyncStore,
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


async def test_delete_messages_from_drops_the_segments_that_covered_them(
    store: AsyncStore,
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
