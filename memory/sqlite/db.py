"""SQLite connection set-up and the versioned schema migrations of the store.

Every connection is opened the same way (WAL, foreign keys, busy timeout) so several
sessions and processes can write at once; migrations run once per database file and
are recorded in ``schema_version``.

What a home holds is its owner's alone: the database file is 0600 (``owner_only``), a
home folder Companion creates is 0700 (``private_folder``), and the folders it names
itself (media/, logs/) are made 0700 even when they already exist (``owner_only_folder``).
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path

BUSY_TIMEOUT_MS = 10_000

log = logging.getLogger("companion.db")

# Each entry upgrades the schema by one version. Never edit a shipped entry: append.
MIGRATIONS: tuple[str, ...] = (
    # 1: the core tables: sessions, messages (+ FTS5), memories, segments, profile.
    """
    CREATE TABLE sessions (
        id          TEXT PRIMARY KEY,
        title       TEXT NOT NULL DEFAULT 'New chat',
        persona     TEXT,
        created_at  TEXT NOT NULL
    );
    CREATE TABLE messages (
        id           INTEGER PRIMARY KEY AUTOINCREMENT,
        session_id   TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        role         TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'system',
                          'web_tool', 'weather_tool', 'memory_tool', 'image_tool')),
        content      TEXT NOT NULL DEFAULT '',
        created_at   TEXT NOT NULL,
        tool_name    TEXT,
        tool_call_id TEXT,
        meta         TEXT NOT NULL DEFAULT '{}',
        image_path   TEXT
    );
    CREATE INDEX messages_session_id ON messages(session_id, id);
    CREATE INDEX messages_session_time ON messages(session_id, created_at);
    CREATE VIRTUAL TABLE messages_fts USING fts5(
        content, content='messages', content_rowid='id', tokenize='unicode61'
    );
    CREATE TRIGGER messages_ai AFTER INSERT ON messages BEGIN
        INSERT INTO messages_fts(rowid, content) VALUES (new.id, new.content);
    END;
    CREATE TRIGGER messages_ad AFTER DELETE ON messages BEGIN
        INSERT INTO messages_fts(messages_fts, rowid, content)
        VALUES ('delete', old.id, old.content);
    END;
    CREATE TRIGGER messages_au AFTER UPDATE OF content ON messages BEGIN
        INSERT INTO messages_fts(messages_fts, rowid, content)
        VALUES ('delete', old.id, old.content);
        INSERT INTO messages_fts(rowid, content) VALUES (new.id, new.content);
    END;
    CREATE TABLE memories (
        id               TEXT PRIMARY KEY,
        category         TEXT NOT NULL CHECK (category IN
                              ('identity', 'principles', 'focus', 'signals')),
        key              TEXT NOT NULL,
        value            TEXT NOT NULL,
        created_at       TEXT NOT NULL,
        updated_at       TEXT NOT NULL,
        stability        REAL NOT NULL DEFAULT 1.0,
        difficulty       REAL NOT NULL DEFAULT 5.0,
        last_recalled_at TEXT,
        recall_count     INTEGER NOT NULL DEFAULT 0,
        UNIQUE (category, key)
    );
    CREATE TABLE segments (
        id               INTEGER PRIMARY KEY AUTOINCREMENT,
        session_id       TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        start_message_id INTEGER NOT NULL,
        end_message_id   INTEGER NOT NULL,
        start_at         TEXT NOT NULL,
        end_at           TEXT NOT NULL,
        summary          TEXT NOT NULL,
        summary_kind     TEXT NOT NULL DEFAULT 'extractive'
    );
    CREATE INDEX segments_session ON segments(session_id, end_message_id);
    CREATE VIRTUAL TABLE segments_fts USING fts5(
        summary, content='segments', content_rowid='id', tokenize='unicode61'
    );
    CREATE TRIGGER segments_ai AFTER INSERT ON segments BEGIN
        INSERT INTO segments_fts(rowid, summary) VALUES (new.id, new.summary);
    END;
    CREATE TRIGGER segments_ad AFTER DELETE ON segments BEGIN
        INSERT INTO segments_fts(segments_fts, rowid, summary)
        VALUES ('delete', old.id, old.summary);
    END;
    CREATE TRIGGER segments_au AFTER UPDATE OF summary ON segments BEGIN
        INSERT INTO segments_fts(segments_fts, rowid, summary)
        VALUES ('delete', old.id, old.summary);
        INSERT INTO segments_fts(rowid, summary) VALUES (new.id, new.summary);
    END;
    CREATE TABLE profile (
        key   TEXT PRIMARY KEY,
        value TEXT NOT NULL
    );
    """,
    # 2: the journal of memory_sql edits (memory.sqlite.journal): every value an UPDATE
    # replaced, by batch, so the last batch can be undone. row_id is BLOB (no affinity):
    # it keeps an integer message id and a text memory/session id as they are. A row's
    # entries go when the row goes, so deleted text does not live on here.
    """
    CREATE TABLE sql_edits (
        id          INTEGER PRIMARY KEY AUTOINCREMENT,
        batch       TEXT NOT NULL,
        table_name  TEXT NOT NULL CHECK (table_name IN ('messages', 'memories', 'sessions')),
        row_id      BLOB NOT NULL,
        column_name TEXT NOT NULL,
        old_value   TEXT NOT NULL,
        new_value   TEXT NOT NULL,
        created_at  TEXT NOT NULL,
        undone_at   TEXT
    );
    CREATE INDEX sql_edits_batch ON sql_edits(batch);
    CREATE INDEX sql_edits_row ON sql_edits(table_name, row_id);
    CREATE TRIGGER sql_edits_messages_ad AFTER DELETE ON messages BEGIN
        DELETE FROM sql_edits WHERE table_name = 'messages' AND row_id = old.id;
    END;
    CREATE TRIGGER sql_edits_memories_ad AFTER DELETE ON memories BEGIN
        DELETE FROM sql_edits WHERE table_name = 'memories' AND row_id = old.id;
    END;
    CREATE TRIGGER sql_edits_sessions_ad AFTER DELETE ON sessions BEGIN
        DELETE FROM sql_edits WHERE table_name = 'sessions' AND row_id = old.id;
    END;
    """,
    # 3: memory_search's time windows span every session (memory.sqlite.retrieval): the id range
    # of a window comes from this index instead of a scan of every message.
    """
    CREATE INDEX messages_created_at ON messages(created_at);
    """,
    # 4: a style note kept for the rest of one session ("amend"), beside the persona and
    # never in its place. The profile's old 'style_note' held an edited identity block (or
    # an amended note, which replaced the identity the same way): it becomes 'identity',
    # the key of the user's own identity text, so what the persona said does not change.
    """
    ALTER TABLE sessions ADD COLUMN style_note TEXT;
    UPDATE profile SET key = 'identity' WHERE key = 'style_note';
    """,
    # 5: turns running now (graph.turns): the answer's text so far, written as it grows,
    # so a turn cut by a crash keeps what the person saw ("interrupted" on restart). A
    # row lives while its turn runs; ``owner`` names the process running it.
    """
    CREATE TABLE running_turns (
        id              INTEGER PRIMARY KEY AUTOINCREMENT,
        session_id      TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        user_message_id INTEGER NOT NULL,
        owner           TEXT NOT NULL,
        partial         TEXT NOT NULL DEFAULT '',
        started_at      TEXT NOT NULL,
        updated_at      TEXT NOT NULL
    );
    CREATE INDEX running_turns_session ON running_turns(session_id);
    """,
    # 6: Stop pressed in another process than the one running the turn: it asks through
    # the row, and the running process cancels its turn when it sees the flag.
    """
    ALTER TABLE running_turns ADD COLUMN stop_requested INTEGER NOT NULL DEFAULT 0;
    """,
    # 7: background work that several app processes on one database must run once (the
    # sweep for quiet conversations): a process holds a job's lease until ``until``.
    """
    CREATE TABLE job_leases (
        name   TEXT PRIMARY KEY,
        holder TEXT NOT NULL,
        until  TEXT NOT NULL
    );
    """,
    # 8: the vector index of memory_search's dense recall (memory.sqlite.vectors): one
    # vector per user/assistant message, of the model that made it, with a sign-bit
    # sketch for the coarse scan; it goes with its message. ``seq`` grows with every
    # write, so a process's in-memory copy reads only what is new.
    """
    CREATE TABLE message_vectors (
        seq        INTEGER PRIMARY KEY AUTOINCREMENT,
        message_id INTEGER NOT NULL UNIQUE REFERENCES messages(id) ON DELETE CASCADE,
        model      TEXT NOT NULL,
        sketch     BLOB NOT NULL,
        vector     BLOB NOT NULL
    );
    CREATE INDEX message_vectors_model ON message_vectors(model, seq);
    """,
    # 9: each word's document count, read by memory.sqlite.retrieval to keep a search over
    # the whole history bounded (a word in most messages is not searched everywhere).
    """
    CREATE VIRTUAL TABLE messages_vocab USING fts5vocab(messages_fts, row);
    """,
    # 10: conversations brought from other apps (``companion import``): each keyed by its
    # app and that app's conversation id, so a second import of the same file adds
    # nothing. The key goes with its session. memory_sql cannot read it.
    """
    CREATE TABLE chat_imports (
        source      TEXT NOT NULL,
        source_id   TEXT NOT NULL,
        session_id  TEXT NOT NULL UNIQUE REFERENCES sessions(id) ON DELETE CASCADE,
        imported_at TEXT NOT NULL,
        PRIMARY KEY (source, source_id)
    );
    """,
    # 11: the chat list and the Graph tab (issue 25): a chat pinned to the top, a title the
    # person chose (an edited first message no longer renames it), each answer's trace
    # (the prompt as sent, the steps, the timings: JSON) and the person's rating of it.
    # Both go with their answer. memory_sql reads neither table (READABLE_TABLES).
    """
    ALTER TABLE sessions ADD COLUMN pinned_at TEXT;
    ALTER TABLE sessions ADD COLUMN renamed INTEGER NOT NULL DEFAULT 0;
    CREATE TABLE answer_traces (
        message_id INTEGER PRIMARY KEY REFERENCES messages(id) ON DELETE CASCADE,
        trace      TEXT NOT NULL
    );
    CREATE TABLE answer_feedback (
        message_id INTEGER PRIMARY KEY REFERENCES messages(id) ON DELETE CASCADE,
        rating     INTEGER NOT NULL CHECK (rating IN (1, -1)),
        comment    TEXT NOT NULL DEFAULT '',
        created_at TEXT NOT NULL
    );
    """,
)


def _use_wal(conn: sqlite3.Connection, wait_ms: int) -> None:
    """Put the database in WAL mode (kept in the file: later connections find it set).

    Switching needs the database to itself, and SQLite answers "locked" at once, not after
    the busy timeout, while another connection holds a lock: two app processes opening a
    new database together would see it. So the switch is tried again until ``wait_ms``.
    """
    if conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal":
        return
    deadline = time.monotonic() + wait_ms / 1000
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as error:
            if not is_busy(error) or time.monotonic() >= deadline:
                raise
            time.sleep(0.05)


def connect(
    path: Path | str, *, read_only: bool = False, wait_ms: int = BUSY_TIMEOUT_MS
) -> sqlite3.Connection:
    """Open a connection configured for concurrent use (WAL, busy timeout, FKs); it waits
    up to ``wait_ms`` for another connection's lock (0: it raises at once, ``is_busy``)."""
    if read_only:
        uri = f"{Path(path).resolve().as_uri()}?mode=ro"
        conn = sqlite3.connect(uri, uri=True, timeout=wait_ms / 1000, check_same_thread=False)
    else:
        conn = sqlite3.connect(str(path), timeout=wait_ms / 1000, check_same_thread=False)
        _use_wal(conn, wait_ms)
        conn.execute("PRAGMA synchronous=NORMAL")
    conn.row_factory = sqlite3.Row
    conn.execute(f"PRAGMA busy_timeout={wait_ms}")
    conn.execute("PRAGMA foreign_keys=ON")
    return conn


def is_busy(error: BaseException) -> bool:
    """True when SQLite refused because another connection holds a lock it needs."""
    if not isinstance(error, sqlite3.OperationalError):
        return False
    primary = getattr(error, "sqlite_errorcode", 0) & 0xFF  # extended codes keep it low
    return primary in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


def migrate(conn: sqlite3.Connection, migrations: Sequence[str] = MIGRATIONS) -> int:
    """Bring the schema up to date with ``migrations`` (the store's, or another file's
    such as ``memory.sqlite.accounts``); returns the version now in place."""
    conn.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
    conn.execute("BEGIN IMMEDIATE")
    try:
        row = conn.execute("SELECT MAX(version) FROM schema_version").fetchone()
        current = row[0] or 0
        for version, script in enumerate(migrations[current:], start=current + 1):
            for statement in _statements(script):
                conn.execute(statement)
            conn.execute("INSERT INTO schema_version (version) VALUES (?)", (version,))
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return len(migrations)


def _statements(script: str) -> list[str]:
    """Split a migration script into statements (executescript would auto-commit)."""
    statements: list[str] = []
    buffer = ""
    for line in script.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            statements.append(buffer.strip())
            buffer = ""
    if buffer.strip():
        raise ValueError(f"incomplete statement in migration: {buffer.strip()[:80]}")
    return statements
