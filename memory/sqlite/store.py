"""``SqliteStore``: one person's SQLite file, the blocking store of sessions, messages,
running turns, job leases and the profile (memories, segments and recall are the
modules beside it, on the same store).

It keeps one connection per thread (SQLite connections are cheap and WAL lets readers
and writers overlap), so worker threads, the CLI and background jobs can share it. Its
calls block: async code uses it through ``memory.sqlite.async_store``.
"""

from __future__ import annotations

import copy
import functools
import json
import sqlite3
import threading
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from memory.errors import StoreError
from memory.protocol import MemoryGates
from memory.rules.files import owner_only, owner_only_folder, private_folder
from memory.sqlite.db import BUSY_TIMEOUT_MS, connect, migrate
from memory.types import (
    ROLES,
    Clock,
    ImportedChat,
    Message,
    RunningTurn,
    Session,
    format_time,
    parse_time,
    utc_now,
)


def _message(row: sqlite3.Row) -> Message:
    return Message(
        id=row["id"],
        session_id=row["session_id"],
        role=row["role"],
        content=row["content"],
        created_at=row["created_at"],
        tool_name=row["tool_name"],
        tool_call_id=row["tool_call_id"],
        meta=json.loads(row["meta"] or "{}"),
        image_path=row["image_path"],
    )


# A person's rename marks the title theirs; the app's own title never replaces it.
RENAME_BY_PERSON = "UPDATE sessions SET title = ?, renamed = 1 WHERE id = ?"
RENAME_BY_APP = "UPDATE sessions SET title = CASE WHEN renamed THEN title ELSE ? END WHERE id = ?"
_SESSION_COLUMNS = "s.id, s.title, s.persona, s.created_at, s.pinned_at, s.renamed"


def _session(row: sqlite3.Row) -> Session:
    """A ``sessions`` row (with ``active_at`` when the query adds it) as a ``Session``."""
    values = dict(row)
    return Session(
        id=values["id"],
        title=values["title"],
        persona=values["persona"],
        created_at=values["created_at"],
        active_at=values.get("active_at") or "",
        pinned=values["pinned_at"] is not None,
        renamed=bool(values["renamed"]),
    )


def _insert_message(conn: sqlite3.Connection, message: Message) -> Message:
    """Insert ``message`` (its id is ignored) in the open transaction; the stored copy."""
    conn.execute(
        "INSERT OR IGNORE INTO sessions (id, title, created_at) VALUES (?, ?, ?)",
        (message.session_id, "New chat", message.created_at),
    )
    cursor = conn.execute(
        """INSERT INTO messages (session_id, role, content, created_at, tool_name,
                                 tool_call_id, meta, image_path)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?)""",
        (
            message.session_id,
            message.role,
            message.content,
            message.created_at,
            message.tool_name,
            message.tool_call_id,
            json.dumps(message.meta, ensure_ascii=False, default=str),
            message.image_path,
        ),
    )
    assert cursor.lastrowid is not None
    return replace(message, id=cursor.lastrowid)


class SqliteStore:
    """Typed access to the SQLite database under COMPANION_HOME."""

    def __init__(self, path: Path | str, *, clock: Clock = utc_now) -> None:
        self.path = Path(path)
        private_folder(self.path.parent)
        owner_only(self.path)
        self.clock = clock
        self._wait_ms = BUSY_TIMEOUT_MS
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        migrate(self.conn)

    def without_waiting(self) -> SqliteStore:
        """This store on connections of its own that never wait: a call that needs a lock
        another connection holds raises at once (``memory.sqlite.db.is_busy``), and a commit never
        runs a WAL checkpoint (``checkpoint`` does, elsewhere). For the event loop."""
        other = copy.copy(self)
        other._wait_ms = 0
        other._local = threading.local()
        other._connections = []
        other._lock = threading.Lock()
        return other

    @classmethod
    def open_home(cls, home: Path | str, *, clock: Clock = utc_now) -> SqliteStore:
        """Open (creating if needed) the store of a COMPANION_HOME folder."""
        home = private_folder(Path(home).expanduser())
        owner_only_folder(home / "media")
        return cls(home / "companion.db", clock=clock)

    @functools.cached_property
    def media_dir(self) -> Path:
        """Folder for images beside the database (created on first use)."""
        return owner_only_folder(self.path.parent / "media")

    @property
    def conn(self) -> sqlite3.Connection:
        """This thread's connection."""
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = connect(self.path, wait_ms=self._wait_ms)
            if not self._wait_ms:
                conn.execute("PRAGMA wal_autocheckpoint=0")
            self._local.conn = conn
            with self._lock:
                self._connections.append(conn)
        return conn

    def close(self) -> None:
        """Close every connection this store opened."""
        with self._lock:
            for conn in self._connections:
                conn.close()
            self._connections.clear()
        self._local = threading.local()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """A write transaction taken up front, so concurrent writers queue politely."""
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def checkpoint(self) -> None:
        """Copy what the write-ahead log holds into the database file (a passive
        checkpoint: it waits for no one, and leaves what readers still need)."""
        self.conn.execute("PRAGMA wal_checkpoint(PASSIVE)")

    def health(self) -> tuple[str, int]:
        """``PRAGMA integrity_check``'s verdict ("ok" when sound) and the schema version."""
        verdict = "; ".join(row[0] for row in self.conn.execute("PRAGMA integrity_check"))
        version = self.conn.execute("SELECT MAX(version) FROM schema_version").fetchone()[0]
        return verdict, int(version or 0)

    def now(self) -> str:
        """The store clock's current time, formatted."""
        return format_time(self.clock())

    # sessions -------------------------------------------------------------------

    def create_session(self, title: str = "New chat", persona: str | None = None) -> Session:
        """Start a new conversation."""
        session = Session(uuid.uuid4().hex[:12], title, persona, self.now())
        with self.transaction() as conn:
            conn.execute(
                "INSERT INTO sessions (id, title, persona, created_at) VALUES (?, ?, ?, ?)",
                (session.id, session.title, session.persona, session.created_at),
            )
        return session

    def get_session(self, session_id: str) -> Session | None:
        """The session with that id, or None."""
        row = self.conn.execute(
            f"SELECT {_SESSION_COLUMNS} FROM sessions s WHERE id = ?", (session_id,)
        ).fetchone()
        return _session(row) if row else None

    def session_titles(self, session_ids: Iterable[str]) -> dict[str, str]:
        """Titles of the given sessions, by id (unknown ids are left out)."""
        ids = sorted(set(session_ids))
        if not ids:
            return {}
        marks = ", ".join("?" for _ in ids)
        rows = self.conn.execute(
            f"SELECT id, title FROM sessions WHERE id IN ({marks})", ids
        ).fetchall()
        return {row["id"]: row["title"] for row in rows}

    def list_sessions(self) -> list[Session]:
        """All sessions, most recently active first: by their newest message's time (an
        imported chat keeps its own times, so it sorts among the old ones), then by id."""
        rows = self.conn.execute(
            f"""SELECT {_SESSION_COLUMNS},
                      COALESCE(m.last_at, s.created_at) AS active_at FROM sessions s
               LEFT JOIN (SELECT session_id, MAX(id) AS last_id, MAX(created_at) AS last_at
                          FROM messages GROUP BY session_id) m ON m.session_id = s.id
               ORDER BY active_at DESC, COALESCE(m.last_id, 0) DESC, s.created_at DESC"""
        ).fetchall()
        return [_session(row) for row in rows]

    def rename_session(self, session_id: str, title: str, *, by_person: bool = True) -> None:
        """Give a session a new title; ``by_person`` False is the app's own title, which
        leaves a title the person chose as it is."""
        title = title.strip()
        if not title:
            raise StoreError("a session title cannot be empty")
        with self.transaction() as conn:
            rename = RENAME_BY_PERSON if by_person else RENAME_BY_APP
            cursor = conn.execute(rename, (title, session_id))
        if cursor.rowcount == 0:
            raise StoreError(f"no session {session_id!r}")

    def delete_session(self, session_id: str) -> None:
        """Delete a session and everything in it."""
        with self.transaction() as conn:
            conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,))

    def style_note(self, session_id: str) -> str | None:
        """The style note kept for the rest of this session ("amend"), or None."""
        row = self.conn.execute(
            "SELECT style_note FROM sessions WHERE id = ?", (session_id,)
        ).fetchone()
        return row["style_note"] if row else None

    def set_style_note(self, session_id: str, note: str | None) -> None:
        """Keep a style note for the rest of this session; None or blank removes it."""
        note = (note or "").strip() or None
        with self.transaction() as conn:
            cursor = conn.execute(
                "UPDATE sessions SET style_note = ? WHERE id = ?", (note, session_id)
            )
        if cursor.rowcount == 0:
            raise StoreError(f"no session {session_id!r}")

    # messages -------------------------------------------------------------------

    def add_message(
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
        """Append a message to a session (the session is created if missing)."""
        if role not in ROLES:
            raise StoreError(f"unknown message role {role!r}")
        stamp = format_time(created_at) if created_at else self.now()
        message = Message(
            0, session_id, role, content, stamp, tool_name, tool_call_id, meta or {}, image_path
        )
        with self.transaction() as conn:
            return _insert_message(conn, message)

    def import_chat(self, chat: ImportedChat) -> Session | None:
        """A conversation from another app as a new session with its own title and times,
        in one transaction; None when its source and source id were imported before."""
        session = Session(uuid.uuid4().hex[:12], chat.title, None, format_time(chat.created_at))
        meta = json.dumps({"imported": chat.source})
        with self.transaction() as conn:
            known = conn.execute(
                "SELECT 1 FROM chat_imports WHERE source = ? AND source_id = ?",
                (chat.source, chat.source_id),
            ).fetchone()
            if known:
                return None
            conn.execute(
                "INSERT INTO sessions (id, title, created_at) VALUES (?, ?, ?)",
                (session.id, session.title, session.created_at),
            )
            conn.execute(
                """INSERT INTO chat_imports (source, source_id, session_id, imported_at)
                   VALUES (?, ?, ?, ?)""",
                (chat.source, chat.source_id, session.id, self.now()),
            )
            conn.executemany(
                """INSERT INTO messages (session_id, role, content, created_at, meta)
                   VALUES (?, ?, ?, ?, ?)""",
                [
                    (session.id, m.role, m.content, format_time(m.created_at), meta)
                    for m in chat.messages
                ],
            )
        return session

    def get_message(self, message_id: int) -> Message | None:
        """One message by id."""
        row = self.conn.execute("SELECT * FROM messages WHERE id = ?", (message_id,)).fetchone()
        return _message(row) if row else None

    def recent_messages(
        self, session_id: str, limit: int = 25, before_id: int | None = None
    ) -> list[Message]:
        """The last ``limit`` messages of a session, oldest first."""
        rows = self.conn.execute(
            """SELECT * FROM messages WHERE session_id = ? AND id < ?
               ORDER BY id DESC LIMIT ?""",
            (session_id, before_id if before_id is not None else 2**62, limit),
        ).fetchall()
        return [_message(row) for row in reversed(rows)]

    def messages(self, session_id: str) -> list[Message]:
        """Every message of a session, oldest first."""
        rows = self.conn.execute(
            "SELECT * FROM messages WHERE session_id = ? ORDER BY id", (session_id,)
        ).fetchall()
        return [_message(row) for row in rows]

    def messages_after(self, session_id: str, after_id: int) -> list[Message]:
        """Messages of a session newer than ``after_id``, oldest first."""
        rows = self.conn.execute(
            "SELECT * FROM messages WHERE session_id = ? AND id > ? ORDER BY id",
            (session_id, after_id),
        ).fetchall()
        return [_message(row) for row in rows]

    def count_messages(self, session_id: str | None = None) -> int:
        """How many messages there are (in one session, or in all)."""
        if session_id is None:
            row = self.conn.execute("SELECT COUNT(*) FROM messages").fetchone()
        else:
            row = self.conn.execute(
                "SELECT COUNT(*) FROM messages WHERE session_id = ?", (session_id,)
            ).fetchone()
        return int(row[0])

    def memory_gates(self, before_id: int | None = None) -> MemoryGates:
        """``has_history`` and ``has_memories`` in one query."""
        earlier, memories = self.conn.execute(
            "SELECT EXISTS(SELECT 1 FROM messages WHERE id < ?), EXISTS(SELECT 1 FROM memories)",
            (before_id if before_id is not None else 2**62,),
        ).fetchone()
        return MemoryGates.found(earlier, memories)

    def has_history(self, before_id: int | None = None) -> bool:
        """True when any memory exists, or any message older than ``before_id`` (the
        question being answered, which is not history yet); gates the memory tools."""
        return self.memory_gates(before_id).history

    def has_memories(self) -> bool:
        """True when any structured memory is stored (gates updating and forgetting)."""
        return self.memory_gates().memories

    def latest_image(self, session_id: str) -> Message | None:
        """The newest message of the session that carries an image."""
        row = self.conn.execute(
            """SELECT * FROM messages WHERE session_id = ? AND image_path IS NOT NULL
               ORDER BY id DESC LIMIT 1""",
            (session_id,),
        ).fetchone()
        return _message(row) if row else None

    def delete_messages_from(self, session_id: str, message_id: int) -> int:
        """Delete the session's messages from ``message_id`` on (an edited message and
        what followed it, or a turn's answer before it is generated again); how many.

        Segments that covered any of them go too: their summaries would still recall
        the deleted words. The messages before them are cut into segments again.
        """
        with self.transaction() as conn:
            conn.execute(
                "DELETE FROM segments WHERE session_id = ? AND end_message_id >= ?",
                (session_id, message_id),
            )
            cursor = conn.execute(
                "DELETE FROM messages WHERE session_id = ? AND id >= ?", (session_id, message_id)
            )
        return cursor.rowcount

    # running turns --------------------------------------------------------------

    def begin_turn(self, session_id: str, user_message_id: int, owner: str) -> int:
        """Record a turn as running (its answer so far is empty); its row id."""
        stamp = self.now()
        with self.transaction() as conn:
            cursor = conn.execute(
                """INSERT INTO running_turns (session_id, user_message_id, owner, started_at,
                                              updated_at) VALUES (?, ?, ?, ?, ?)""",
                (session_id, user_message_id, owner, stamp, stamp),
            )
        assert cursor.lastrowid is not None
        return cursor.lastrowid

    def save_partial(self, turn_id: int, text: str) -> None:
        """Keep the answer's text so far (what the person has seen of it)."""
        with self.transaction() as conn:
            conn.execute(
                "UPDATE running_turns SET partial = ?, updated_at = ? WHERE id = ?",
                (text, self.now(), turn_id),
            )

    def end_turn(self, turn_id: int) -> None:
        """The turn is over (answered, failed or stopped): forget its row."""
        with self.transaction() as conn:
            conn.execute("DELETE FROM running_turns WHERE id = ?", (turn_id,))

    def request_stop(self, session_id: str) -> bool:
        """Ask whichever process runs the session's turn to stop it; False if none runs."""
        with self.transaction() as conn:
            cursor = conn.execute(
                "UPDATE running_turns SET stop_requested = 1 WHERE session_id = ?", (session_id,)
            )
        return cursor.rowcount > 0

    def stop_requested(self, turn_id: int) -> bool:
        """True once Stop was asked for the turn (``request_stop``)."""
        row = self.conn.execute(
            "SELECT stop_requested FROM running_turns WHERE id = ?", (turn_id,)
        ).fetchone()
        return bool(row and row[0])

    def claim(self, job: str, holder: str, seconds: float) -> bool:
        """Take (or renew) the lease of a background job for ``seconds``: True when
        ``holder`` has it now, False while another holder's lease runs."""
        now = self.clock()
        until = format_time(now + timedelta(seconds=seconds))
        with self.transaction() as conn:
            row = conn.execute(
                "SELECT holder, until FROM job_leases WHERE name = ?", (job,)
            ).fetchone()
            if row and row["holder"] != holder and parse_time(row["until"]) > now:
                return False
            conn.execute(
                """INSERT INTO job_leases (name, holder, until) VALUES (?, ?, ?)
                   ON CONFLICT(name) DO UPDATE SET holder = excluded.holder,
                                                   until = excluded.until""",
                (job, holder, until),
            )
        return True

    def running_turns(self) -> list[RunningTurn]:
        """Every turn recorded as running, oldest first."""
        rows = self.conn.execute(
            """SELECT id, session_id, user_message_id, owner, partial FROM running_turns
               ORDER BY id"""
        ).fetchall()
        return [RunningTurn(**dict(row)) for row in rows]

    def close_interrupted(self, turn: RunningTurn, meta: dict[str, Any]) -> Message | None:
        """Store an interrupted turn's text so far as its answer (``meta`` marks it) and
        forget its row, in one transaction; None if the row was already gone."""
        answer = Message(0, turn.session_id, "assistant", turn.partial, self.now(), meta=meta)
        with self.transaction() as conn:
            gone = conn.execute("DELETE FROM running_turns WHERE id = ?", (turn.id,))
            return _insert_message(conn, answer) if gone.rowcount else None

    # profile --------------------------------------------------------------------

    def profile(self) -> dict[str, str]:
        """Every profile setting as text."""
        rows = self.conn.execute("SELECT key, value FROM profile").fetchall()
        return {row["key"]: row["value"] for row in rows}

    def set_profile(self, values: dict[str, str | float | int | None]) -> None:
        """Save settings; a None value removes the key."""
        with self.transaction() as conn:
            for key, value in values.items():
                if value is None:
                    conn.execute("DELETE FROM profile WHERE key = ?", (key,))
                else:
                    conn.execute(
                        """INSERT INTO profile (key, value) VALUES (?, ?)
                           ON CONFLICT(key) DO UPDATE SET value = excluded.value""",
                        (key, str(value)),
                    )


def query_rows(store: SqliteStore, sql: str) -> list[list[Any]]:
    """Rows of a read-only check query on the store's own connection (an error becomes
    one row holding it)."""
    try:
        return [list(row) for row in store.conn.execute(sql).fetchall()]
    except sqlite3.Error as exc:
        return [[f"error: {exc}"]]
