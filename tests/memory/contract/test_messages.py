"""Messages: stored in order, cut from an id on; the tools' gates and the newest image."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

import pytest

from memory import AsyncStore, MemoryGates, Session, StoreError, format_time
from tests.conftest import FIXED_NOW


async def test_messages_round_trip_in_order_and_create_their_session(
    store: AsyncStore,
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
    store: AsyncStore,
) -> None:
    one = await store.add_message("a", "user", "one")
    two = await store.add_message("a", "assistant", "two")
    await store.add_message("a", "user", "three")
    other = await store.add_message("b", "user", "elsewhere")
    assert await store.delete_messages_from("a", two.id) == 2
    assert await store.messages("a") == [one]
    assert await store.messages("b") == [other]
    assert await store.delete_messages_from("a", two.id) == 0


async def test_the_memory_tools_gates(store: AsyncStore) -> None:
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


async def test_the_gates_in_one_query_answer_as_the_two(store: AsyncStore) -> None:
    """``memory_gates``: what the registry asks before each model call."""
    assert await store.memory_gates() == MemoryGates(history=False, memories=False)
    asked = await store.add_message("s", "user", "hello")
    assert await store.memory_gates(asked.id) == MemoryGates(history=False, memories=False)
    assert await store.memory_gates(asked.id + 1) == MemoryGates(history=True, memories=False)
    await store.remember("identity", "name", "Budi", FIXED_NOW)
    assert await store.memory_gates(asked.id) == MemoryGates(history=True, memories=True)


async def test_latest_image_is_the_sessions_newest_message_with_one(
    store: AsyncStore,
) -> None:
    assert await store.latest_image("s") is None
    await store.add_message("s", "user", "look", image_path="media/first.png")
    second = await store.add_message("s", "assistant", "drawn", image_path="media/second.png")
    await store.add_message("s", "user", "thanks")
    await store.add_message("t", "user", "elsewhere", image_path="media/other.png")
    assert await store.latest_image("s") == second
    assert await store.latest_image("unknown") is None
