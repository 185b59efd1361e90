"""memory_sql: reads, edits, and undo of the newest batch only."""

from __future__ import annotations

from datetime import timedelta

import pytest

from memory import AsyncStore, Edit, EditConflict, format_time
from tests.conftest import FIXED_NOW


async def test_memory_sql_reads_edits_and_undoes_the_newest_batch_only(
    store: AsyncStore,
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


async def test_undo_refuses_a_batch_whose_rows_changed_since(store: AsyncStore) -> None:
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
