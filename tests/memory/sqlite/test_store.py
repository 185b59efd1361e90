"""The SQLite store: schema from scratch, migrations, sessions, messages, concurrency."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from memory import StoreError
from memory.sqlite.db import MIGRATIONS, connect, migrate
from memory.sqlite.store import SqliteStore


def test_schema_builds_from_scratch_and_migrations_are_idempotent(tmp_path: Path) -> None:
    conn = connect(tmp_path / "a.db")
    assert migrate(conn) == len(MIGRATIONS)
    assert migrate(conn) == len(MIGRATIONS)
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {
        "sessions",
        "messages",
        "messages_fts",
        "memories",
        "segments",
        "profile",
        "schema_version",
    } <= tables
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert conn.execute("SELECT COUNT(*) FROM schema_version").fetchone()[0] == len(MIGRATIONS)


def test_messages_round_trip_and_fts(store: SqliteStore) -> None:
    store.add_message("s1", "user", "I cooked nasi goreng", meta={"k": 1})
    store.add_message(
        "s1",
        "web_tool",
        "🔧 TOOL RESULT — WEB_SEARCH",
        tool_name="web_search",
        tool_call_id="c1",
        meta={"result": {"x": 1}},
    )
    first, second = store.messages("s1")
    assert first.meta == {"k": 1} and first.role == "user"
    assert second.is_tool and second.tool_name == "web_search"
    hits = store.conn.execute(
        "SELECT rowid FROM messages_fts WHERE messages_fts MATCH 'goreng'"
    ).fetchall()
    assert [h[0] for h in hits] == [first.id]
    with pytest.raises(StoreError, match="unknown message role"):
        store.add_message("s1", "robot", "x")


def test_sessions_create_rename_delete(store: SqliteStore) -> None:
    session = store.create_session("Trip")
    store.add_message(session.id, "user", "hi")
    store.rename_session(session.id, "Kyoto trip")
    assert store.get_session(session.id).title == "Kyoto trip"  # type: ignore[union-attr]
    with pytest.raises(StoreError):
        store.rename_session(session.id, "  ")
    store.delete_session(session.id)
    assert store.get_session(session.id) is None
    assert store.messages(session.id) == []


def test_profile(store: SqliteStore) -> None:
    store.set_profile({"latitude": 35.5, "persona": "journal"})
    store.set_profile({"persona": None})
    assert store.profile() == {"latitude": "35.5"}


def test_recent_messages_window(store: SqliteStore) -> None:
    ids = [store.add_message("s", "user", f"m{i}").id for i in range(30)]
    recent = store.recent_messages("s", 25, before_id=ids[20] + 1)
    assert [m.content for m in recent][-1] == "m20" and len(recent) == 21
    assert len(store.recent_messages("s", 25)) == 25


def test_concurrent_writers_from_threads_and_stores(tmp_path: Path) -> None:
    first = SqliteStore.open_home(tmp_path)
    second = SqliteStore.open_home(tmp_path)  # another "process" on the same file
    errors: list[BaseException] = []

    def write(store: SqliteStore, name: str) -> None:
        try:
            for i in range(50):
                store.add_message(name, "user", f"{name}-{i}")
        except BaseException as exc:
            errors.append(exc)

    threads = [
        threading.Thread(target=write, args=(s, f"s{i}"))
        for i, s in enumerate([first, second, first, second])
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert first.count_messages() == 200
