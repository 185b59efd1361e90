"""The store's async interface on SQLite: same data, and no call waits on the event loop."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path

import pytest

from memory.sqlite import async_store as module
from memory.sqlite.async_store import AsyncSqliteStore
from memory.sqlite.db import connect, is_busy
from memory.sqlite.memories import create_memory
from memory.sqlite.store import SqliteStore
from tests.conftest import FIXED_NOW


def thread_name(_: SqliteStore) -> str:
    return threading.current_thread().name


def lock_database(path: Path) -> sqlite3.Connection:
    """Another connection holding the write lock until it commits."""
    holder = connect(path)
    holder.isolation_level = None
    holder.execute("BEGIN IMMEDIATE")
    return holder


async def test_the_async_interface_reads_and_writes_the_one_database(
    async_store: AsyncSqliteStore, store: SqliteStore
) -> None:
    session = await async_store.create_session("Dinner")
    asked = await async_store.add_message(session.id, "user", "what did I cook?")
    await async_store.add_message(session.id, "assistant", "Nasi goreng.")
    await async_store.set_style_note(session.id, "short answers")
    await async_store.set_profile({"persona": "journal"})
    create_memory(store, "identity", "name", "Budi", FIXED_NOW)
    assert [m.content for m in store.messages(session.id)] == ["what did I cook?", "Nasi goreng."]
    assert [m.id for m in await async_store.messages(session.id)] == [
        m.id for m in store.messages(session.id)
    ]
    assert await async_store.get_session(session.id) == session
    assert await async_store.list_sessions() == [session]
    assert await async_store.count_messages(session.id) == 2
    assert await async_store.profile() == {"persona": "journal"}

    reads = await async_store.read_turn(session.id, asked.id, history=25, now=FIXED_NOW)
    assert [m.content for m in reads.history] == ["what did I cook?"]
    assert [m.content for m in reads.turn] == ["Nasi goreng."]
    assert reads.style_note == "short answers"
    assert [m.value for m in reads.memories] == ["Budi"]
    later = await async_store.read_turn(session.id, asked.id, history=0, now=FIXED_NOW)
    assert later.history == [] and later.turn == reads.turn

    (memory,) = await async_store.ranked_memories(FIXED_NOW)
    await async_store.update_memory(memory.id, "Budi S.", key=None, category=None)
    assert [m.value for m in await async_store.ranked_memories(FIXED_NOW)] == ["Budi S."]
    await async_store.delete_memory(memory.id)
    await async_store.rename_session(session.id, "Cooking")
    assert (await async_store.get_session(session.id)).title == "Cooking"  # type: ignore[union-attr]
    await async_store.delete_session(session.id)
    assert store.list_sessions() == [] and await async_store.ranked_memories(FIXED_NOW) == []


async def test_reads_run_in_reader_threads_writes_in_the_writer_thread(
    async_store: AsyncSqliteStore,
) -> None:
    assert (await async_store.read(thread_name)).startswith("store-reader")
    assert (await async_store.write(thread_name)).startswith("store-writer")
    # A call the turn makes is tried on the loop first, where it cannot wait.
    assert await async_store.read(thread_name, inline=True) == threading.current_thread().name
    assert await async_store.write(thread_name, inline=True) == threading.current_thread().name


async def test_a_write_that_would_wait_goes_to_the_writer_thread_and_keeps_its_order(
    async_store: AsyncSqliteStore, store: SqliteStore
) -> None:
    holder = lock_database(store.path)

    def add(text: str):
        def call(s: SqliteStore) -> tuple[int, str]:
            return s.add_message("s1", "user", text).id, thread_name(s)

        return async_store.write(call, inline=True)

    first = asyncio.ensure_future(add("first"))
    await asyncio.sleep(0.05)  # the first write is waiting for the lock in the writer thread
    second = asyncio.ensure_future(add("second"))  # a write is queued: this one queues too
    # Reads do not wait for the lock, on the loop or in a reader thread.
    assert await async_store.read(thread_name, inline=True) == threading.current_thread().name
    assert await async_store.list_sessions() == []
    await asyncio.sleep(0.1)
    assert not first.done() and not second.done()
    holder.execute("COMMIT")
    (first_id, first_thread), (second_id, second_thread) = await asyncio.gather(first, second)
    assert first_thread.startswith("store-writer") and second_thread.startswith("store-writer")
    assert first_id < second_id
    assert [m.content for m in store.messages("s1")] == ["first", "second"]
    # The queue has drained: the next write runs on the loop again.
    _, third_thread = await add("third")
    assert third_thread == threading.current_thread().name
    holder.close()


def test_the_loops_connections_never_wait_nor_checkpoint(store: SqliteStore) -> None:
    inline = store.without_waiting()
    assert inline.conn is not store.conn
    assert inline.conn.execute("PRAGMA busy_timeout").fetchone()[0] == 0
    assert inline.conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0
    assert store.conn.execute("PRAGMA busy_timeout").fetchone()[0] == 10_000
    holder = lock_database(store.path)
    with pytest.raises(sqlite3.OperationalError) as refused:
        inline.add_message("s1", "user", "hello")
    assert is_busy(refused.value)
    holder.close()
    with pytest.raises(sqlite3.OperationalError) as missing:
        inline.conn.execute("SELECT * FROM no_such_table")
    assert not is_busy(missing.value)
    inline.close()


async def test_inline_writes_are_checkpointed_by_the_writer_thread(
    async_store: AsyncSqliteStore, store: SqliteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    checkpoints: list[str] = []
    monkeypatch.setattr(module, "CHECKPOINT_EVERY", 3)
    monkeypatch.setattr(store, "checkpoint", lambda: checkpoints.append(thread_name(store)))
    for number in range(7):
        await async_store.add_message("s1", "user", f"message {number}")
    await async_store.write(thread_name)  # after the checkpoints queued before it
    assert len(checkpoints) == 2 and all(t.startswith("store-writer") for t in checkpoints)
