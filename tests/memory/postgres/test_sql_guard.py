"""memory_sql's attack table on both backends: the SQLite guard (memory.sql_guard) over
bob's own database file, and the Postgres guard (memory.pg_sql_guard) over a database bob
shares with ann, migrated as the README says (by the database's owner, who is no
superuser). Then what only Postgres has to prove: nothing of ann's, and no memory_tool
row, reaches bob whatever he writes — through the parse (issue 19's C1 and C2 payloads)
and, past it, through the login role and its binding alone."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import errors

from memory import EditConflict
from memory.postgres import sql_guard as pg_sql_guard
from memory.postgres.schema import prepare
from memory.postgres.sql_guard import SQL_ROLE
from memory.postgres.store import PgStore
from memory.rules.sql_policy import KEPT_BATCHES
from memory.sqlite import sql_guard
from memory.sqlite.store import SqliteStore
from tests.conftest import FIXED_NOW
from tests.memory.backends import one_segment
from tests.support.pg_people import migrated_postgres
from tests.support.postgres import APP_ROLE, PostgresServer

# Each person's rows, the same on both backends; "many" is for the row and edit caps.
ROWS: dict[str, list[tuple[str, str, str]]] = {
    person: [
        ("s", "user", f"{person} says hello"),
        ("s", "memory_tool", f"{person} SECRET tool result"),
        ("s", "assistant", f"{person} is answered"),
        *(("many", "user", f"{person} note {n}") for n in range(sql_guard.MAX_ROWS_CHANGED + 5)),
    ]
    for person in ("ann", "bob")
}
BOB_VISIBLE_IN_S = [["user", "bob says hello"], ["assistant", "bob is answered"]]


@dataclass
class Seeded:
    """The Postgres server and the ids of the rows seeded on it."""

    server: PostgresServer
    ids: dict[str, list[int]]  # each person's message ids, in ROWS order


async def _seed(server: PostgresServer) -> dict[str, list[int]]:
    await prepare(server.owner_url, SQL_ROLE, APP_ROLE)  # again: idempotent
    ids: dict[str, list[int]] = {}
    for person, rows in ROWS.items():
        store = await PgStore.open(server.url, person, clock=lambda: FIXED_NOW)
        try:
            ids[person] = [(await store.add_message(*row)).id for row in rows]
            await one_segment(store, "s", f"{person} summary")
            await store.create_memory("identity", "name", f"{person} herself")
            await store.create_memory("signals", "health", f"{person} HEALTH record")
            await store.set_profile({"persona": f"{person} persona", "api_key": "SECRET key"})
        finally:
            await store.close()
    return ids


@pytest.fixture(scope="module")
def pg() -> Iterator[Seeded]:
    """One server for the module: migrated by its owner, ann's and bob's rows seeded."""
    with migrated_postgres() as server:
        yield Seeded(server, asyncio.run(_seed(server)))


@pytest.fixture(scope="module")
def sqlite_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Bob's SQLite database with bob's rows (on SQLite each person has a file)."""
    home = tmp_path_factory.mktemp("bob")
    store = SqliteStore.open_home(home, clock=lambda: FIXED_NOW)
    try:
        for row in ROWS["bob"]:
            store.add_message(*row)
        return Path(store.path)
    finally:
        store.close()


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def run(
    backend: str, pg: Seeded, sqlite_home: Path, sql: str, cap: int = sql_guard.ROW_CAP
) -> dict[str, Any]:
    """``sql`` through the backend's guard, as bob, with at most ``cap`` rows back."""
    if backend == "sqlite":
        return await asyncio.to_thread(sql_guard.run_sql, sqlite_home, sql, row_cap=cap)
    return await pg_sql_guard.run_sql(pg.server.url, "bob", sql, max_rows=cap)


def snapshot(backend: str, pg: Seeded, sqlite_home: Path) -> list[Any]:
    """Every message and session, read past every guard (as the admin / plain SQLite)."""
    query = """SELECT 'm', id::text, role, content FROM messages
               UNION ALL SELECT 's', id, title, '' FROM sessions ORDER BY 1, 2, 3"""
    if backend == "sqlite":
        with sqlite3.connect(sqlite_home) as conn:
            return conn.execute(query.replace("::text", "")).fetchall()
    with psycopg.connect(pg.server.admin_url) as conn:
        return conn.execute(query).fetchall()


def leaked(result: dict[str, Any]) -> bool:
    """Did the result (rows or error) show ann's text or a memory_tool row?"""
    shown = repr(result.get("rows", [])) + result.get("error", "")
    return "ann" in shown or "SECRET" in shown


def anns_memories(pg: Seeded) -> list[tuple[str, str]]:
    """Ann's memories, read past every guard (as the superuser)."""
    with psycopg.connect(pg.server.admin_url) as conn:
        rows = conn.execute(
            "SELECT key, value FROM memories WHERE person = 'ann' ORDER BY key"
        ).fetchall()
    return [(str(key), str(value)) for key, value in rows]


def logins(pg: Seeded) -> list[tuple[str, str]]:
    """Every login, read past every guard."""
    with psycopg.connect(pg.server.admin_url) as conn:
        rows = conn.execute("SELECT token_hash, name FROM logins ORDER BY 1").fetchall()
    return [(str(token), str(name)) for token, name in rows]


@contextmanager
def as_companion_sql(pg: Seeded, person: str) -> Iterator[psycopg.Connection[Any]]:
    """A connection logged in as companion_sql and bound to ``person`` exactly as
    run_sql binds one, with no parse in front: what holds here holds by construction."""
    with (
        psycopg.connect(pg.server.url, autocommit=True) as app,
        psycopg.connect(pg.server.url_as(SQL_ROLE), autocommit=True) as conn,
    ):
        pid = conn.info.backend_pid
        app.execute(
            "INSERT INTO sql_bindings (backend_pid, person, batch, edit_at) "
            "VALUES (%s, %s, 'raw', now())",
            (pid, person),
        )
        try:
            yield conn
        finally:
            app.execute("DELETE FROM sql_bindings WHERE backend_pid = %s", (pid,))


# both backends ---------------------------------------------------------------------


async def test_a_select_sees_bobs_visible_rows_only(
    backend: str, pg: Seeded, sqlite_home: Path
) -> None:
    result = await run(
        backend, pg, sqlite_home, "SELECT role, content FROM messages WHERE session_id = 's'"
    )
    assert result == {
        "columns": ["role", "content"],
        "rows": BOB_VISIBLE_IN_S,
        "row_count": 2,
        "truncated": False,
    }
    hidden = await run(
        backend, pg, sqlite_home, "SELECT COUNT(*) FROM messages WHERE role = 'memory_tool'"
    )
    assert hidden["rows"] == [[0]]


async def test_like_ignores_case_on_both(backend: str, pg: Seeded, sqlite_home: Path) -> None:
    """The model writes SQLite's LIKE; on Postgres it must find "Hello" for '%HELLO%' too,
    and NOT LIKE must stay its negation."""
    found = await run(
        backend, pg, sqlite_home, "SELECT content FROM messages WHERE content LIKE '%BOB SAYS%'"
    )
    assert found["rows"] == [["bob says hello"]]
    rest = await run(
        backend,
        pg,
        sqlite_home,
        "SELECT COUNT(*) FROM messages WHERE session_id = 's' AND content not like '%Hello'",
    )
    assert rest["rows"] == [[1]]
    quoted = await run(backend, pg, sqlite_home, "SELECT 'LIKE' AS word")
    assert quoted["rows"] == [["LIKE"]]  # a string is never rewritten


REFUSED_ON_BOTH = [
    "DELETE FROM messages",
    "INSERT INTO messages (session_id, role, content, created_at) VALUES ('s', 'user', 'x', '')",
    "DROP TABLE messages",
    "SELECT 1; DELETE FROM messages",
    "UPDATE messages SET role = 'user'",
    "WITH x AS (UPDATE messages SET content = 'x' RETURNING 1) SELECT * FROM x",
    "BEGIN",
]


@pytest.mark.parametrize("sql", REFUSED_ON_BOTH)
async def test_writes_beyond_text_are_refused_and_change_nothing(
    backend: str, pg: Seeded, sqlite_home: Path, sql: str
) -> None:
    before = snapshot(backend, pg, sqlite_home)
    result = await run(backend, pg, sqlite_home, sql)
    assert result.get("error", "").startswith("refused"), result
    assert snapshot(backend, pg, sqlite_home) == before


async def test_the_row_cap_truncates(backend: str, pg: Seeded, sqlite_home: Path) -> None:
    result = await run(
        backend,
        pg,
        sqlite_home,
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 50) "
        "SELECT i FROM n",
        cap=10,
    )
    assert result["rows"] == [[i] for i in range(1, 11)]
    assert result["row_count"] == 10 and result["truncated"] is True


async def test_an_update_changes_bobs_visible_text_only(
    backend: str, pg: Seeded, sqlite_home: Path
) -> None:
    before = snapshot(backend, pg, sqlite_home)
    same = "UPDATE messages SET content = content || '' WHERE session_id = 's'"
    assert (await run(backend, pg, sqlite_home, same)) == {
        "updated": 0 if backend == "sqlite" else 2  # SQLite counts only changed values
    }
    assert snapshot(backend, pg, sqlite_home) == before
    hidden = "UPDATE messages SET content = 'x' WHERE role = 'memory_tool'"
    assert (await run(backend, pg, sqlite_home, hidden)) == {"updated": 0}
    assert snapshot(backend, pg, sqlite_home) == before


async def test_an_update_past_the_edit_cap_changes_nothing(
    backend: str, pg: Seeded, sqlite_home: Path
) -> None:
    before = snapshot(backend, pg, sqlite_home)
    result = await run(
        backend, pg, sqlite_home, "UPDATE messages SET content = 'x' WHERE session_id = 'many'"
    )
    assert "changes at most" in result["error"]
    assert snapshot(backend, pg, sqlite_home) == before


# Postgres: one database, two people ------------------------------------------------

LEAKS = [
    "SELECT * FROM messages",
    "SELECT * FROM public.messages",
    "SELECT content FROM main.messages",
    "WITH messages AS (SELECT * FROM public.messages) SELECT content FROM messages",
    "SELECT (SELECT content FROM messages WHERE id = {ann})",
    "SELECT content FROM messages WHERE id IN (SELECT id FROM messages WHERE id = {ann})",
    "SELECT title FROM sessions UNION SELECT content FROM messages",
    "SELECT (WITH pg_stat_activity AS (SELECT 1) SELECT 1), "
    "(SELECT string_agg(query, ',') FROM pg_stat_activity)",
    "SELECT content FROM messages WHERE id = {ann} OR session_id = 's' OR true",
    "SELECT * FROM sessions",
    "SELECT query_to_xml('select * from public.messages', true, true, '')",
    # app.person is what row-level security trusts: setting it mid-statement must fail
    "SELECT set_config('app.person', 'ann', false)",
    "WITH x AS MATERIALIZED (SELECT set_config('app.person', 'ann', true) v) "
    "SELECT (SELECT v FROM x), (SELECT string_agg(content, ',') FROM messages)",
    "SELECT (SELECT string_agg(content, ',') FROM messages) "
    "FROM (SELECT set_config('app.person', 'ann', true) v OFFSET 0) x",
    "UPDATE pg_settings SET setting = 'ann' WHERE name = 'app.person'",
    "SELECT current_setting('app.person')",
    "SELECT * FROM memories",
    "SELECT * FROM segments",
    "SELECT * FROM profile",
    "SELECT m.value, p.value FROM memories m, profile p",
]


@pytest.mark.parametrize("sql", LEAKS)
async def test_nothing_of_anns_reaches_bob(pg: Seeded, sql: str) -> None:
    result = await pg_sql_guard.run_sql(pg.server.url, "bob", sql.format(ann=pg.ids["ann"][0]))
    assert not leaked(result), result
    after = await pg_sql_guard.run_sql(pg.server.url, "bob", "SELECT content FROM messages")
    assert not leaked(after) and after["row_count"] == len(ROWS["bob"]) - 1


async def test_memory_tool_rows_are_hidden_even_from_their_owner(pg: Seeded) -> None:
    result = await pg_sql_guard.run_sql(pg.server.url, "ann", "SELECT content FROM messages")
    assert result["row_count"] == len(ROWS["ann"]) - 1
    assert "SECRET" not in repr(result["rows"])
    hidden = pg.ids["ann"][1]
    direct = await pg_sql_guard.run_sql(
        pg.server.url, "ann", f"SELECT content FROM messages WHERE id = {hidden}"
    )
    assert direct["rows"] == []


async def test_bob_cannot_change_anns_rows(pg: Seeded, sqlite_home: Path) -> None:
    before = snapshot("postgres", pg, sqlite_home)
    for sql in (
        f"UPDATE messages SET content = 'x' WHERE id = {pg.ids['ann'][0]}",
        "UPDATE sessions SET title = 'x' WHERE id = 's' AND person = 'ann'",
    ):
        assert await pg_sql_guard.run_sql(pg.server.url, "bob", sql) == {"updated": 0}
    assert snapshot("postgres", pg, sqlite_home) == before


TOO_LONG_VALUE = "x" * 3000
REFUSED_ON_POSTGRES = [
    ("UPDATE messages SET person = 'ann'", "updating messages.person"),
    ("UPDATE sessions SET person = 'ann'", "updating sessions.person"),
    ("UPDATE messages SET session_id = 'x'", "updating messages.session_id"),
    ("SET ROLE postgres", "SET"),
    ("RESET ROLE", "RESET"),
    ("SET app.person = 'ann'", "SET"),
    ("SELECT * FROM sql_edits", "reading sql_edits"),
    ("UPDATE sql_edits SET old_value = 'x'", "updating sql_edits.old_value"),
    ("SELECT * FROM sql_bindings", "reading sql_bindings"),
    ("SELECT password FROM sql_login", "reading sql_login"),
    ("SELECT * FROM job_leases", "reading job_leases"),
    ("SELECT * FROM message_terms", "reading message_terms"),
    ("SELECT count(*) FROM message_term_totals", "reading message_term_totals"),
    ("SELECT * FROM message_terms_backfill", "reading message_terms_backfill"),
    ("UPDATE memories SET key = 'x'", "updating memories.key"),
    ("UPDATE profile SET value = 'x'", "updating profile.value"),
    ("UPDATE sessions SET title = ' '", "sessions.title cannot be empty"),
    (f"UPDATE memories SET value = '{TOO_LONG_VALUE}'", "memories.value is at most 2,000"),
    ("SELECT * FROM running_turns", "reading running_turns"),
    ("SELECT * FROM schema_version", "reading schema_version"),
    ("SELECT * FROM users", "reading users"),
    ("COPY messages TO '/tmp/out'", "COPY"),
    ("SELECT pg_read_file('/etc/passwd')", "pg_read_file"),
    ("SELECT nextval('messages_id_seq')", "nextval"),
    ("SELECT set_config('statement_timeout', '0', true)", "set_config"),
    ("SELECT pg_sleep(5)", "pg_sleep"),
    ("SELECT repeat('x', 100000000)", "repeat"),
]


@pytest.mark.parametrize(("sql", "named"), REFUSED_ON_POSTGRES)
async def test_postgres_refuses_what_the_role_may_not_do(
    pg: Seeded, sqlite_home: Path, sql: str, named: str
) -> None:
    before = snapshot("postgres", pg, sqlite_home)
    result = await pg_sql_guard.run_sql(pg.server.url, "bob", sql)
    assert result["error"].startswith("refused") and named in result["error"], result
    assert snapshot("postgres", pg, sqlite_home) == before


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT lo_create(0)",
        "SELECT lo_from_bytea(0, 'x')",
        "SELECT lo_creat(-1)",
        "UPDATE messages SET content = lo_create(0)::text WHERE session_id = 'many'",
        "SELECT pg_notify('companion', 'x')",
    ],
)
async def test_no_large_object_or_notification_can_be_made(pg: Seeded, sql: str) -> None:
    """Large objects live outside every table's row-level security and belong to the one
    login role every person's statements share; a database owner who is no superuser
    cannot take the functions from PUBLIC, so the parse refuses them."""
    made = await pg_sql_guard.run_sql(pg.server.url, "bob", sql)
    assert made["error"].startswith("refused: function"), made
    with psycopg.connect(pg.server.admin_url) as conn:
        assert conn.execute("SELECT COUNT(*) FROM pg_largeobject_metadata").fetchall() == [(0,)]


# Issue 19, C1 and C2: bob's memory_sql against ann's rows --------------------------

C1_PAYLOADS = [
    # sqlparse ended the comment at the first */ and saw a SELECT; Postgres nests
    # comments and ran a DO block that switched to the app's role.
    "/* /* */ SELECT 1 */ DO $x$ DECLARE v text; BEGIN SET LOCAL ROLE companion; "
    "PERFORM set_config('app.person','ann',true); "
    "SELECT string_agg(key||'='||value,' | ') INTO v FROM memories; "
    "RAISE EXCEPTION 'LEAK %', v; END $x$",
    "/* /* */ UPDATE sessions SET title='x' WHERE id='' */ DO $x$ BEGIN "
    "SET LOCAL ROLE companion; INSERT INTO logins(token_hash,name) VALUES "
    "(encode(sha256('bob-owns-ann'::bytea),'hex'),'ann'); END $x$",
]
C2_PAYLOADS = [
    # set_config stays granted to PUBLIC where the owner is no superuser.
    "SELECT (SELECT set_config('app.person','ann',true)), "
    "(SELECT string_agg(key||'='||value,' | ') FROM memories)",
    "UPDATE memories SET value='rewritten by bob' WHERE key='health' "
    "AND (SELECT set_config('app.person','ann',true)) IS NOT NULL",
]


@pytest.mark.parametrize("sql", C1_PAYLOADS + C2_PAYLOADS)
async def test_issue_19_payloads_reach_nothing_of_anns(
    pg: Seeded, sql: str, caplog: pytest.LogCaptureFixture
) -> None:
    memories, tokens = anns_memories(pg), logins(pg)
    caplog.set_level(logging.DEBUG)
    result = await pg_sql_guard.run_sql(pg.server.url, "bob", sql)
    assert result["error"].startswith("refused"), result
    assert not leaked(result)
    assert anns_memories(pg) == memories and logins(pg) == tokens
    logged = caplog.text  # messages and any traceback
    assert "HEALTH" not in logged and "LEAK" not in logged and "set_config" not in logged


@pytest.mark.parametrize("sql", C1_PAYLOADS)
def test_past_the_parse_a_do_block_cannot_become_the_app(pg: Seeded, sql: str) -> None:
    """The DO blocks themselves, sent straight to companion_sql's login: SET ROLE to the
    app's role is refused, whatever the block does first."""
    memories, tokens = anns_memories(pg), logins(pg)
    do_block = sql[sql.index("DO $x$") :]
    with as_companion_sql(pg, "bob") as conn:
        with pytest.raises(errors.InsufficientPrivilege, match="set role"):
            conn.execute(do_block)
        for attempt in (
            "SET ROLE companion",
            "INSERT INTO logins (token_hash, name) VALUES ('forged', 'ann')",
            "SELECT * FROM users",
            "SELECT * FROM sql_bindings",
            "UPDATE sql_bindings SET person = 'ann'",
            "SELECT password FROM sql_login",
            "SELECT term FROM message_terms",
            "SELECT * FROM message_term_totals",
            "DELETE FROM message_terms",
        ):
            with pytest.raises(errors.InsufficientPrivilege):
                conn.execute(attempt)
    assert anns_memories(pg) == memories and logins(pg) == tokens


def test_past_the_parse_set_config_changes_nothing_it_sees(pg: Seeded) -> None:
    """C2 straight to companion_sql's login, where set_config works: the rows it sees and
    changes are its binding's, which no statement can write."""
    memories = anns_memories(pg)
    select, update = C2_PAYLOADS
    with as_companion_sql(pg, "bob") as conn:
        row = conn.execute(select).fetchone()
        assert row is not None and row[0] == "ann"  # the setting did change…
        assert "ann" not in str(row[1]) and "bob herself" in str(row[1])  # …and nothing else
        with conn.transaction(force_rollback=True):
            assert conn.execute(update).rowcount == 1  # bob's own health memory
        assert conn.execute("SELECT public.memory_sql_person()").fetchone() == ("bob",)
    assert anns_memories(pg) == memories


def test_without_a_binding_companion_sql_sees_and_changes_nothing(pg: Seeded) -> None:
    memories = anns_memories(pg)
    with psycopg.connect(pg.server.url_as(SQL_ROLE), autocommit=True) as conn:
        conn.execute("SELECT set_config('app.person', 'ann', false)")
        for table in ("messages", "memories", "sessions", "segments", "profile"):
            assert conn.execute(f"SELECT count(*) FROM {table}").fetchone() == (0,), table
        with pytest.raises(errors.CheckViolation, match="needs its journal batch"):
            conn.execute("UPDATE memories SET value = 'x' WHERE key = 'health'")
    assert anns_memories(pg) == memories


async def test_an_update_of_bobs_text_is_written(pg: Seeded) -> None:
    target = pg.ids["bob"][-1]
    edit = f"UPDATE messages SET content = 'bob edited' WHERE id = {target}"
    assert await pg_sql_guard.run_sql(pg.server.url, "bob", edit) == {"updated": 1}
    shown = await pg_sql_guard.run_sql(
        pg.server.url, "bob", f"SELECT content FROM messages WHERE id = {target}"
    )
    assert shown["rows"] == [["bob edited"]]
    title = "UPDATE sessions SET title = 'Notes' WHERE id = 'many'"
    assert await pg_sql_guard.run_sql(pg.server.url, "bob", title) == {"updated": 1}


async def test_a_long_statement_is_stopped(pg: Seeded) -> None:
    started = time.monotonic()
    result = await pg_sql_guard.run_sql(
        pg.server.url,
        "bob",
        "SELECT count(*) FROM generate_series(1, 1000000000)",
        timeout_ms=300,
    )
    assert result == {"error": pg_sql_guard.TIME_LIMIT.format(seconds=0.3)}
    assert time.monotonic() - started < 3


async def test_values_come_back_as_plain_cells(pg: Seeded) -> None:
    result = await pg_sql_guard.run_sql(
        pg.server.url,
        "bob",
        f"SELECT created_at, meta, '{'x' * 2000}' AS long, NULL AS nothing, 1.5::numeric "
        f"FROM messages WHERE id = {pg.ids['bob'][0]}",
    )
    created, meta, long, nothing, number = result["rows"][0]
    assert created == "2026-11-25 09:30:00" and meta == "{}" and nothing is None
    assert long == "x" * sql_guard.CELL_CAP + "…" and number == "1.5"


async def test_errors_are_data(pg: Seeded) -> None:
    assert (await pg_sql_guard.run_sql(pg.server.url, "bob", "SELECT nope FROM messages"))[
        "error"
    ].startswith('SQL error: column "nope" does not exist')
    assert "error" in await pg_sql_guard.run_sql(pg.server.url, "", "SELECT 1")
    unreachable = pg.server.url.replace(str(pg.server.port), "1")
    assert (
        "could not reach" in (await pg_sql_guard.run_sql(unreachable, "bob", "SELECT 1"))["error"]
    )


# Postgres: the journal of edits ------------------------------------------------------


async def _person(pg: Seeded, name: str, *contents: str) -> tuple[PgStore, list[int]]:
    """A new person's store on the module's server, with messages in session "j"."""
    store = await PgStore.open(pg.server.url, name, clock=lambda: FIXED_NOW)
    ids = [(await store.add_message("j", "user", content)).id for content in contents]
    return store, ids


def _journal(pg: Seeded, person: str) -> list[tuple[str, str, str, str]]:
    """A person's journal entries, read past every guard (as the admin)."""
    with psycopg.connect(pg.server.admin_url) as conn:
        return conn.execute(
            """SELECT table_name, row_id, old_value, new_value FROM sql_edits
               WHERE person = %s ORDER BY id""",
            (person,),
        ).fetchall()


async def test_the_journal_is_out_of_companion_sqls_reach(pg: Seeded) -> None:
    store, (said,) = await _person(pg, "eve", "eve's words")
    try:
        edit = f"UPDATE messages SET content = 'eve changed' WHERE id = {said}"
        assert await store.run_sql(edit, now=FIXED_NOW) == {"updated": 1}
        journalled = _journal(pg, "eve")
        assert journalled == [("messages", str(said), "eve's words", "eve changed")]
        for sql in (
            "SELECT * FROM sql_edits",
            "SELECT old_value FROM public.sql_edits",
            "UPDATE sql_edits SET new_value = 'x'",
            "SELECT companion_sql_journal()",
        ):
            result = await store.run_sql(sql, now=FIXED_NOW)
            assert "error" in result and "eve" not in repr(result), (sql, result)
        # The role itself, whatever statement reached it: no INSERT, no DELETE either.
        with as_companion_sql(pg, "eve") as conn:
            for sql in (
                "INSERT INTO sql_edits (person, batch, table_name, row_id, column_name, "
                "old_value, new_value, created_at) "
                "VALUES ('eve', 'b', 'messages', '1', 'content', 'a', 'b', now())",
                "DELETE FROM sql_edits",
                "SELECT * FROM sql_edits",
            ):
                with pytest.raises(errors.InsufficientPrivilege):
                    conn.execute(sql)
        assert _journal(pg, "eve") == journalled
        # An edit of nothing new journals nothing.
        same = f"UPDATE messages SET content = content WHERE id = {said}"
        assert await store.run_sql(same, now=FIXED_NOW) == {"updated": 1}
        assert _journal(pg, "eve") == journalled
    finally:
        await store.close()


async def test_undo_restores_the_text_an_update_replaced(pg: Seeded) -> None:
    store, ids = await _person(pg, "fay", "first words", "second words", "third words")
    try:
        before = await store.messages("j")
        edit = f"UPDATE messages SET content = upper(content) WHERE id IN ({ids[0]}, {ids[2]})"
        assert await store.run_sql(edit, now=FIXED_NOW) == {"updated": 2}
        assert [m.content for m in await store.messages("j")] == [
            "FIRST WORDS",
            "second words",
            "THIRD WORDS",
        ]
        batch = await store.undo_last_sql_edit()
        assert batch is not None and [e.row_id for e in batch.edits] == [ids[0], ids[2]]
        assert await store.messages("j") == before
        assert await store.undo_last_sql_edit() is None
    finally:
        await store.close()


async def test_a_forged_or_foreign_batch_is_never_applied(pg: Seeded, sqlite_home: Path) -> None:
    """Journal entries written past the guard (as the admin) that name ann's rows or a
    memory_tool row: undo runs under the undoer's row-level security and never writes a
    memory_tool message, so it refuses them and nothing changes."""
    store, (own,) = await _person(pg, "gus", "gus's words")
    ann_text, ann_hidden = pg.ids["ann"][0], pg.ids["ann"][1]
    gus_hidden = (await store.add_message("j", "memory_tool", "gus tool result")).id
    before = snapshot("postgres", pg, sqlite_home)

    def forge(person: str, batch: str, row_id: int, new: str) -> None:
        with psycopg.connect(pg.server.admin_url, autocommit=True) as conn:
            conn.execute(
                """INSERT INTO sql_edits (person, batch, table_name, row_id, column_name,
                                          old_value, new_value, created_at)
                   VALUES (%s, %s, 'messages', %s, 'content', 'pwned', %s, now())""",
                (person, batch, str(row_id), new),
            )

    try:
        for row_id, new in (
            (ann_text, "ann says hello"),  # ann's row, as it reads now
            (ann_hidden, "ann SECRET tool result"),
            (gus_hidden, "gus tool result"),  # gus's own memory_tool row
        ):
            forge("gus", f"forged-{row_id}", row_id, new)
            with pytest.raises(EditConflict, match=f"messages {row_id} changed since"):
                await store.undo_last_sql_edit()
            with psycopg.connect(pg.server.admin_url, autocommit=True) as conn:
                conn.execute("DELETE FROM sql_edits WHERE batch = %s", (f"forged-{row_id}",))
        # Ann's batch naming gus's row: gus never sees it, ann's undo cannot reach the row.
        forge("ann", "anns-batch", own, "gus's words")
        assert await store.undo_last_sql_edit() is None
        ann = await PgStore.open(pg.server.url, "ann", clock=lambda: FIXED_NOW)
        try:
            with pytest.raises(EditConflict, match=f"messages {own} changed since"):
                await ann.undo_last_sql_edit()
        finally:
            await ann.close()
        assert snapshot("postgres", pg, sqlite_home) == before
        assert [m.content for m in await store.messages("j")] == [
            "gus's words",
            "gus tool result",
        ]
    finally:
        with psycopg.connect(pg.server.admin_url, autocommit=True) as conn:
            conn.execute("DELETE FROM sql_edits WHERE batch = 'anns-batch'")
        await store.close()


async def test_the_journal_keeps_the_last_batches_only(pg: Seeded) -> None:
    store, (said,) = await _person(pg, "hal", "v0")
    try:
        for n in range(1, KEPT_BATCHES + 3):
            edit = f"UPDATE messages SET content = 'v{n}' WHERE id = {said}"
            assert await store.run_sql(edit, now=FIXED_NOW) == {"updated": 1}
        kept = _journal(pg, "hal")
        assert len(kept) == KEPT_BATCHES and kept[0][2:] == ("v2", "v3")
    finally:
        await store.close()


async def test_the_edit_cap_counts_every_table_one_statement_changes(
    pg: Seeded, sqlite_home: Path
) -> None:
    """An UPDATE inside a CTE changes a second table: the parse refuses it, and past the
    parse the journal counts every changed text (the outer statement's row count says
    1), so the cap holds either way."""
    before = snapshot("postgres", pg, sqlite_home)
    both = (
        "WITH x AS (UPDATE messages SET content = content || '!' WHERE session_id = 'many') "
        "UPDATE sessions SET title = 'Many' WHERE id = 'many'"
    )
    result = await pg_sql_guard.run_sql(pg.server.url, "bob", both)
    assert result["error"].startswith("refused"), result
    with (
        as_companion_sql(pg, "bob") as conn,
        pytest.raises(errors.CheckViolation, match="changes at most"),
    ):
        conn.execute(both)
    assert snapshot("postgres", pg, sqlite_home) == before


async def test_a_failed_statement_is_logged_by_kind_never_by_its_text(
    backend: str, pg: Seeded, sqlite_home: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The error's text may quote rows or the model's SQL; a newline in it would start a
    forged line in companion.log. The model still hears the whole error."""
    caplog.set_level(logging.DEBUG)
    forged = 'SELECT m."x\nERROR forged line" FROM messages m'
    result = await run(backend, pg, sqlite_home, forged)
    assert "forged line" in result["error"]
    failing = "SELECT CAST(content AS integer) FROM messages WHERE content LIKE 'bob says%'"
    result = await run(backend, pg, sqlite_home, failing)
    if backend == "postgres":  # SQLite's CAST never fails
        assert "bob says hello" in result["error"]
    refused = await run(backend, pg, sqlite_home, "SELECT content FROM messages; DROP x")
    assert refused["error"].startswith("refused")
    messages = [record.getMessage() for record in caplog.records]
    assert messages and all("\n" not in message for message in messages)
    assert all(record.exc_info is None for record in caplog.records)  # no traceback text
    logged = caplog.text
    assert "forged" not in logged and "bob says" not in logged and "DROP" not in logged
