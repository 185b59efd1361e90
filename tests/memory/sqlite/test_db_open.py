"""Opening the database while another process holds its lock (two app processes starting
on a new home together): the switch to WAL waits for the lock instead of failing."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

from memory.sqlite.db import connect


def test_a_new_database_opens_while_another_connection_holds_its_lock(tmp_path: Path) -> None:
    path = tmp_path / "companion.db"
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("CREATE TABLE t (x)")  # a new database, still in rollback-journal mode
    holder.execute("BEGIN IMMEDIATE")  # SQLite answers "locked" at once, busy timeout or not
    threading.Timer(0.3, lambda: holder.execute("COMMIT")).start()

    conn = connect(path, wait_ms=5000)  # raised "database is locked" at once before

    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()
    holder.close()


def test_a_database_already_in_wal_mode_is_left_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "companion.db"
    connect(path).close()
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # a writer at work: readers and a new connection go on
    conn = connect(path, wait_ms=0)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()
    holder.execute("COMMIT")
    holder.close()
