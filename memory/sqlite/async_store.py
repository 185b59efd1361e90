"""``AsyncSqliteStore``: the ``AsyncStore`` interface over a blocking ``SqliteStore``.

Writes go to one writer thread and reads to a few reader threads, each with its own
connection (WAL lets them overlap); a turn's own calls are first tried on the event loop,
on a connection that never waits. SQLite's refusal of a write (read-only, full) is raised
as ``memory.WriteRefused``. A call cancelled while queued is dropped; one already running
completes. Why this shape, with measurements: docs/storage.md.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import sqlite3
import threading
from collections.abc import Callable, Coroutine, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar

from memory.errors import WriteRefused
from memory.protocol import TurnReads
from memory.sqlite import chats, memories
from memory.sqlite.db import is_busy
from memory.sqlite.erase import delete_everything
from memory.sqlite.journal import undo_last_edit
from memory.sqlite.memories import (
    create_memory,
    delete_memory,
    import_memory,
    ranked,
    update_memory,
)
from memory.sqlite.recall import recall
from memory.sqlite.segments import catch_up_segments, recent_segments, refresh_segments
from memory.sqlite.sql_guard import run_sql
from memory.sqlite.store import SqliteStore
from memory.sqlite.vectors import add_vectors, drop_vectors, unembedded, vector_status
from memory.types import Clock, Summarizer

log = logging.getLogger("companion.store")

READERS = 3  # reader threads: a slow read (a long chat) never holds up the others
CHECKPOINT_EVERY = 200  # inline writes between two checkpoints in the writer thread
# SQLite's primary result codes for a database that cannot take a write.
WRITE_FAILURES = ("SQLITE_READONLY", "SQLITE_FULL", "SQLITE_IOERR", "SQLITE_CANTOPEN")
P = ParamSpec("P")
T = TypeVar("T")


def read_turn(
    store: SqliteStore, session_id: str, user_message_id: int, *, history: int, now: datetime
) -> TurnReads:
    """``AsyncStore.read_turn`` on the blocking store."""
    return TurnReads(
        turn=store.messages_after(session_id, user_message_id),
        history=store.recent_messages(session_id, history, before_id=user_message_id + 1)
        if history
        else [],
        style_note=store.style_note(session_id),
        memories=ranked(store, now),
        gates=store.memory_gates(user_message_id) if history else None,
    )


@contextmanager
def _refusals() -> Iterator[None]:
    """SQLite refusing a write (a read-only, full or failing database file) raised as
    WriteRefused, with SQLite's words; any other error as it is."""
    try:
        yield
    except sqlite3.Error as error:
        name = getattr(error, "sqlite_errorname", None)
        if isinstance(name, str) and name.startswith(WRITE_FAILURES):
            raise WriteRefused(str(error)) from error
        raise


def _logged(future: Future[Any]) -> None:
    """Log a failure of background work nobody awaits."""
    error = future.exception()
    if error is not None:
        log.error("WAL checkpoint failed", exc_info=error)


Blocking = Callable[Concatenate[SqliteStore, P], T]
Async = Callable[Concatenate["AsyncSqliteStore", P], Coroutine[Any, Any, T]]


def _reads(call: Blocking[P, T], *, inline: bool = False) -> Async[P, T]:
    """A method that runs ``call`` in a reader thread (``inline``: tried on the loop first)."""

    @functools.wraps(call)
    async def read(self: AsyncSqliteStore, *args: P.args, **kwargs: P.kwargs) -> T:
        return await self.read(lambda store: call(store, *args, **kwargs), inline=inline)

    return read


def _writes(call: Blocking[P, T], *, inline: bool = False) -> Async[P, T]:
    """A method that runs ``call`` in the writer thread (``inline``: tried on the loop first)."""

    @functools.wraps(call)
    async def write(self: AsyncSqliteStore, *args: P.args, **kwargs: P.kwargs) -> T:
        return await self.write(lambda store: call(store, *args, **kwargs), inline=inline)

    return write


class AsyncSqliteStore:
    """``AsyncStore`` on SQLite: the writer thread, reader threads, and the loop's try."""

    def __init__(
        self, store: SqliteStore, *, readers: int = READERS, try_inline: bool = True
    ) -> None:
        self.blocking = store
        self.try_inline = try_inline  # False: every call in the threads (bench.overhead)
        self._inline = store.without_waiting()
        self._writer = ThreadPoolExecutor(1, thread_name_prefix="store-writer")
        self._readers = ThreadPoolExecutor(readers, thread_name_prefix="store-reader")
        self._queued_writes = 0  # writes sent to the writer thread and not done yet
        self._count_lock = threading.Lock()
        self._inline_writes = 0  # since the last checkpoint

    @classmethod
    def open_home(cls, home: Path | str, *, clock: Clock | None = None) -> AsyncSqliteStore:
        """Open (creating if needed) the store of a COMPANION_HOME folder."""
        return cls(
            SqliteStore.open_home(home)
            if clock is None
            else SqliteStore.open_home(home, clock=clock)
        )

    @property
    def clock(self) -> Clock:
        return self.blocking.clock

    @property
    def media_dir(self) -> Path:
        return self.blocking.media_dir

    @property
    def location(self) -> str:
        return str(self.blocking.path)

    async def read(self, call: Callable[[SqliteStore], T], *, inline: bool = False) -> T:
        """Run a blocking read in a reader thread; ``inline``: first on the event loop,
        on a connection that never waits (a read that would wait goes to the thread).
        A database that cannot be written or opened raises WriteRefused."""
        with _refusals():
            return await self._read(call, inline=inline)

    async def _read(self, call: Callable[[SqliteStore], T], *, inline: bool) -> T:
        if inline and self.try_inline:
            try:
                return call(self._inline)
            except sqlite3.OperationalError as error:
                if not is_busy(error):
                    raise
        return await asyncio.wrap_future(self._readers.submit(call, self.blocking))

    async def write(self, call: Callable[[SqliteStore], T], *, inline: bool = False) -> T:
        """Run a blocking write (or read-then-write) in the writer thread; ``inline``: first
        on the event loop when no write is queued, on a connection that never waits (a
        write that would wait for the lock rolls back and goes to the thread). A database
        that cannot take the write raises WriteRefused."""
        with _refusals():
            return await self._write(call, inline=inline)

    async def _write(self, call: Callable[[SqliteStore], T], *, inline: bool) -> T:
        if inline and self.try_inline and not self._queued_writes:
            try:
                result = call(self._inline)
            except sqlite3.OperationalError as error:
                if not is_busy(error):
                    raise
            else:
                self._inline_writes += 1
                if self._inline_writes >= CHECKPOINT_EVERY:
                    # The loop's connection never checkpoints: the writer thread does.
                    self._inline_writes = 0
                    self._writer.submit(self.blocking.checkpoint).add_done_callback(_logged)
                return result
        with self._count_lock:
            self._queued_writes += 1
        future = self._writer.submit(call, self.blocking)
        future.add_done_callback(self._written)
        return await asyncio.wrap_future(future)

    def _written(self, _: Future[Any]) -> None:
        # Done, failed or cancelled before it ran (in whichever thread finished it).
        with self._count_lock:
            self._queued_writes -= 1

    async def close(self) -> None:
        """Finish the queued calls, stop the threads and close every connection."""
        self._writer.shutdown()
        self._readers.shutdown()
        self._inline.close()
        self.blocking.close()

    create_session = _writes(SqliteStore.create_session)
    get_session = _reads(SqliteStore.get_session)
    list_sessions = _reads(SqliteStore.list_sessions)
    rename_session = _writes(SqliteStore.rename_session)
    delete_session = _writes(SqliteStore.delete_session)
    set_pinned = _writes(chats.set_pinned)
    search_chats = _reads(chats.search_chats)
    chat_version = _reads(chats.chat_version, inline=True)  # polled: WAL reads on the loop
    save_trace = _writes(chats.save_trace, inline=True)  # the turn's last write, on its path
    turn_trace = _reads(chats.turn_trace)
    traced_answers = _reads(chats.traced_answers)
    set_feedback = _writes(chats.set_feedback)
    feedback = _reads(chats.feedback)
    style_note = _reads(SqliteStore.style_note)
    set_style_note = _writes(SqliteStore.set_style_note)
    add_message = _writes(SqliteStore.add_message, inline=True)
    import_chat = _writes(SqliteStore.import_chat)
    delete_everything = _writes(delete_everything)
    messages = _reads(SqliteStore.messages)
    count_messages = _reads(SqliteStore.count_messages)
    read_turn = _reads(read_turn, inline=True)
    delete_messages_from = _writes(SqliteStore.delete_messages_from)
    begin_turn = _writes(SqliteStore.begin_turn, inline=True)
    save_partial = _writes(SqliteStore.save_partial, inline=True)
    end_turn = _writes(SqliteStore.end_turn, inline=True)
    running_turns = _reads(SqliteStore.running_turns)
    request_stop = _writes(SqliteStore.request_stop)
    claim = _writes(SqliteStore.claim)
    stop_requested = _reads(SqliteStore.stop_requested, inline=True)
    close_interrupted = _writes(SqliteStore.close_interrupted)
    recent_segments = _reads(recent_segments)
    ranked_memories = _reads(ranked)
    create_memory = _writes(create_memory)
    import_memory = _writes(import_memory)
    update_memory = _writes(update_memory)
    delete_memory = _writes(delete_memory)
    undo_last_sql_edit = _writes(undo_last_edit)
    profile = _reads(SqliteStore.profile)
    set_profile = _writes(SqliteStore.set_profile)
    memory_gates = _reads(SqliteStore.memory_gates, inline=True)  # gates: WAL reads on the loop
    has_history = _reads(SqliteStore.has_history, inline=True)
    has_memories = _reads(SqliteStore.has_memories, inline=True)
    latest_image = _reads(SqliteStore.latest_image)
    # Tens of ms of searches on a long history: a reader thread, not the writers' queue;
    # its one small write (the facts it returns count as recalled) waits there if it must.
    recall = _reads(recall)
    unembedded = _reads(unembedded)
    add_vectors = _writes(add_vectors)
    vector_status = _reads(vector_status)
    drop_vectors = _writes(drop_vectors)
    remember = _writes(memories.create_memory)  # the tools' create: the same as the tab's
    revise = _writes(memories.revise)
    forget = _writes(memories.forget)

    async def run_sql(self, sql: str, *, now: datetime) -> dict[str, Any]:
        # The guard opens its own read-only connection, and writes an UPDATE's edits in
        # one short transaction of its own: a reader thread, not the writer's queue.
        path = self.blocking.path
        return await self.read(lambda _: run_sql(path, sql, clock=lambda: now))

    async def refresh_segments(
        self, session_id: str, summarize: Summarizer | None, *, force: bool, tz: str
    ) -> int:
        return await refresh_segments(
            self.blocking, session_id, summarize, force=force, tz=tz, offload=self._offload
        )

    async def catch_up_segments(self, summarize: Summarizer | None, *, tz: str) -> int:
        return await catch_up_segments(self.blocking, summarize, tz=tz, offload=self._offload)

    async def _offload(self, call: Callable[[], T], *, writes: bool) -> T:
        return await (self.write if writes else self.read)(lambda _: call())
