"""Sessions: made, read, listed, renamed, deleted, and their style notes."""

from __future__ import annotations

import pytest

from memory import AsyncStore, StoreError, format_time
from tests.conftest import FIXED_NOW


async def test_sessions_are_created_read_and_listed_by_last_activity(
    store: AsyncStore,
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
    store: AsyncStore,
) -> None:
    session = await store.create_session()
    await store.rename_session(session.id, "  Trip to Bali  ")
    renamed = await store.get_session(session.id)
    assert renamed is not None and renamed.title == "Trip to Bali"
    with pytest.raises(StoreError, match="empty"):
        await store.rename_session(session.id, "   ")
    with pytest.raises(StoreError, match="no session"):
        await store.rename_session("unknown", "Title")


async def test_style_note_is_kept_and_blank_removes_it(store: AsyncStore) -> None:
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


async def test_deleting_a_session_deletes_everything_in_it(store: AsyncStore) -> None:
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
