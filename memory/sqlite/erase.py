"""Forget a person (``AsyncStore.delete_everything``): every row of their SQLite file,
and no trace of them left in the file's free pages or its write-ahead log.

A person's file holds nobody else's data, so every table that holds theirs is emptied
(``PERSON_TABLES``; the vectors and the journal's entries go with their rows too). A
deleted row's text can linger in the file: in the free space of a page (``secure_delete``
zeroes it), in FTS5's index segments until they merge (both indexes are rebuilt, from
nothing), in free pages (``VACUUM`` writes the file anew) and in the write-ahead log
(a ``TRUNCATE`` checkpoint empties it). What stays is the schema, its version and the
counters of the id sequences (so ids are never reused), none of it the person's.
"""

from __future__ import annotations

import logging

from memory.sqlite.store import SqliteStore

log = logging.getLogger("companion.store")

# Every table that holds a person's data, children before their parents. The FTS5
# indexes (messages_fts, segments_fts) and messages_vocab are rebuilt; message_vectors
# and sql_edits also go by trigger or cascade with their rows, emptied here all the same.
PERSON_TABLES = (
    "answer_traces",
    "answer_feedback",
    "chat_imports",
    "running_turns",
    "message_vectors",
    "segments",
    "messages",
    "sessions",
    "memories",
    "sql_edits",
    "profile",
    "job_leases",
)
FTS_INDEXES = ("messages_fts", "segments_fts")


def delete_everything(store: SqliteStore) -> dict[str, int]:
    """Empty every table of the person's file in one transaction, then wipe what the
    deleted rows leave behind; the rows deleted per table."""
    conn = store.conn
    conn.execute("PRAGMA secure_delete=ON")  # freed space is zeroed, not just unlinked
    try:
        with store.transaction():
            deleted = {
                table: conn.execute(f"DELETE FROM {table}").rowcount for table in PERSON_TABLES
            }
            for index in FTS_INDEXES:
                conn.execute(f"INSERT INTO {index}({index}) VALUES ('rebuild')")
        conn.execute("VACUUM")
        busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    finally:
        conn.execute("PRAGMA secure_delete=OFF")
    if busy:  # a reader held the log: it is copied and emptied on a later checkpoint
        log.warning("the write-ahead log of %s was in use: not emptied yet", store.path)
    return deleted
