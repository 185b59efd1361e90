"""``PgStore``: the ``AsyncStore`` interface on one Postgres database shared by everyone.

Every row carries its ``person``; forced row-level security shows a query only the rows
of ``app.person``, which each call sets for its own transaction (``set_config(...,
true)``: local to it), in the same round trip as the transaction's BEGIN; a call whose
statements need no result of one another sends the person and them in one round trip,
one transaction ended by the pipeline's Sync (``PgStore._batch``, psycopg's pipeline
mode). The app's role
owns no table and cannot turn the policies off; the schema is ``memory.postgres.schema``'s. Same
behaviour as SQLite (the contract tests); recall and segments are
``memory.postgres.recall``'s. Each person's images live in the ``media_dir`` given.
Driver failures a caller can act on become ``memory.errors``. Design: docs/postgres.md.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from functools import cached_property, partial
from pathlib import Path
from typing import Any

import numpy
from psycopg import AsyncConnection, AsyncCursor, Error, errors
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.pq import TransactionStatus
from psycopg.rows import DictRow, TupleRow, dict_row
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool

from memory.errors import MemoryExists, MemoryNotFound, StoreError, WriteRefused
from memory.postgres import erase as pg_erase
from memory.postgres import lexical as pg_lexical
from memory.postgres import recall as pg_recall
from memory.postgres import rows as pg_rows
from memory.postgres import sql_guard as pg_sql_guard
from memory.postgres import vectors as pg_vectors
from memory.postgres.pool import LoopPools
from memory.protocol import MemoryGates, TurnReads
from memory.query_vector import QueryVector
from memory.rules import scoring
from memory.rules.budget import TURN_BUDGET
from memory.rules.chat_search import chat_hits, checked_rating, feedback_query, version
from memory.rules.memories import check_category, check_key, check_value, rewritten
from memory.rules.sql_policy import EDITABLE_COLUMNS, HIDDEN_ROLE, undo_conflict
from memory.types import (
    ROLES,
    ChatHit,
    Clock,
    Edit,
    EditBatch,
    Feedback,
    ImportedChat,
    Memory,
    Message,
    RecallMode,
    Recollection,
    RunningTurn,
    Segment,
    Session,
    Summarizer,
    format_time,
    utc_now,
)

NOT_MIGRATED = (
    "the Postgres database has not got Companion's current schema: "
    "run `companion db migrate` (with COMPANION_DATABASE_ADMIN_URL set)"
)
POOL_MAX = 10  # connections a PgStore.open pool keeps at most
# The person a transaction's rows are (row-level security); local: gone at its end.
_SET_PERSON = "SELECT set_config('app.person', %s, true)"
_LAST_ID = 2**63 - 1  # bigint's largest: a search over every message


def _stamp(moment: datetime) -> datetime:
    """A moment as the store keeps it: to the second, like SQLite's text timestamps."""
    return moment.replace(microsecond=0)


def _jsonb(meta: dict[str, Any]) -> Jsonb:
    return Jsonb(meta, dumps=partial(json.dumps, ensure_ascii=False, default=str))


def _ranked(memories: list[Memory], now: datetime) -> list[Memory]:
    """``memories`` (in category, key order) as ``memory.sqlite.memories.ranked`` orders them:
    most retrievable at ``now`` first, ties most recently updated first."""
    memories.sort(key=lambda m: m.updated_at, reverse=True)
    memories.sort(key=lambda m: m.retrievability(now), reverse=True)
    return memories


# A statement of a batch (``PgStore._batch``): its SQL and parameters.
Statement = tuple[str, Sequence[Any]]


@dataclass(frozen=True)
class Done:
    """What one statement of a batch gave: its rows (none for a plain write), and how
    many rows it touched."""

    rows: list[DictRow]
    rowcount: int


_SESSION_COLUMNS = "s.id, s.title, s.persona, s.created_at, s.pinned_at, s.renamed"
# A person's rename marks the title theirs; the app's own title never replaces it.
_RENAME_BY_PERSON = "UPDATE sessions SET title = %s, renamed = true WHERE id = %s"
_RENAME_BY_APP = (
    "UPDATE sessions SET title = CASE WHEN renamed THEN title ELSE %s END WHERE id = %s"
)
_MESSAGE_COLUMNS = (
    "id, session_id, role, content, created_at, tool_name, tool_call_id, meta, image_path"
)
_MEMORY_COLUMNS = (
    "id, category, key, value, created_at, updated_at, stability, difficulty, "
    "last_recalled_at, recall_count"
)
_SEGMENT_COLUMNS = (
    "id, session_id, start_message_id, end_message_id, start_at, end_at, summary, summary_kind"
)
# SQLite's key match (COLLATE NOCASE) folds ASCII letters only; so does lower() under "C".
_SAME_KEY = 'lower(key COLLATE "C") = lower(%s COLLATE "C")'
# SQLite's all_memories order (BINARY collation: code point order), ranked's starting point.
_MEMORY_ORDER = 'category COLLATE "C", key COLLATE "C"'


def _message_statement(message: Message) -> Statement:
    """Insert ``message`` (its id is ignored; its session is created if missing) in one
    statement, which returns the new id. The session's row comes from a data-modifying
    WITH: the message's foreign key is checked at the statement's end, and sees it."""
    created_at = datetime.fromisoformat(message.created_at + "+00:00")
    return (
        """WITH session AS (
               INSERT INTO sessions (id, title, created_at) VALUES (%s, 'New chat', %s)
               ON CONFLICT DO NOTHING)
           INSERT INTO messages (session_id, role, content, created_at, tool_name,
                                 tool_call_id, meta, image_path)
           VALUES (%s, %s, %s, %s, %s, %s, %s, %s) RETURNING id""",
        (
            message.session_id,
            created_at,
            message.session_id,
            message.role,
            message.content,
            created_at,
            message.tool_name,
            message.tool_call_id,
            _jsonb(message.meta),
            message.image_path,
        ),
    )


async def _insert_message(cursor: AsyncCursor[DictRow], message: Message) -> Message:
    """Insert ``message`` (``_message_statement``) in the open transaction; the stored copy."""
    await cursor.execute(*_message_statement(message))
    row = await cursor.fetchone()
    assert row is not None
    return replace(message, id=row["id"])


async def _find_by_key(cursor: AsyncCursor[DictRow], key: str, category: str | None) -> Memory:
    """The one memory a key names, locked for this transaction (memory.sqlite.memories.find_by_key:
    the category is needed only when the key is in several)."""
    if category:
        category, key = check_category(category), check_key(key)
        await cursor.execute(
            f"""SELECT {_MEMORY_COLUMNS} FROM memories WHERE category = %s AND {_SAME_KEY}
                FOR UPDATE""",
            (category, key),
        )
        row = await cursor.fetchone()
        if row is None:
            raise MemoryNotFound(f"no memory {category}/{key} to change")
        return pg_rows.memory(row)
    key = check_key(key)
    await cursor.execute(
        f"""SELECT {_MEMORY_COLUMNS} FROM memories WHERE {_SAME_KEY}
            ORDER BY category COLLATE "C" FOR UPDATE""",
        (key,),
    )
    rows = await cursor.fetchall()
    if not rows:
        raise MemoryNotFound(f"no memory with key {key!r} to change")
    if len(rows) > 1:
        where = ", ".join(row["category"] for row in rows)
        raise MemoryNotFound(
            f"key {key!r} exists in several categories ({where}); say which category"
        )
    return pg_rows.memory(rows[0])


async def _rewrite(
    cursor: AsyncCursor[DictRow],
    memory: Memory,
    value: str,
    now: datetime,
    category: str | None = None,
    key: str | None = None,
) -> Memory:
    """Save a changed memory (``value`` already validated) in the open transaction;
    restating a fact counts as a recall (it strengthens it)."""
    new_category, new_key, strength = rewritten(memory, now, category, key)
    await cursor.execute(
        f"SELECT 1 FROM memories WHERE category = %s AND {_SAME_KEY} AND id <> %s",
        (new_category, new_key, memory.id),
    )
    if await cursor.fetchone():
        raise MemoryExists(f"memory {new_category}/{new_key} already exists")
    stamp = _stamp(now)
    try:
        await cursor.execute(
            f"""UPDATE memories SET category = %s, key = %s, value = %s,
                       updated_at = %s, stability = %s, difficulty = %s,
                       last_recalled_at = %s, recall_count = %s
                WHERE id = %s RETURNING {_MEMORY_COLUMNS}""",
            (
                new_category,
                new_key,
                value,
                stamp,
                strength.stability,
                strength.difficulty,
                stamp,
                strength.recall_count,
                memory.id,
            ),
        )
    except errors.UniqueViolation as error:  # the key was taken meanwhile
        raise MemoryExists(f"memory {new_category}/{new_key} already exists") from error
    updated = await cursor.fetchone()
    if updated is None:
        raise MemoryNotFound(f"memory {memory.category}/{memory.key} no longer exists")
    return pg_rows.memory(updated)


# Undo writes a journalled value back only where the row (of this person: row-level
# security) still holds the value memory_sql wrote; memory_tool messages never.
_PUT_BACK: dict[str, str] = {
    "messages": """UPDATE messages SET content = %s
                   WHERE id = %s AND content = %s AND role <> %s""",
    "memories": "UPDATE memories SET value = %s WHERE id = %s AND value = %s",
    "sessions": "UPDATE sessions SET title = %s WHERE id = %s AND title = %s",
}


def _edit(row: DictRow) -> Edit:
    """A journal entry as memory.sqlite.journal's Edit (a message's id as an integer)."""
    table, row_id = row["table_name"], row["row_id"]
    if table == "messages" and row_id.isdigit():
        row_id = int(row_id)
    return Edit(table, row_id, EDITABLE_COLUMNS[table], row["old_value"], row["new_value"])


async def _put_back(cursor: AsyncCursor[DictRow], edit: Edit) -> bool:
    """Write ``edit``'s old value where the row still holds its new one; False if not."""
    if edit.table == "messages" and not isinstance(edit.row_id, int):
        return False  # not a message id: no row can match
    hidden = (HIDDEN_ROLE,) if edit.table == "messages" else ()
    await cursor.execute(_PUT_BACK[edit.table], (edit.old, edit.row_id, edit.new, *hidden))
    return cursor.rowcount == 1


async def _roll_back(conn: AsyncConnection[TupleRow]) -> None:
    """End a failed call's transaction where the connection can still take a ROLLBACK
    (one whose query was cancelled midway is the pool's to check and discard)."""
    if conn.pgconn.transaction_status in (TransactionStatus.INTRANS, TransactionStatus.INERROR):
        with suppress(Error):
            await conn.rollback()


async def _pipelined(
    conn: AsyncConnection[TupleRow], statements: Sequence[Statement]
) -> list[AsyncCursor[DictRow]]:
    """Send ``statements`` in one round trip (psycopg's pipeline mode); a cursor each, for
    its results. The first failing statement's error is raised once the pipeline has
    ended: raised inside it, psycopg would also log the pipeline's own end ("error
    ignored terminating …: pipeline aborted") as a warning, which the CLI prints."""
    cursors = [conn.cursor(row_factory=dict_row) for _ in statements]
    failure: Error | None = None
    try:
        async with conn.pipeline():
            try:
                for cursor, (query, params) in zip(cursors, statements, strict=True):
                    await cursor.execute(query, params)
            except Error as exc:
                failure = exc
    except Error:
        if failure is None:
            raise
    if failure is not None:
        raise failure
    return cursors


# Whether any message is older than the one given (the memory tools' gates).
_EARLIER = "SELECT EXISTS(SELECT 1 FROM messages WHERE id < %s) AS earlier"
_WRITES = ("INSERT", "UPDATE", "DELETE", "MERGE", "WITH")  # WITH may hold a write


def _one_write(statements: Sequence[Statement]) -> None:
    """Refuse a batch of more than one statement that may write (``PgStore._batch``)."""
    writes = sum(query.lstrip()[:6].upper().startswith(_WRITES) for query, _ in statements)
    if writes > 1:
        raise ValueError(f"a batch holds at most one statement that writes ({writes} given)")


async def _done(cursor: AsyncCursor[DictRow]) -> Done:
    """A batch statement's rows (none when it returns no rows) and row count."""
    rows = await cursor.fetchall() if cursor.description is not None else []
    return Done(rows, cursor.rowcount)


# A pool of its own (``open``), or the process's pools shared by every person's store.
Pool = AsyncConnectionPool | LoopPools


class PgStore:
    """One person's store on a shared Postgres database (see the module docstring)."""

    # False: the BEGIN, the person, each statement and the COMMIT each in a round trip of
    # their own, as before issue 27 (bench.round_trips measures both in one run).
    pipeline = True

    def __init__(
        self,
        pool: Pool,
        person: str,
        *,
        clock: Clock = utc_now,
        owns_pool: bool,
        media_dir: Path | None = None,
    ) -> None:
        if not person:
            raise ValueError("a PgStore needs a person")
        self.pool = pool
        self.person = person
        self.clock = clock
        self._owns_pool = owns_pool
        self._media_dir = media_dir

    @classmethod
    async def open(
        cls, url: str, person: str, *, clock: Clock = utc_now, media_dir: Path | None = None
    ) -> PgStore:
        """``person``'s store on a pool of its own (closed by ``close``); ``media_dir`` is
        the person's image folder (see ``media_dir``)."""
        pool = AsyncConnectionPool(
            url, min_size=1, max_size=POOL_MAX, open=False, kwargs={"autocommit": True}
        )
        await pool.open(wait=True)
        return cls(pool, person, clock=clock, owns_pool=True, media_dir=media_dir)

    @classmethod
    def for_person(
        cls,
        pool: Pool,
        person: str,
        *,
        clock: Clock = utc_now,
        media_dir: Path | None = None,
    ) -> PgStore:
        """``person``'s store on a pool shared with other people's (the caller closes it;
        its connections must be in autocommit mode)."""
        return cls(pool, person, clock=clock, owns_pool=False, media_dir=media_dir)

    @property
    def media_dir(self) -> Path:
        """The person's image folder, created on first use. Images are files, not rows:
        the app gives each person a folder of their own (on its home), and there is no
        default — a store opened without one (``media_dir=None``: tests, tools that never
        touch images) raises StoreError here rather than share a folder between people."""
        if self._media_dir is None:
            raise StoreError(f"the store of {self.person!r} was opened without a media folder")
        self._media_dir.mkdir(parents=True, exist_ok=True)
        return self._media_dir

    @property
    def url(self) -> str:
        """The connection string the pool connects with (memory_sql opens its own)."""
        conninfo = self.pool.conninfo
        if not isinstance(conninfo, str):
            raise StoreError("memory_sql needs the pool's connection string")
        return conninfo

    @cached_property
    def location(self) -> str:
        """The database URL, without its password (parsed once: asked on every turn, by
        the background jobs that key their work by database)."""
        conninfo = self.pool.conninfo
        if not isinstance(conninfo, str):
            return "postgresql (connection string made per connection)"
        params = conninfo_to_dict(conninfo)
        params.pop("password", None)
        return make_conninfo("", **params)

    async def close(self) -> None:
        """Close the pool if this store opened it."""
        if self._owns_pool:
            await self.pool.close()

    def _now(self) -> datetime:
        return _stamp(self.clock())

    @asynccontextmanager
    async def _connection(self) -> AsyncIterator[AsyncConnection[TupleRow]]:
        """A connection of the pool; the driver failures a caller can act on raised as
        ``memory.errors``."""
        try:
            async with self.pool.connection() as conn:
                yield conn
        except (errors.UndefinedTable, errors.UndefinedColumn) as exc:
            raise StoreError(f"{NOT_MIGRATED} ({exc.diag.message_primary})") from exc
        except (
            errors.ReadOnlySqlTransaction,
            errors.DiskFull,
            errors.InsufficientPrivilege,
        ) as exc:
            raise WriteRefused(str(exc)) from exc

    @asynccontextmanager
    async def _transaction(self) -> AsyncIterator[AsyncCursor[DictRow]]:
        """A cursor in one transaction scoped to this store's person: its BEGIN and the
        person go to the server in one round trip, then each statement in its own (for
        work that reads a result before its next statement, or catches one's error)."""
        async with self._connection() as conn:
            cursor = conn.cursor(row_factory=dict_row)
            if not self.pipeline:
                async with conn.transaction():
                    await cursor.execute(_SET_PERSON, (self.person,))
                    yield cursor
                return
            try:
                # psycopg's transaction() would sync its BEGIN alone
                await _pipelined(conn, [("BEGIN", ()), (_SET_PERSON, (self.person,))])
                yield cursor
                await conn.commit()
            except BaseException:
                await _roll_back(conn)
                raise

    async def _batch(self, *statements: Statement) -> list[Done]:
        """Run ``statements`` in one transaction scoped to this store's person, and what
        each gave: the person and the statements go to the server in one round trip
        (psycopg's pipeline mode), for statements that need no result of one another.
        The transaction is the pipeline's own, which its Sync ends (the extended
        protocol's implicit transaction): no BEGIN or COMMIT to send, two statements
        fewer a call. A failing statement rolls back the whole transaction and is
        raised, as in ``_transaction``. A call cancelled midway commits what it had
        sent, as a SQLite call already running completes; so a batch holds at most one
        statement that writes (``_one_write``), which is then written whole or not."""
        if not self.pipeline:
            async with self._transaction() as first:
                cursors = [first.connection.cursor(row_factory=dict_row) for _ in statements]
                for cursor, (query, params) in zip(cursors, statements, strict=True):
                    await cursor.execute(query, params)
                return [await _done(cursor) for cursor in cursors]
        _one_write(statements)
        async with self._connection() as conn:
            try:
                cursors = await _pipelined(conn, [(_SET_PERSON, (self.person,)), *statements])
            except BaseException:
                await _roll_back(conn)
                raise
            return [await _done(cursor) for cursor in cursors[1:]]

    async def _run(self, query: str, params: Sequence[Any] = ()) -> Done:
        """One statement as a batch of its own (``_batch``): one round trip."""
        (done,) = await self._batch((query, params))
        return done

    async def _rows(self, query: str, params: Sequence[Any] = ()) -> list[DictRow]:
        """One statement's rows (``_run``)."""
        return (await self._run(query, params)).rows

    # sessions -------------------------------------------------------------------

    async def create_session(self, title: str = "New chat", persona: str | None = None) -> Session:
        """Start a new conversation."""
        created_at = self._now()
        session = Session(uuid.uuid4().hex[:12], title, persona, format_time(created_at))
        async with self._transaction() as cursor:
            await cursor.execute(
                "INSERT INTO sessions (id, title, persona, created_at) VALUES (%s, %s, %s, %s)",
                (session.id, title, persona, created_at),
            )
        return session

    async def get_session(self, session_id: str) -> Session | None:
        """The session with that id, or None."""
        found = await self._run(
            f"SELECT {_SESSION_COLUMNS} FROM sessions s WHERE id = %s", (session_id,)
        )
        return pg_rows.session(found.rows[0]) if found.rows else None

    async def list_sessions(self) -> list[Session]:
        """All sessions, most recently active first: by their newest message's time (an
        imported chat keeps its own times, so it sorts among the old ones), then by id."""
        async with self._transaction() as cursor:
            await cursor.execute(
                f"""SELECT {_SESSION_COLUMNS},
                          COALESCE(m.last_at, s.created_at) AS active_at FROM sessions s
                   LEFT JOIN (SELECT session_id, MAX(id) AS last_id, MAX(created_at) AS last_at
                              FROM messages GROUP BY session_id) m ON m.session_id = s.id
                   ORDER BY active_at DESC, COALESCE(m.last_id, 0) DESC, s.created_at DESC"""
            )
            rows = await cursor.fetchall()
        return [pg_rows.session(row) for row in rows]

    async def rename_session(self, session_id: str, title: str, *, by_person: bool = True) -> None:
        """Give a session a new title (StoreError: empty title, unknown session);
        ``by_person`` False is the app's own title, which leaves the person's as it is."""
        title = title.strip()
        if not title:
            raise StoreError("a session title cannot be empty")
        rename = _RENAME_BY_PERSON if by_person else _RENAME_BY_APP
        async with self._transaction() as cursor:
            await cursor.execute(rename, (title, session_id))
            changed = cursor.rowcount
        if changed == 0:
            raise StoreError(f"no session {session_id!r}")

    async def delete_session(self, session_id: str) -> None:
        """Delete a session and everything in it."""
        async with self._transaction() as cursor:
            await cursor.execute("DELETE FROM sessions WHERE id = %s", (session_id,))

    async def style_note(self, session_id: str) -> str | None:
        """The style note kept on the session, or None."""
        note = await self._run("SELECT style_note FROM sessions WHERE id = %s", (session_id,))
        return note.rows[0]["style_note"] if note.rows else None

    async def set_style_note(self, session_id: str, note: str | None) -> None:
        """Keep a style note on the session; None or blank removes it."""
        note = (note or "").strip() or None
        async with self._transaction() as cursor:
            await cursor.execute(
                "UPDATE sessions SET style_note = %s WHERE id = %s", (note, session_id)
            )
            changed = cursor.rowcount
        if changed == 0:
            raise StoreError(f"no session {session_id!r}")

    # messages -------------------------------------------------------------------

    async def add_message(
        self,
        session_id: str,
        role: str,
        content: str,
        *,
        tool_name: str | None = None,
        tool_call_id: str | None = None,
        meta: dict[str, Any] | None = None,
        image_path: str | None = None,
        created_at: datetime | None = None,
    ) -> Message:
        """Append a message to a session (created if missing); the stored message."""
        if role not in ROLES:
            raise StoreError(f"unknown message role {role!r}")
        stamp = format_time(created_at or self.clock())
        message = Message(
            0, session_id, role, content, stamp, tool_name, tool_call_id, meta or {}, image_path
        )
        (inserted,) = await self._batch(_message_statement(message))
        return replace(message, id=inserted.rows[0]["id"])

    async def import_chat(self, chat: ImportedChat) -> Session | None:
        """A conversation from another app as a new session with its own title and times,
        in one transaction; None when its source and source id were imported before."""
        created_at = _stamp(chat.created_at)
        session = Session(uuid.uuid4().hex[:12], chat.title, None, format_time(created_at))
        meta = _jsonb({"imported": chat.source})
        async with self._transaction() as cursor:
            await cursor.execute(
                "SELECT 1 FROM chat_imports WHERE source = %s AND source_id = %s",
                (chat.source, chat.source_id),
            )
            if await cursor.fetchone():
                return None
            await cursor.execute(
                "INSERT INTO sessions (id, title, created_at) VALUES (%s, %s, %s)",
                (session.id, session.title, created_at),
            )
            await cursor.execute(
                """INSERT INTO chat_imports (source, source_id, session_id, imported_at)
                   VALUES (%s, %s, %s, %s)""",
                (chat.source, chat.source_id, session.id, self._now()),
            )
            await cursor.executemany(
                """INSERT INTO messages (session_id, role, content, created_at, meta)
                   VALUES (%s, %s, %s, %s, %s)""",
                [
                    (session.id, m.role, m.content, _stamp(m.created_at), meta)
                    for m in chat.messages
                ],
            )
        return session

    async def delete_everything(self) -> dict[str, int]:
        """Forget this person: every row of theirs, in one transaction (memory.postgres.erase)."""
        async with self._transaction() as cursor:
            return await pg_erase.delete_everything(cursor)

    async def messages(self, session_id: str) -> list[Message]:
        """Every message of a session, oldest first."""
        found = await self._run(
            f"SELECT {_MESSAGE_COLUMNS} FROM messages WHERE session_id = %s ORDER BY id",
            (session_id,),
        )
        return [pg_rows.message(row) for row in found.rows]

    async def count_messages(self, session_id: str | None = None) -> int:
        """How many messages there are (in one session, or in all)."""
        async with self._transaction() as cursor:
            if session_id is None:
                await cursor.execute("SELECT COUNT(*) AS n FROM messages")
            else:
                await cursor.execute(
                    "SELECT COUNT(*) AS n FROM messages WHERE session_id = %s", (session_id,)
                )
            row = await cursor.fetchone()
        assert row is not None
        return int(row["n"])

    async def read_turn(
        self, session_id: str, user_message_id: int, *, history: int, now: datetime
    ) -> TurnReads:
        """build_context's reads, in one transaction and one round trip: this turn's
        messages, ``history`` messages up to the user's (0: none), the kept style note,
        and the memories ranked at ``now``; with the history, the memory tools' gates
        (one more statement in the same trip, where ``memory_gates`` was a trip of its own)."""
        reads: list[Statement] = [
            (
                f"""SELECT {_MESSAGE_COLUMNS} FROM messages WHERE session_id = %s AND id > %s
                    ORDER BY id""",
                (session_id, user_message_id),
            ),
            ("SELECT style_note FROM sessions WHERE id = %s", (session_id,)),
            (f"SELECT {_MEMORY_COLUMNS} FROM memories ORDER BY {_MEMORY_ORDER}", ()),
        ]
        if history:
            reads += [
                (
                    f"""SELECT {_MESSAGE_COLUMNS} FROM messages
                        WHERE session_id = %s AND id <= %s ORDER BY id DESC LIMIT %s""",
                    (session_id, user_message_id, history),
                ),
                (_EARLIER, (user_message_id,)),
            ]
        turn, note, memories, *asked = await self._batch(*reads)
        gates = MemoryGates.found(asked[1].rows[0]["earlier"], memories.rows) if asked else None
        return TurnReads(
            turn=[pg_rows.message(row) for row in turn.rows],
            history=[pg_rows.message(row) for row in reversed(asked[0].rows)] if asked else [],
            style_note=note.rows[0]["style_note"] if note.rows else None,
            memories=_ranked([pg_rows.memory(row) for row in memories.rows], now),
            gates=gates,
        )

    async def delete_messages_from(self, session_id: str, message_id: int) -> int:
        """Delete the session's messages from ``message_id`` on, and the segments that
        covered them (their summaries would still recall the deleted words); how many
        messages went."""
        async with self._transaction() as cursor:
            await cursor.execute(
                "DELETE FROM segments WHERE session_id = %s AND end_message_id >= %s",
                (session_id, message_id),
            )
            await cursor.execute(
                "DELETE FROM messages WHERE session_id = %s AND id >= %s",
                (session_id, message_id),
            )
            return cursor.rowcount

    async def memory_gates(self, before_id: int | None = None) -> MemoryGates:
        """``has_history`` and ``has_memories`` in one statement (one round trip)."""
        (row,) = await self._rows(
            f"{_EARLIER}, EXISTS(SELECT 1 FROM memories) AS memories",
            (before_id if before_id is not None else 2**62,),
        )
        return MemoryGates.found(row["earlier"], row["memories"])

    async def has_history(self, before_id: int | None = None) -> bool:
        """True when any memory exists, or any message older than ``before_id`` (the
        question being answered, which is not history yet); gates the memory tools."""
        return (await self.memory_gates(before_id)).history

    async def has_memories(self) -> bool:
        """True when any memory is stored (gates updating and forgetting one)."""
        return (await self.memory_gates()).memories

    async def latest_image(self, session_id: str) -> Message | None:
        """The newest message of the session that carries an image, or None."""
        async with self._transaction() as cursor:
            await cursor.execute(
                f"""SELECT {_MESSAGE_COLUMNS} FROM messages
                    WHERE session_id = %s AND image_path IS NOT NULL ORDER BY id DESC LIMIT 1""",
                (session_id,),
            )
            row = await cursor.fetchone()
        return pg_rows.message(row) if row else None

    async def search_messages(self, query: str, limit: int = 20) -> list[Message]:
        """Messages matching ``query`` (web-search syntax: words, "phrases", -not, or),
        best match first, then newest."""
        async with self._transaction() as cursor:
            await cursor.execute(
                f"""SELECT {_MESSAGE_COLUMNS} FROM messages,
                           websearch_to_tsquery('companion_words', companion_fold(%s)) AS q
                    WHERE tsv @@ q ORDER BY ts_rank(tsv, q) DESC, id DESC LIMIT %s""",
                (query, limit),
            )
            rows = await cursor.fetchall()
        return [pg_rows.message(row) for row in rows]

    # the chat list and the Graph tab ----------------------------------------------

    async def set_pinned(self, session_id: str, pinned: bool) -> None:
        """Pin a session (its pin's time orders the pinned ones) or unpin it."""
        async with self._transaction() as cursor:
            await cursor.execute(
                "UPDATE sessions SET pinned_at = %s WHERE id = %s",
                (self._now() if pinned else None, session_id),
            )
            changed = cursor.rowcount
        if changed == 0:
            raise StoreError(f"no session {session_id!r}")

    async def chat_version(self, session_id: str | None) -> str:
        """The newest message's id, the session's message count, every chat's title and
        pin and the session's running turns, as one token
        (``memory.rules.chat_search.version``)."""
        seen = await self._run(
            """SELECT (SELECT MAX(id) FROM messages) AS newest,
                      (SELECT COUNT(*) FROM messages WHERE session_id = %s) AS count,
                      (SELECT string_agg(concat_ws(' ', id, pinned_at, title), E'\n'
                                         ORDER BY id) FROM sessions) AS chats,
                      (SELECT string_agg(id::text, ' ' ORDER BY id) FROM running_turns
                       WHERE session_id = %s) AS turns""",
            (session_id, session_id),
        )
        row = seen.rows[0]
        return version(row["newest"], row["count"], row["chats"], row["turns"])

    async def search_chats(self, query: str, limit: int = 20) -> list[ChatHit]:
        """Titles holding the query's words, then the messages the whole-history lexical
        search ranks best (memory.postgres.lexical: row security keeps ``@@`` from the GIN
        index, the search table's btree is not)."""
        if not query.strip():
            return []
        async with self._transaction() as cursor:
            scores = await pg_lexical.lexical(
                cursor, query, (0, _LAST_ID), None, newest_first=False, limit=limit
            )
            await cursor.execute(
                f"SELECT {_MESSAGE_COLUMNS} FROM messages WHERE id = ANY(%s)", (list(scores),)
            )
            found = [pg_rows.message(row) for row in await cursor.fetchall()]
        found.sort(key=lambda message: (-scores[message.id], -message.id))
        return chat_hits(query, await self.list_sessions(), found, limit)

    async def save_trace(self, message_id: int, trace: dict[str, Any]) -> None:
        """Keep ``trace`` with the answer ``message_id`` (a second one replaces it)."""
        await self._run(
            """INSERT INTO answer_traces (message_id, trace) VALUES (%s, %s)
               ON CONFLICT (message_id) DO UPDATE SET trace = EXCLUDED.trace""",
            (message_id, _jsonb(trace)),
        )

    async def turn_trace(self, message_id: int) -> dict[str, Any] | None:
        """The trace kept with an answer, or None."""
        async with self._transaction() as cursor:
            await cursor.execute(
                "SELECT trace FROM answer_traces WHERE message_id = %s", (message_id,)
            )
            row = await cursor.fetchone()
        return dict(row["trace"]) if row else None

    async def traced_answers(self, session_id: str) -> list[int]:
        """The session's answers with a trace, oldest first."""
        async with self._transaction() as cursor:
            await cursor.execute(
                """SELECT t.message_id FROM answer_traces t
                   JOIN messages m ON m.id = t.message_id
                   WHERE m.session_id = %s ORDER BY t.message_id""",
                (session_id,),
            )
            rows = await cursor.fetchall()
        return [int(row["message_id"]) for row in rows]

    async def set_feedback(self, message_id: int, rating: int | None, comment: str = "") -> None:
        """Rate the answer ``message_id`` (or clear its rating with None)."""
        rating, comment = checked_rating(rating, comment)
        async with self._transaction() as cursor:
            await cursor.execute("SELECT role FROM messages WHERE id = %s", (message_id,))
            row = await cursor.fetchone()
            if row is None or row["role"] != "assistant":
                raise StoreError(f"no answer {message_id!r} to rate")
            if rating is None:
                await cursor.execute(
                    "DELETE FROM answer_feedback WHERE message_id = %s", (message_id,)
                )
                return
            await cursor.execute(
                """INSERT INTO answer_feedback (message_id, rating, comment, created_at)
                   VALUES (%s, %s, %s, %s)
                   ON CONFLICT (message_id) DO UPDATE SET rating = EXCLUDED.rating,
                       comment = EXCLUDED.comment, created_at = EXCLUDED.created_at""",
                (message_id, rating, comment, self._now()),
            )

    async def feedback(self, session_id: str | None = None) -> list[Feedback]:
        """The ratings (of ``session_id``, or every session's), newest first."""
        sql, params = feedback_query(session_id, "%s")
        async with self._transaction() as cursor:
            await cursor.execute(sql, params)
            rows = await cursor.fetchall()
        return [
            Feedback(
                message_id=int(row["message_id"]),
                session_id=row["session_id"],
                rating=int(row["rating"]),
                comment=row["comment"],
                created_at=format_time(row["created_at"]),
            )
            for row in rows
        ]

    # running turns --------------------------------------------------------------

    async def begin_turn(self, session_id: str, user_message_id: int, owner: str) -> int:
        """Record a turn as running for process ``owner``; the record's id."""
        stamp = self._now()
        begun = await self._run(
            """INSERT INTO running_turns (session_id, user_message_id, owner, started_at,
                                          updated_at)
               VALUES (%s, %s, %s, %s, %s) RETURNING id""",
            (session_id, user_message_id, owner, stamp, stamp),
        )
        return int(begun.rows[0]["id"])

    async def save_partial(self, turn_id: int, text: str) -> None:
        """Keep the running turn's answer so far."""
        await self._run(
            "UPDATE running_turns SET partial = %s, updated_at = %s WHERE id = %s",
            (text, self._now(), turn_id),
        )

    async def end_turn(self, turn_id: int) -> None:
        """The turn is over: forget its record."""
        await self._run("DELETE FROM running_turns WHERE id = %s", (turn_id,))

    async def running_turns(self) -> list[RunningTurn]:
        """Every turn recorded as running, oldest first."""
        running = await self._run(
            """SELECT id, session_id, user_message_id, owner, partial FROM running_turns
               ORDER BY id"""
        )
        return [RunningTurn(**row) for row in running.rows]

    async def request_stop(self, session_id: str) -> bool:
        """Ask whichever process runs the session's turn to stop it; False if none runs."""
        asked = await self._run(
            "UPDATE running_turns SET stop_requested = true WHERE session_id = %s",
            (session_id,),
        )
        return asked.rowcount > 0

    async def stop_requested(self, turn_id: int) -> bool:
        """True once Stop was asked for the turn (``request_stop``)."""
        turn = await self._run("SELECT stop_requested FROM running_turns WHERE id = %s", (turn_id,))
        return bool(turn.rows and turn.rows[0]["stop_requested"])

    async def claim(self, job: str, holder: str, seconds: float) -> bool:
        """Take (or renew) the lease of a background job for ``seconds``: True when
        ``holder`` has it now, False while another holder's lease runs. One statement:
        two processes claiming at once queue on the row, and the second sees the first's
        lease."""
        now = self.clock()
        lease = await self._run(
            """INSERT INTO job_leases (name, holder, until) VALUES (%s, %s, %s)
               ON CONFLICT (person, name) DO UPDATE
               SET holder = excluded.holder, until = excluded.until
               WHERE job_leases.holder = excluded.holder OR job_leases.until <= %s
               RETURNING holder""",
            (job, holder, _stamp(now + timedelta(seconds=seconds)), now),
        )
        return bool(lease.rows)

    async def close_interrupted(self, turn: RunningTurn, meta: dict[str, Any]) -> Message | None:
        """Store a dead turn's text so far as its answer, marked by ``meta``, and forget
        its record, in one transaction (None: another process already did)."""
        answer = Message(
            0, turn.session_id, "assistant", turn.partial, format_time(self.clock()), meta=meta
        )
        async with self._transaction() as cursor:
            await cursor.execute("DELETE FROM running_turns WHERE id = %s", (turn.id,))
            return await _insert_message(cursor, answer) if cursor.rowcount else None

    # segments -------------------------------------------------------------------

    async def refresh_segments(
        self, session_id: str, summarize: Summarizer | None, *, force: bool, tz: str
    ) -> int:
        """Cut the session's closed messages into summarised segments (memory.postgres.recall)."""
        return await pg_recall.refresh_segments(self, session_id, summarize, force=force, tz=tz)

    async def catch_up_segments(self, summarize: Summarizer | None, *, tz: str) -> int:
        """Summarise a bounded batch of every session's quiet segments; 0 when done."""
        return await pg_recall.catch_up_segments(self, summarize, tz=tz)

    async def recall(
        self,
        query: str,
        *,
        now: datetime,
        tz: str,
        session_id: str | None,
        question_id: int | None,
        vector: numpy.ndarray | QueryVector | None = None,
        vector_model: str | None = None,
        mode: RecallMode = "hybrid",
        turns: int = TURN_BUDGET,
    ) -> Recollection:
        """memory_search's recall on Postgres (memory.postgres.recall)."""
        return await pg_recall.recall(
            self,
            query,
            now=now,
            tz=tz,
            session_id=session_id,
            question_id=question_id,
            vector=vector,
            vector_model=vector_model,
            mode=mode,
            turns=turns,
        )

    # the vector index (memory.postgres.vectors): empty where the database has no pgvector
    async def unembedded(self, model: str, limit: int) -> list[tuple[int, str]]:
        """(id, text) of up to ``limit`` user/assistant messages with no vector of ``model``,
        oldest first (none where the database has no vector index)."""
        async with self._transaction() as cursor:
            return await pg_vectors.unembedded(cursor, model, limit)

    async def add_vectors(self, model: str, rows: Sequence[tuple[int, numpy.ndarray]]) -> None:
        """Keep each message's vector for ``model`` (replacing one it had); a gone message
        is skipped."""
        async with self._transaction() as cursor:
            await pg_vectors.add_vectors(cursor, model, rows)

    async def vector_status(self, model: str) -> tuple[int, int]:
        """(messages with a vector of ``model``, user/assistant messages in all)."""
        async with self._transaction() as cursor:
            return await pg_vectors.vector_status(cursor, model)

    async def drop_vectors(self, except_model: str | None) -> int:
        """Forget every model's vectors but ``except_model``'s (None: all); how many."""
        async with self._transaction() as cursor:
            return await pg_vectors.drop_vectors(cursor, except_model)

    async def vector_index(self) -> str | None:
        """pgvector's version where the database has the vector index, else None (recall
        is lexical; ``companion doctor`` says so)."""
        async with self._transaction() as cursor:
            version = await pg_vectors.index_version(cursor)
        return None if version is None else ".".join(map(str, version))

    async def recent_segments(self, limit: int = 50) -> list[Segment]:
        """The newest segments of every session, newest first (the Memories tab's segments)."""
        async with self._transaction() as cursor:
            await cursor.execute(
                f"SELECT {_SEGMENT_COLUMNS} FROM segments ORDER BY end_at DESC, id DESC LIMIT %s",
                (limit,),
            )
            rows = await cursor.fetchall()
        return [pg_rows.segment(row) for row in rows]

    # memories -------------------------------------------------------------------

    async def ranked_memories(self, now: datetime) -> list[Memory]:
        """Every memory, most retrievable at ``now`` first (ties: most recently updated)."""
        found = await self._run(f"SELECT {_MEMORY_COLUMNS} FROM memories ORDER BY {_MEMORY_ORDER}")
        return _ranked([pg_rows.memory(row) for row in found.rows], now)

    async def create_memory(
        self, category: str, key: str, value: str, now: datetime | None = None
    ) -> Memory:
        """Store a new fact; raises MemoryExists when the key is taken (update it instead)."""
        category, key, value = check_category(category), check_key(key), check_value(value)
        stamp = _stamp(now if now is not None else self.clock())
        strength = scoring.initial_strength()
        async with self._transaction() as cursor:
            await cursor.execute(
                f"SELECT value FROM memories WHERE category = %s AND {_SAME_KEY}",
                (category, key),
            )
            existing = await cursor.fetchone()
            if existing is not None:
                raise MemoryExists(
                    f"memory {category}/{key} already exists (value: {existing['value']!r}); "
                    "use update_memory to change it"
                )
            try:
                await cursor.execute(
                    f"""INSERT INTO memories (id, category, key, value, created_at, updated_at,
                                              stability, difficulty)
                        VALUES (%s, %s, %s, %s, %s, %s, %s, %s) RETURNING {_MEMORY_COLUMNS}""",
                    (
                        str(uuid.uuid4()),
                        category,
                        key,
                        value,
                        stamp,
                        stamp,
                        strength.stability,
                        strength.difficulty,
                    ),
                )
            except errors.UniqueViolation as error:  # created meanwhile by another call
                raise MemoryExists(f"memory {category}/{key} already exists") from error
            row = await cursor.fetchone()
        assert row is not None
        return pg_rows.memory(row)

    async def import_memory(self, memory: Memory) -> bool:
        """Keep a memory from a Companion export as it was (id, times, strength); False,
        and nothing added, when its id or key is here already (InvalidMemory: invalid)."""
        category, key = check_category(memory.category), check_key(memory.key)
        value = check_value(memory.value)
        async with self._transaction() as cursor:
            await cursor.execute(
                f"""INSERT INTO memories ({_MEMORY_COLUMNS})
                    SELECT %s, %s, %s, %s, %s, %s, %s, %s, %s, %s WHERE NOT EXISTS
                    (SELECT 1 FROM memories WHERE id = %s OR (category = %s AND {_SAME_KEY}))
                    ON CONFLICT DO NOTHING""",
                (
                    memory.id,
                    category,
                    key,
                    value,
                    datetime.fromisoformat(memory.created_at + "+00:00"),
                    datetime.fromisoformat(memory.updated_at + "+00:00"),
                    memory.stability,
                    memory.difficulty,
                    None
                    if memory.last_recalled_at is None
                    else datetime.fromisoformat(memory.last_recalled_at + "+00:00"),
                    memory.recall_count,
                    memory.id,
                    category,
                    key,
                ),
            )
            return cursor.rowcount == 1

    async def update_memory(
        self,
        memory_id: str,
        value: str,
        *,
        key: str | None = None,
        category: str | None = None,
        now: datetime | None = None,
    ) -> Memory:
        """Edit a memory from the app's Memories tab (value, and optionally key/category);
        restating a fact counts as a recall (it strengthens it)."""
        now = now if now is not None else self.clock()
        async with self._transaction() as cursor:
            await cursor.execute(
                f"SELECT {_MEMORY_COLUMNS} FROM memories WHERE id = %s FOR UPDATE", (memory_id,)
            )
            row = await cursor.fetchone()
            if row is None:
                raise MemoryNotFound(f"no memory with id {memory_id!r}")
            return await _rewrite(
                cursor, pg_rows.memory(row), check_value(value), now, category, key
            )

    async def remember(self, category: str, key: str, value: str, now: datetime) -> Memory:
        """create_memory (the tool): a new fact (MemoryExists: the key is taken)."""
        return await self.create_memory(category, key, value, now)

    async def revise(self, category: str | None, key: str, value: str, now: datetime) -> Memory:
        """update_memory (the tool): a fact's new value, found by key (and category when
        given); MemoryNotFound when there is none, or the key is in several categories."""
        value = check_value(value)
        async with self._transaction() as cursor:
            memory = await _find_by_key(cursor, key, category)
            return await _rewrite(cursor, memory, value, now)

    async def forget(self, category: str | None, key: str) -> Memory:
        """delete_memory (the tool): forget a fact found by key; what was deleted."""
        async with self._transaction() as cursor:
            memory = await _find_by_key(cursor, key, category)
            await cursor.execute("DELETE FROM memories WHERE id = %s", (memory.id,))
        return memory

    async def delete_memory(self, memory_id: str) -> None:
        """Delete a memory by id; raises MemoryNotFound when there is none."""
        async with self._transaction() as cursor:
            await cursor.execute("DELETE FROM memories WHERE id = %s", (memory_id,))
            deleted = cursor.rowcount
        if deleted == 0:
            raise MemoryNotFound(f"no memory with id {memory_id!r}")

    # memory_sql -----------------------------------------------------------------

    async def run_sql(self, sql: str, *, now: datetime) -> dict[str, Any]:
        """memory_sql: one guarded SELECT or UPDATE over this person's rows
        (memory.postgres.sql_guard, on a connection of its own); an UPDATE is journalled at
        ``now``. The result or ``{"error": ...}``, never raises."""
        return await pg_sql_guard.run_sql(self.url, self.person, sql, now=now)

    async def undo_last_sql_edit(self) -> EditBatch | None:
        """Put back the values the newest not-undone memory_sql batch replaced; the batch,
        or None when there is nothing to undo. EditConflict (nothing restored) when any
        of its rows changed since. Each value is written through a fixed statement per
        table, by id, under this person's row-level security and never on a memory_tool
        message: a journal entry can only name a row of this person that still holds
        the text memory_sql gave it."""
        async with self._transaction() as cursor:
            await cursor.execute(
                """SELECT batch FROM sql_edits WHERE undone_at IS NULL
                   ORDER BY id DESC LIMIT 1 FOR UPDATE"""
            )
            newest = await cursor.fetchone()
            if newest is None:
                return None
            await cursor.execute(
                """SELECT table_name, row_id, old_value, new_value, created_at FROM sql_edits
                   WHERE batch = %s ORDER BY id FOR UPDATE""",
                (newest["batch"],),
            )
            rows = await cursor.fetchall()
            batch = EditBatch(
                newest["batch"],
                format_time(rows[0]["created_at"]),
                tuple(_edit(row) for row in rows),
            )
            moved = [edit.label for edit in batch.edits if not await _put_back(cursor, edit)]
            if moved:
                raise undo_conflict(moved, batch.created_at)
            await cursor.execute(
                "UPDATE sql_edits SET undone_at = %s WHERE batch = %s",
                (self._now(), batch.batch),
            )
        return batch

    # profile --------------------------------------------------------------------

    async def profile(self) -> dict[str, str]:
        """Every profile setting as text."""
        settings = await self._run("SELECT key, value FROM profile")
        return {row["key"]: row["value"] for row in settings.rows}

    async def set_profile(self, values: dict[str, str | float | int | None]) -> None:
        """Save settings; a None value removes the key."""
        async with self._transaction() as cursor:
            for key, value in values.items():
                if value is None:
                    await cursor.execute("DELETE FROM profile WHERE key = %s", (key,))
                else:
                    await cursor.execute(
                        """INSERT INTO profile (key, value) VALUES (%s, %s)
                           ON CONFLICT (person, key) DO UPDATE SET value = excluded.value""",
                        (key, str(value)),
                    )
