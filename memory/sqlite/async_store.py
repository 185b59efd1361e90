"""The store as the graph and the app use it: the ``AsyncStore`` interface, and SQLite's.

``AsyncStore`` is the whole interface: the calls the graph (runner, nodes) and the app
(chat, memories and settings tabs, the terminal chat) make, each a coroutine typed with
the store's value objects (``Session``, ``Message``, ``Memory``, ``Segment``, ``EditBatch``,
and ``TurnReads``: build_context's reads taken together). Async code reaches the database
through nothing else. A second backend (Postgres, issue 15) implements these methods and
nothing more.

``AsyncSqliteStore`` implements it around a blocking ``memory.store.Store``:

- Writes go to one writer thread with its own connection. SQLite takes one writer at a
  time anyway, so queueing them costs nothing, and our writes never fight each other for
  the lock. While another connection holds it, only this thread waits (busy timeout):
  only the calls that write are delayed.
- Reads go to a few reader threads, each with its own connection. In WAL mode a reader
  never waits for the write lock: loading a chat or listing sessions goes on while a
  write waits, and so does every other coroutine.
- A turn's own calls (storing a message, build_context's reads) are first tried on the
  event loop, on a connection that never waits (busy timeout 0): a read, or a write that
  gets the lock at once, takes about 0.1 ms; one that would wait fails at once, rolls
  back and goes to its thread. No write is tried while one is queued, so writes keep
  their order. That connection never checkpoints the WAL; the writer thread does, every
  ``CHECKPOINT_EVERY`` inline writes.

Why this shape (measured on two cores):

- Not ``asyncio.to_thread``: its pool (min(32, cpu + 4) = 6 workers, shared with DNS
  lookups and the tools) fills up with writes waiting for a lock. With 8 sessions writing
  during a 2 s lock, a read and a ``getaddrinfo`` each took 2.03 s through it, against
  1 ms and 0.4 ms here; and its six connections then fought over the lock for 0.3 s.
- Not every call in a thread: a trip to a thread and back costs 0.1-0.2 ms here, and a
  turn makes six store calls one after another. ``bench.overhead`` shows the difference
  (its "every store call in a thread" row): tried on the loop first, a turn costs what
  it did when the store was called directly.

A call cancelled while queued is dropped; one already running completes (a write is
never half done). Tools reach the store through this interface too (``recall``,
``run_sql``, ``remember``…): their searches run in the reader threads, and their gates
(``has_history``, ``has_memories``) are tried on the loop (WAL reads, which never wait
for the write lock).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import sqlite3
import threading
from collections.abc import Callable, Coroutine
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar

from memory.protocol import TurnReads
from memory.sqlite import memories
from memory.sqlite.db import is_busy
from memory.sqlite.journal import undo_last_edit
from memory.sqlite.memories import create_memory, delete_memory_by_id, ranked, update_memory_by_id
from memory.sqlite.recall import recall
from memory.sqlite.segments import catch_up_segments, recent_segments, refresh_segments
from memory.sqlite.sql_guard import run_sql
from memory.sqlite.store import Store
from memory.types import (
    Clock,
    Summarizer,
)

log = logging.getLogger("companion.store")

READERS = 3  # reader threads: a slow read (a long chat) never holds up the others
CHECKPOINT_EVERY = 200  # inline writes between two checkpoints in the writer thread
P = ParamSpec("P")
T = TypeVar("T")


def read_turn(
    store: Store, session_id: str, user_message_id: int, *, history: int, now: datetime
) -> TurnReads:
    """``AsyncStore.read_turn`` on the blocking store."""
    return TurnReads(
        turn=store.messages_after(session_id, user_message_id),
        history=store.recent_messages(session_id, history, before_id=user_message_id + 1)
        if history
        else [],
        style_note=store.style_note(session_id),
        memories=ranked(store, now),
    )


def _logged(future: Future[Any]) -> None:
    """Log a failure of background work nobody awaits."""
    error = future.exception()
    if error is not None:
        log.error("WAL checkpoint failed", exc_info=error)


Blocking = Callable[Concatenate[Store, P], T]
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

    def __init__(self, store: Store, *, readers: int = READERS, try_inline: bool = True) -> None:
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
        return cls(Store.open_home(home) if clock is None else Store.open_home(home, clock=clock))

    @property
    def clock(self) -> Clock:
        return self.blocking.clock

    @property
    def media_dir(self) -> Path:
        return self.blocking.media_dir

    @property
    def location(self) -> str:
        return str(self.blocking.path)

    async def read(self, call: Callable[[Store], T], *, inline: bool = False) -> T:
        """Run a blocking read in a reader thread; ``inline``: first on the event loop,
        on a connection that never waits (a read that would wait goes to the thread)."""
        if inline and self.try_inline:
            try:
                return call(self._inline)
            except sqlite3.OperationalError as error:
                if not is_busy(error):
                    raise
        return await asyncio.wrap_future(self._readers.submit(call, self.blocking))

    async def write(self, call: Callable[[Store], T], *, inline: bool = False) -> T:
        """Run a blocking write (or read-then-write) in the writer thread; ``inline``: first
        on the event loop when no write is queued, on a connection that never waits (a
        write that would wait for the lock rolls back and goes to the thread)."""
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

    def close(self) -> None:
        """Finish the queued calls, stop the threads and close every connection."""
        self._writer.shutdown()
        self._readers.shutdown()
        self._inline.close()
        self.blocking.close()

    create_session = _writes(Store.create_session)
    get_session = _reads(Store.get_session)
    list_sessions = _reads(Store.list_sessions)
    rename_session = _writes(Store.rename_session)
    delete_session = _writes(Store.delete_session)
    style_note = _reads(Store.style_note)
    set_style_note = _writes(Store.set_style_note)
    add_message = _writes(Store.add_message, inline=True)
    messages = _reads(Store.messages)
    count_messages = _reads(Store.count_messages)
    read_turn = _reads(read_turn, inline=True)
    delete_messages_from = _writes(Store.delete_messages_from)
    begin_turn = _writes(Store.begin_turn, inline=True)
    save_partial = _writes(Store.save_partial, inline=True)
    end_turn = _writes(Store.end_turn, inline=True)
    running_turns = _reads(Store.running_turns)
    request_stop = _writes(Store.request_stop)
    claim = _writes(Store.claim)
    stop_requested = _reads(Store.stop_requested, inline=True)
    close_interrupted = _writes(Store.close_interrupted)
    recent_segments = _reads(recent_segments)
    ranked_memories = _reads(ranked)
    create_memory = _writes(create_memory)
    update_memory = _writes(update_memory_by_id)
    delete_memory = _writes(delete_memory_by_id)
    undo_last_sql_edit = _writes(undo_last_edit)
    profile = _reads(Store.profile)
    set_profile = _writes(Store.set_profile)
    has_history = _reads(Store.has_history, inline=True)  # gates: WAL reads on the loop
    has_memories = _reads(Store.has_memories, inline=True)
    latest_image = _reads(Store.latest_image)
    # Tens of ms of searches on a long history: a reader thread, not the writers' queue;
    # its one small write (the facts it returns count as recalled) waits there if it must.
    recall = _reads(recall)
    remember = _writes(memories.create_memory)  # (create_memory above is the class's own)
    revise = _writes(memories.update_memory)
    forget = _writes(memories.delete_memory)

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
