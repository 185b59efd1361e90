"""SQLite's memory_sql against built-ins whose one call loops over a width it is given
(issue 19): ``printf('%.2147483647c', 'x')`` ran 13.8 s in SQLite's C code, where the
time limit is never checked, and its thread kept burning CPU after the tool gave up."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from memory.sqlite.sql_guard import ALLOWED_FUNCTIONS, MAX_VALUE_BYTES, run_sql
from memory.sqlite.store import SqliteStore

QUICK = 1.0  # seconds: each refusal comes before any such loop starts


@pytest.fixture
def db(tmp_path: Path) -> Path:
    store = SqliteStore.open_home(tmp_path)
    store.add_message("s", "user", "%.2147483647c")  # a format the model did not write
    path = Path(store.path)
    store.close()
    return path


WIDE = [
    ("SELECT length(printf('%.2147483647c', 'x'))", "add up to at most"),
    ("SELECT length(format('%.2147483647c', 'x'))", "format() widths"),
    ("SELECT printf('%2147483647d', 1)", "add up to at most"),
    ("SELECT printf('%.*c', 2147483647, 'x')", "(*)"),
    ("SELECT printf('%*d', 2147483647, 1)", "(*)"),
    ("SELECT printf('%.600000c%.600000c', 'x', 'y')", "add up to at most"),
    ("SELECT printf('%.' || '2147483647' || 'c', 'x')", "add up to at most"),
    ("SELECT printf(content, 'x') FROM messages", "add up to at most"),
    (f"SELECT printf('%.{'9' * 5000}c', 'x')", "add up to at most"),
    (
        "SELECT " + ", ".join(["length(printf('%.2147483647c', 'x'))"] * 4),
        "add up to at most",
    ),
]


@pytest.mark.parametrize(("sql", "said"), WIDE)
def test_a_printf_wider_than_a_value_may_be_is_refused_at_once(
    db: Path, sql: str, said: str
) -> None:
    started = time.monotonic()
    result = run_sql(db, sql)
    assert time.monotonic() - started < QUICK
    assert result["error"].startswith("refused") and said in result["error"], result


def test_printf_within_the_cap_answers_as_sqlite_does(db: Path) -> None:
    result = run_sql(
        db,
        "SELECT printf('%5.2f|%-4d|%s|%%|%,d', 3.14159, 7, 'a', 1234567), "
        f"length(printf('%.{MAX_VALUE_BYTES - 1}c', 'x')), printf(NULL), format('%d', 1.5)",
    )
    assert result["rows"] == [[" 3.14|7   |a|%|1,234,567", MAX_VALUE_BYTES - 1, None, "1"]]


def test_the_statements_thread_ends_with_its_time_limit(db: Path) -> None:
    """memory_sql runs in a worker thread: once the time is up, the thread is done too,
    not looping on in SQLite's C code after the tool has answered."""
    runner = threading.Thread(
        target=run_sql, args=(db, WIDE[-1][0]), kwargs={"time_limit": 0.2}, daemon=True
    )
    runner.start()
    runner.join(QUICK)
    assert not runner.is_alive()


def test_no_allowed_built_in_takes_a_size_to_fill() -> None:
    """zeroblob and randomblob make a value of any size they are given; printf/format are
    the checked stand-ins; every other allowed function's result is bounded by its
    arguments (and SQLite's length limit)."""
    assert not {"zeroblob", "randomblob"} & ALLOWED_FUNCTIONS
    assert {"printf", "format"} <= ALLOWED_FUNCTIONS
