"""memory_sql's guard: a table of attacks (issue 12 #3-#8 included), hidden rows, limits,
and property tests."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory import SqlRefused
from memory.rules.sql_policy import (
    MAX_ROWS_CHANGED,
    READABLE_SETTINGS,
    RESULT_CHAR_CAP,
    check_sql,
    format_result,
)
from memory.sqlite.memories import create_memory
from memory.sqlite.sql_guard import run_sql
from memory.sqlite.store import SqliteStore

NOW = datetime(2026, 11, 25, 9, 30, tzinfo=UTC)


def seed(store: SqliteStore) -> None:
    store.add_message("s", "user", "I cooked nasi goreng")
    store.add_message("s", "memory_tool", "SECRET tool result")
    store.add_message("s", "assistant", "Sounds tasty")
    store.add_message("t", "memory_tool", "SECRET two")
    create_memory(store, "identity", "name", "Budi")


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteStore]:
    s = SqliteStore.open_home(tmp_path, clock=lambda: NOW)
    seed(s)
    yield s
    s.close()


def snapshot(path: Path) -> dict[str, Any]:
    """Schema and every row of every table, read with a plain connection."""
    conn = sqlite3.connect(path)
    try:
        schema = conn.execute("SELECT type, name, sql FROM sqlite_master ORDER BY name").fetchall()
        tables = [name for kind, name, _ in schema if kind == "table" and "fts" not in name]
        rows = {t: conn.execute(f"SELECT * FROM {t} ORDER BY 1").fetchall() for t in tables}
        return {"schema": schema, "rows": rows}
    finally:
        conn.close()


LONG_PATTERN = "printf('%.49000c', 'a')"

REFUSED = [
    ("INSERT INTO memories VALUES ('x','identity','k','v','','',1,1,NULL,0)", "INSERT"),
    ("DELETE FROM messages", "DELETE"),
    ("REPLACE INTO profile VALUES ('a','b')", "REPLACE"),
    ("DROP TABLE messages", "DROP"),
    ("ALTER TABLE messages ADD COLUMN x", "ALTER"),
    ("CREATE TABLE x (a)", "CREATE"),
    ("ATTACH DATABASE '/tmp/evil.db' AS evil", "ATTACH"),
    ("DETACH DATABASE main", "DETACH"),
    ("PRAGMA writable_schema = 1", "PRAGMA"),
    ("VACUUM INTO '/tmp/copy.db'", "VACUUM"),
    ("REINDEX", "REINDEX"),
    ("ANALYZE", "ANALYZE"),
    ("BEGIN", "BEGIN"),
    ("SELECT load_extension('/tmp/evil.so')", "load_extension"),
    ("SELECT 1; DELETE FROM messages", "several statements"),
    ("SELECT 1;DROP TABLE messages;--", "several statements"),
    ("/* x */ DeLeTe /* y */ FROM messages", "DELETE"),
    ("-- comment only", "no SQL statement"),
    ("", "no SQL given"),
    ("WITH x AS (SELECT 1) DELETE FROM messages", "DELETE"),
    ("WITH x AS (SELECT 1) INSERT INTO profile SELECT 'a', 'b'", "INSERT"),
    ("UPDATE OR REPLACE memories SET key = 'name'", "UPDATE OR"),
    ("UPDATE memories SET value = 'x' RETURNING *", "RETURNING"),
    ("EXPLAIN SELECT 1", "EXPLAIN"),
    ("SELECT * FROM main.messages", "main.messages"),
    ("SELECT content FROM main . messages WHERE role = 'memory_tool'", "main.messages"),
    ('SELECT content FROM "main"."messages"', "main.messages"),
    (
        "WITH messages AS (SELECT * FROM main.messages) SELECT content FROM messages",
        "main.messages",
    ),
    ("SELECT content FROM messages_fts WHERE messages_fts MATCH 'SECRET'", "messages_fts"),
    ("SELECT rowid FROM messages_fts('SECRET')", "messages_fts"),
    ("SELECT * FROM messages_fts_content", "messages_fts"),
    ("SELECT block FROM messages_fts_data", "messages_fts_data"),
    ("SELECT * FROM segments_fts", "segments_fts"),
    ("SELECT sql FROM sqlite_temp_master", "temp"),
    ("SELECT * FROM temp.sqlite_master", "temp"),
    ("SELECT * FROM pragma_table_info('messages')", "pragma_"),
    ("SELECT zeroblob(1000000000)", "zeroblob"),
    ("SELECT randomblob(1000000000)", "randomblob"),
    ("SELECT fts3_tokenizer('x')", "fts3_tokenizer"),
    ("SELECT sqlite_compileoption_used('x')", "sqlite_compileoption_used"),
    ("UPDATE sqlite_master SET sql = ''", "sqlite_master"),
    ("UPDATE messages SET role = 'user' WHERE role = 'memory_tool'", "messages.role"),
    ("UPDATE main.messages SET content = 'x'", "main.messages"),
    ("UPDATE memories SET stability = 100", "memories.stability"),
    ("UPDATE profile SET value = 'x'", "cannot modify profile"),  # a view of the settings
    ("UPDATE memories SET value = (SELECT content FROM main.messages LIMIT 1)", "main.messages"),
    (
        "SELECT 1 FROM messages WHERE EXISTS (SELECT 1 FROM main.messages m "
        "WHERE m.role = 'memory_tool')",
        "main.messages",
    ),
    ("ＤＥＬＥＴＥ FROM messages", ""),
    ("SELECT\u00a01; DELETE FROM messages", ""),
    # Issue 12 #3: a 49,000-character LIKE pattern ran 35 s (and, as an UPDATE, held the
    # write lock); LIKE/GLOB patterns are capped, and so is the number of such calls.
    (f"SELECT COUNT(*) FROM messages WHERE content LIKE '%' || {LONG_PATTERN} || 'b%'", "LIKE"),
    (f"UPDATE messages SET content = 'x' WHERE content LIKE '%' || {LONG_PATTERN} || 'b%'", "LIKE"),
    (f"SELECT 1 FROM messages WHERE content GLOB '*' || {LONG_PATTERN} || '*'", "GLOB"),
    ("SELECT 1 FROM messages WHERE " + " OR ".join(["content LIKE '%a%'"] * 9), "at most 8"),
    # #4: json_group_array over a recursive CTE grew by 1.3 GB within the time limit.
    (
        "SELECT json_group_array(n) FROM (WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL "
        "SELECT n + 1 FROM r) SELECT n FROM r)",
        "json_group_array",
    ),
    ("SELECT json_group_object(key, value) FROM memories", "json_group_object"),
    ("SELECT json_array(" + ", ".join(["content"] * 20) + ") FROM messages", "arguments"),
    # #5: 1,891 columns x 100 rows made a 95 MB result, stored in messages.meta.
    ("SELECT id, " + ", ".join(["*"] * 210) + " FROM messages", "columns"),
    # #6: a BLOB (or text that is not UTF-8) bricked every later turn of the session.
    ("UPDATE messages SET content = x'00ff'", "only text"),
    ("UPDATE memories SET value = CAST(x'ff' AS TEXT)", "UTF-8"),
    ("UPDATE memories SET value = NULL", "only text"),
    ("UPDATE messages SET content = 'a' || char(0) || 'b'", "NUL"),
    ("UPDATE sessions SET title = '  '", "cannot be empty"),
    ("UPDATE memories SET value = printf('%.5000c', 'x')", "at most 2,000"),
]


@pytest.mark.parametrize(("sql", "named"), REFUSED)
def test_attacks_are_refused_and_change_nothing(store: SqliteStore, sql: str, named: str) -> None:
    before = snapshot(store.path)
    result = run_sql(store.path, sql)
    assert "error" in result, result
    assert named.lower() in result["error"].lower()
    assert snapshot(store.path) == before


def test_refusal_happens_before_running(store: SqliteStore) -> None:
    with pytest.raises(SqlRefused, match="INSERT"):
        check_sql("insert into profile values ('a', 'b')")
    with pytest.raises(SqlRefused, match="text"):
        check_sql(None)


HIDDEN_COUNTS = [
    "SELECT COUNT(*) FROM messages WHERE role = 'memory_tool'",
    "SELECT COUNT(*) FROM (SELECT * FROM messages) WHERE role = 'memory_tool'",
    "SELECT (SELECT COUNT(*) FROM messages WHERE role = 'memory_tool')",
    "SELECT COUNT(*) FROM sessions s JOIN messages m ON m.session_id = s.id "
    "WHERE m.role = 'memory_tool'",
    "WITH m AS (SELECT * FROM messages) SELECT COUNT(*) FROM m WHERE role = 'memory_tool'",
    "WITH RECURSIVE r(id) AS (SELECT MIN(id) FROM messages UNION ALL SELECT id + 1 FROM r "
    "WHERE id < 10) SELECT COUNT(*) FROM messages WHERE id IN (SELECT id FROM r) "
    "AND role = 'memory_tool'",
    "SELECT COUNT(*) FROM temp.messages WHERE role = 'memory_tool'",
    "SELECT COUNT(*) FROM messages WHERE content LIKE '%SECRET%'",
    "SELECT COUNT(*) FROM messages a, messages b WHERE b.role = 'memory_tool'",
]


@pytest.mark.parametrize("sql", HIDDEN_COUNTS)
def test_memory_tool_rows_are_invisible(store: SqliteStore, sql: str) -> None:
    result = run_sql(store.path, sql)
    assert result.get("rows") == [[0]], result


KEY = "sk-or-v1-never-to-the-model"
SECRET_READS = [
    "SELECT key, value FROM profile",
    "SELECT value FROM profile WHERE key = 'api_key'",
    "SELECT * FROM main.profile",
    "WITH p AS (SELECT * FROM main.profile) SELECT * FROM p",
    "SELECT (SELECT group_concat(value) FROM main.profile)",
    "SELECT value FROM temp.profile WHERE key LIKE '%key%'",
    "SELECT * FROM sessions WHERE title IN (SELECT value FROM main.profile)",
]


@pytest.mark.parametrize("sql", SECRET_READS)
def test_no_query_reads_a_saved_key(store: SqliteStore, sql: str) -> None:
    """An API key saved in Settings goes only to its endpoint: the model's SQL sees the
    readable settings (``profile``, a view) and never a key or a URL."""
    store.set_profile(
        {"api_key": KEY, "image_api_key": KEY, "base_url": "https://u:p@x.example/v1"}
    )
    store.set_profile({"timezone": "Asia/Tokyo", "image_base_url": "https://u:p@y.example"})
    result = run_sql(store.path, sql)
    assert KEY not in str(result) and "u:p@" not in str(result), result
    if "rows" in result and sql == SECRET_READS[0]:
        assert result["rows"] == [["timezone", "Asia/Tokyo"]]


def test_every_setting_is_readable_or_kept_from_the_model() -> None:
    """A new setting must be placed: readable by memory_sql, or a secret it never sees."""
    from config.settings import PROFILE_KEYS

    secrets = {"api_key", "image_api_key", "base_url", "image_base_url"}
    assert set(PROFILE_KEYS) == set(READABLE_SETTINGS) | secrets
    assert not set(READABLE_SETTINGS) & secrets


def test_select_returns_columns_rows_and_caps(store: SqliteStore) -> None:
    result = run_sql(store.path, "SELECT role, content FROM messages ORDER BY id")
    assert result == {
        "columns": ["role", "content"],
        "rows": [["user", "I cooked nasi goreng"], ["assistant", "Sounds tasty"]],
        "row_count": 2,
        "truncated": False,
    }
    many = run_sql(
        store.path,
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 500) "
        "SELECT i, printf('%.90c', 'x') FROM n",
    )
    assert many["row_count"] == 100 and many["truncated"] is True
    wide = run_sql(
        store.path,
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 500) "
        "SELECT i, printf('%.900c', 'x') FROM n",
    )
    assert len(wide["rows"][0][1]) == 501 and wide["rows"][0][1].endswith("…")
    # Rows stop once the result holds RESULT_CHAR_CAP characters.
    assert wide["truncated"] is True and wide["row_count"] < 100
    assert sum(len(str(cell)) for row in wide["rows"] for cell in row) <= RESULT_CHAR_CAP


def test_runaway_recursive_cte_is_stopped(store: SqliteStore) -> None:
    result = run_sql(
        store.path,
        "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT COUNT(*) FROM r",
        time_limit=0.3,
    )
    assert "time limit" in result["error"]


def test_update_edits_allowed_columns_only_on_visible_rows(store: SqliteStore) -> None:
    result = run_sql(store.path, "UPDATE messages SET content = 'edited'")
    assert result == {"updated": 2}
    contents = [m.content for m in store.messages("s") + store.messages("t")]
    assert contents.count("edited") == 2
    assert "SECRET tool result" in contents and "SECRET two" in contents
    # The FTS index follows the edit (the store's own triggers ran).
    assert (
        store.conn.execute(
            "SELECT COUNT(*) FROM messages_fts WHERE messages_fts MATCH 'edited'"
        ).fetchone()[0]
        == 2
    )
    assert run_sql(store.path, "UPDATE messages SET content = 'x' WHERE role = 'memory_tool'") == {
        "updated": 0
    }
    assert run_sql(store.path, "UPDATE memories SET value = 'Budi S.' WHERE key = 'name'") == {
        "updated": 1
    }
    assert run_sql(store.path, "UPDATE sessions SET title = 'Cooking' WHERE id = 's'") == {
        "updated": 1
    }


@pytest.fixture
def full_store(tmp_path: Path) -> Iterator[SqliteStore]:
    """More rows than one memory_sql edit may change: 32 messages, 26 memories, 27 sessions."""
    s = SqliteStore.open_home(tmp_path, clock=lambda: NOW)
    seed(s)
    for n in range(30):
        s.add_message(f"s{n % 25}", "user", f"message {n}")
    for n in range(25):
        create_memory(s, "signals", f"k{n}", f"v{n}")
    yield s
    s.close()


# Issue 12 #7: one UPDATE wiped 300 of 300 messages (and memories and titles in two more).
MASS_EDITS = [
    "UPDATE messages SET content = ''",
    "UPDATE memories SET value = 'gone'",
    "UPDATE sessions SET title = 'gone'",
    "WITH doomed AS (SELECT id FROM messages) UPDATE messages SET content = '' WHERE id IN doomed",
    "UPDATE messages SET content = content || '.' WHERE id > 1",
]


@pytest.mark.parametrize("sql", MASS_EDITS)
def test_mass_edits_are_refused_and_change_nothing(full_store: SqliteStore, sql: str) -> None:
    before = snapshot(full_store.path)
    result = run_sql(full_store.path, sql)
    assert f"at most {MAX_ROWS_CHANGED} rows" in result["error"]
    assert "nothing was changed" in result["error"]
    assert snapshot(full_store.path) == before


def test_an_edit_of_exactly_the_cap_goes_through(full_store: SqliteStore) -> None:
    result = run_sql(
        full_store.path,
        f"UPDATE memories SET value = upper(value) WHERE category = 'signals' "
        f"AND key IN (SELECT key FROM memories WHERE category = 'signals' ORDER BY key "
        f"LIMIT {MAX_ROWS_CHANGED})",
    )
    assert result == {"updated": MAX_ROWS_CHANGED}
    # Rows whose value does not change are not counted (nor written).
    assert run_sql(full_store.path, "UPDATE messages SET content = content") == {"updated": 0}


def test_with_update_reports_the_rows_it_changed(store: SqliteStore) -> None:
    """Issue 12 #8: ``WITH … UPDATE memories`` changed rows but reported 0."""
    result = run_sql(
        store.path,
        "WITH x AS (SELECT id FROM memories WHERE key = 'name') "
        "UPDATE memories SET value = 'Budi S.' WHERE id IN (SELECT id FROM x)",
    )
    assert result == {"updated": 1}
    assert store.conn.execute("SELECT value FROM memories").fetchone()[0] == "Budi S."
    result = run_sql(
        store.path,
        "WITH s AS (SELECT id FROM sessions) UPDATE sessions SET title = 'Kitchen' WHERE id IN s",
    )
    assert result == {"updated": 2}


def test_sql_errors_are_data(store: SqliteStore) -> None:
    assert "SQL error" in run_sql(store.path, "SELECT nope FROM messages")["error"]
    assert "error" in run_sql(store.path, "SELECT")


def test_format_result_is_a_text_table(store: SqliteStore) -> None:
    text = format_result(run_sql(store.path, "SELECT id, role FROM messages ORDER BY id"))
    assert text.splitlines()[0].split(" | ") == ["id", "role"]
    assert "(2 row(s))" in text
    assert format_result({"updated": 3}) == "3 row(s) updated."
    assert format_result({"error": "nope"}) == "Error: nope"


SQL_WORDS = [
    "SELECT",
    "UPDATE",
    "INSERT",
    "DELETE",
    "DROP",
    "WITH",
    "RECURSIVE",
    "AS",
    "FROM",
    "WHERE",
    "SET",
    "messages",
    "main.messages",
    "memories",
    "sessions",
    "profile",
    "messages_fts",
    "sqlite_master",
    "temp.messages",
    "content",
    "role",
    "value",
    "=",
    "'memory_tool'",
    "'x'",
    "*",
    ",",
    "(",
    ")",
    ";",
    "--",
    "/*",
    "*/",
    "OR",
    "REPLACE",
    "ATTACH",
    "PRAGMA",
    "VACUUM",
    "INTO",
    "VALUES",
    "1",
    "load_extension",
    "UNION",
    "ALL",
    "JOIN",
    "ON",
    "id",
    "COUNT(*)",
    "LIMIT",
    "RETURNING",
    "TABLE",
    "CREATE",
    "TRIGGER",
    "BEGIN",
    "END",
    "\n",
    '"',
    "'",
    "\\",
    "ＳＥＬＥＣＴ",
    "é",
]
sql_text = st.one_of(
    st.lists(st.sampled_from(SQL_WORDS), min_size=1, max_size=14).map(" ".join),
    st.text(max_size=60),
)


@settings(
    max_examples=250, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(sql=sql_text)
def test_no_input_raises_or_writes_beyond_update(store: SqliteStore, sql: str) -> None:
    before = snapshot(store.path)
    result = run_sql(store.path, sql, time_limit=0.5)
    assert isinstance(result, dict)
    after = snapshot(store.path)
    assert after["schema"] == before["schema"]
    for table, rows in before["rows"].items():
        now_rows = after["rows"][table]
        if table == "sql_edits":  # the journal keeps one entry per row an UPDATE changed
            assert len(now_rows) <= len(rows) + result.get("updated", 0), sql
        else:
            assert len(now_rows) == len(rows), (sql, table)
    hidden = [r for r in after["rows"]["messages"] if r[2] == "memory_tool"]
    assert [r[3] for r in hidden] == ["SECRET tool result", "SECRET two"]
    if "rows" in result:
        assert all("SECRET" not in str(cell) for row in result["rows"] for cell in row)
