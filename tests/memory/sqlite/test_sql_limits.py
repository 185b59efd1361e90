"""memory_sql's hard limits (issue 12 #3-#8): writers never wait on the model's SQL, results
stay small, the slow built-ins are replaced by linear ones that watch the clock, and
every edit can be undone (``companion undo-sql``) without overwriting later changes."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from memory import Edit, EditConflict
from memory.rules.sql_policy import MAX_COLUMNS, RESULT_CHAR_CAP
from memory.sqlite.journal import apply_edits, last_batch, undo_last_edit
from memory.sqlite.memories import create_memory
from memory.sqlite.sql_guard import run_sql
from memory.sqlite.store import SqliteStore

NOW = datetime(2026, 11, 25, 9, 30, tzinfo=UTC)
REPO = Path(__file__).resolve().parents[3]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteStore]:
    s = SqliteStore.open_home(tmp_path, clock=lambda: NOW)
    s.add_message("s", "user", "I cooked nasi goreng")
    s.add_message("s", "memory_tool", "SECRET tool result")
    s.add_message("s", "assistant", "Sounds tasty")
    create_memory(s, "identity", "name", "Budi")
    yield s
    s.close()


def content(store: SqliteStore, message_id: int) -> str:
    message = store.get_message(message_id)
    assert message is not None
    return message.content


# --- #3: the write lock is never held while the model's SQL runs -----------------------

SLOW_UPDATE = (
    "UPDATE messages SET content = 'x' WHERE id = (WITH RECURSIVE r(n) AS (SELECT 1 "
    "UNION ALL SELECT n + 1 FROM r) SELECT COUNT(*) FROM r)"
)


def test_a_slow_update_never_blocks_other_writers(store: SqliteStore) -> None:
    """As an UPDATE, #3 held the write lock for the whole statement, and a concurrent
    add_message failed with "database is locked"."""
    store.conn.execute("PRAGMA busy_timeout = 100")  # a writer that does not wait long
    outcome: dict[str, object] = {}
    guard = threading.Thread(
        target=lambda: outcome.update(run_sql(store.path, SLOW_UPDATE, time_limit=1.5))
    )
    written: list[int] = []
    failures: list[str] = []
    guard.start()
    while guard.is_alive():
        try:
            written.append(store.add_message("s", "user", "meanwhile").id)
        except sqlite3.OperationalError as exc:
            failures.append(str(exc))
        time.sleep(0.02)
    guard.join()
    assert "time limit" in str(outcome["error"])
    assert failures == []
    assert written


def test_an_edit_is_applied_only_where_the_row_is_as_planned(store: SqliteStore) -> None:
    """The by-id write refuses the whole batch when a row changed after it was read."""
    fresh = Edit("messages", 3, "content", "Sounds tasty", "Sounds lovely")
    stale = Edit("messages", 1, "content", "something else", "x")
    with pytest.raises(EditConflict, match="messages 1"), store.transaction() as conn:
        apply_edits(conn, [fresh, stale], "b1", "2026-11-25 09:30:00")
    assert content(store, 3) == "Sounds tasty"
    assert last_batch(store.conn) is None


# --- #5: results (and so the stored meta) stay small ----------------------------------

MANY_ROWS = "(WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 200) "
WIDE_SELECTS = [
    "SELECT "
    + ", ".join(["printf('%.100000c', 'x')"] * MAX_COLUMNS)
    + f" FROM {MANY_ROWS}SELECT n FROM r)",
    "SELECT "
    + ", ".join(f'n AS "{"c" * 400}{i}"' for i in range(MAX_COLUMNS))
    + f" FROM {MANY_ROWS}SELECT n FROM r)",
    f"SELECT m.*, s.*, x.* FROM messages m, sessions s, {MANY_ROWS}"
    "SELECT printf('%.900c', 'y') FROM r) x",
]
# What one result may weigh as JSON: RESULT_CHAR_CAP of cells (the first row may pass it
# by a few cells), capped column names, and JSON punctuation.
MAX_RESULT_JSON = 25_000


@pytest.mark.parametrize("sql", WIDE_SELECTS)
def test_a_result_stays_small_whatever_the_select(store: SqliteStore, sql: str) -> None:
    result = run_sql(store.path, sql)
    assert result["truncated"] is True, result.get("error")
    assert len(json.dumps(result, ensure_ascii=False)) < MAX_RESULT_JSON
    cells = sum(len(str(cell)) for row in result["rows"] for cell in row)
    assert cells <= RESULT_CHAR_CAP + MAX_COLUMNS * 501


# --- #3/#4: the built-ins that scan a whole message against a whole argument ----------

plain = sqlite3.connect(":memory:")
sql_values = st.one_of(
    st.text(alphabet="ab .é0-", max_size=12),
    st.integers(min_value=-(10**6), max_value=10**6),
    st.floats(allow_nan=False, allow_infinity=False, width=64),
    st.none(),
)


def literal(value: object) -> str:
    return str(plain.execute("SELECT quote(?)", (value,)).fetchone()[0])


@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(x=sql_values, y=sql_values, z=sql_values)
@example(x=7.58167506180781e285, y="e", z="")  # SQLite and Python round its 15th digit apart
def test_linear_stand_ins_answer_like_sqlite(
    store: SqliteStore, x: object, y: object, z: object
) -> None:
    a, b, c = literal(x), literal(y), literal(z)
    sql = (
        f"SELECT instr({a}, {b}), replace({a}, {b}, {c}), trim({a}), trim({a}, {b}), "
        f"ltrim({a}, {b}), rtrim({a}, {b})"
    )
    expected = [list(plain.execute(sql).fetchone())]
    assert run_sql(store.path, sql)["rows"] == expected


def test_the_slow_built_ins_watch_the_clock(store: SqliteStore) -> None:
    """SQLite checks its time limit only between rows; one instr over 1 MB took 4 s and
    one trim 24 s. The stand-ins refuse to start once the time is up."""
    for call in ("instr('abc', 'b')", "replace('abc', 'b', 'c')", "trim(' a ')"):
        result = run_sql(store.path, f"SELECT {call}", time_limit=0)
        assert "time limit" in result["error"], call


def test_replace_refuses_to_build_an_oversized_value(store: SqliteStore) -> None:
    result = run_sql(
        store.path, "SELECT replace(printf('%.1000c', 'a'), 'a', printf('%.2000c', 'b'))"
    )
    assert "replace()" in result["error"] and "bytes" in result["error"]


# --- #7: every edit can be undone, and undo never overwrites a later change ----------


def test_undo_puts_back_the_last_batch_then_the_one_before(store: SqliteStore) -> None:
    assert run_sql(store.path, "UPDATE messages SET content = 'first' WHERE id = 1") == {
        "updated": 1
    }
    assert run_sql(
        store.path,
        "UPDATE messages SET content = 'second' WHERE id IN (1, 3)",
        clock=lambda: NOW,
    ) == {"updated": 2}
    batch = undo_last_edit(store)
    assert batch is not None and batch.created_at == "2026-11-25 09:30:00"
    assert [edit.label for edit in batch.edits] == ["messages 1", "messages 3"]
    assert (content(store, 1), content(store, 3)) == ("first", "Sounds tasty")
    assert undo_last_edit(store) is not None
    assert content(store, 1) == "I cooked nasi goreng"
    assert undo_last_edit(store) is None
    # The FTS index followed the store's own triggers both ways.
    hits = store.conn.execute("SELECT rowid FROM messages_fts WHERE messages_fts MATCH 'goreng'")
    assert [row[0] for row in hits] == [1]


def test_undo_refuses_when_a_row_changed_since(store: SqliteStore) -> None:
    run_sql(store.path, "UPDATE memories SET value = 'Budi S.'")
    run_sql(store.path, "UPDATE messages SET content = 'edited' WHERE id = 1")
    with store.transaction() as conn:
        conn.execute("UPDATE messages SET content = 'by hand' WHERE id = 1")
    with pytest.raises(EditConflict, match="messages 1"):
        undo_last_edit(store)
    assert content(store, 1) == "by hand"
    batch = last_batch(store.conn)
    assert batch is not None and batch.edits[0].label == "messages 1"


def test_undo_never_touches_memory_tool_rows(store: SqliteStore) -> None:
    with store.transaction() as conn:  # a journal entry no memory_sql run could write
        apply_edits(conn, [Edit("messages", 1, "content", "I cooked nasi goreng", "x")], "b1", "t")
        conn.execute("UPDATE sql_edits SET row_id = 2, new_value = 'SECRET tool result'")
    with pytest.raises(EditConflict, match="messages 2"):
        undo_last_edit(store)
    assert content(store, 2) == "SECRET tool result"


def test_deleted_rows_leave_the_journal(store: SqliteStore) -> None:
    run_sql(store.path, "UPDATE messages SET content = 'edited' WHERE id = 1")
    run_sql(store.path, "UPDATE sessions SET title = 'Cooking'")
    store.delete_session("s")
    assert store.conn.execute("SELECT COUNT(*) FROM sql_edits").fetchone()[0] == 0


def companion(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app.cli", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_companion_undo_sql(store: SqliteStore) -> None:
    home = str(store.path.parent)
    run_sql(store.path, "UPDATE sessions SET title = 'Renamed' WHERE id = 's'")
    run_sql(store.path, "UPDATE memories SET value = 'Budi S.'")
    with store.transaction() as conn:
        conn.execute("UPDATE memories SET value = 'by hand'")
    refused = companion("undo-sql", "--home", home)
    assert refused.returncode == 1 and "memories" in refused.stderr
    with store.transaction() as conn:
        conn.execute("UPDATE memories SET value = 'Budi S.'")
    undone = companion("undo-sql", "--home", home)
    assert undone.returncode == 0 and "restored memories" in undone.stdout
    assert companion("undo-sql", "--home", home).returncode == 0
    session = store.get_session("s")
    assert session is not None and session.title == "New chat"
    nothing = companion("undo-sql", "--home", home)
    assert nothing.returncode == 0 and "Nothing to undo" in nothing.stdout
