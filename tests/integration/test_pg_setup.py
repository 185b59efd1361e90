"""COMPANION_DATABASE_URL as a person meets it: it selects Postgres for the terminal chat,
the app's start-up and ``companion doctor``; a database that is down or was never
migrated is said plainly, with what to do; one process's connections serve every event
loop it runs; ``companion db migrate``, as the database's owner who is no superuser, puts
right or names whatever would break memory_sql's isolation."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from graph.setup import OWNER, ContextFactory, open_store, release_connections, startup_settings
from memory import StoreError
from memory.postgres.pool import LoopPools
from memory.postgres.sql_guard import SQL_ROLE, run_sql
from memory.postgres.store import PgStore
from memory.sqlite.async_store import AsyncSqliteStore
from tests.support.fake_openai import FakeOpenAIServer
from tests.support.pg_people import migrate_as_owner, migrated_postgres
from tests.support.postgres import PostgresServer


@pytest.fixture(scope="module")
def postgres() -> Iterator[PostgresServer]:
    """One server for the module, migrated as `companion db migrate` does."""
    with migrated_postgres() as server:
        yield server


def companion(
    home: Path, *args: str, env: dict[str, str], stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    """Run the real ``companion`` with ``env`` (and nothing of the database from outside)."""
    full = {k: v for k, v in os.environ.items() if not k.startswith("COMPANION_")}
    full |= {"COMPANION_HOME": str(home), **env}
    return subprocess.run(
        [sys.executable, "-m", "app.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        env=full,
    )


def owner_texts(server: PostgresServer, person: str) -> list[str]:
    """The user messages stored for ``person``, read as the admin (no row security)."""
    with psycopg.connect(server.admin_url) as conn:
        rows = conn.execute(
            "SELECT content FROM messages WHERE person = %s AND role = 'user' ORDER BY id",
            (person,),
        ).fetchall()
    return [row[0] for row in rows]


def test_the_url_selects_the_backend(tmp_path: Path, postgres: PostgresServer) -> None:
    sqlite = open_store({"home": str(tmp_path)}, {})
    assert isinstance(sqlite, AsyncSqliteStore)
    asyncio.run(sqlite.close())
    pg = open_store({"home": str(tmp_path)}, {"COMPANION_DATABASE_URL": postgres.url}, person="7")
    assert isinstance(pg, PgStore) and pg.person == "7"
    assert pg.media_dir == tmp_path / "media"  # images stay files on the home


def test_one_process_serves_every_loop_it_runs(postgres: PostgresServer) -> None:
    """companion reads its settings on a start-up loop, then Gradio runs its own: a pool
    opened on the first must not be used (or needed) by the second."""
    pools = LoopPools(postgres.url)
    store = PgStore.for_person(pools, "loops")

    async def chat(text: str) -> int:
        session = await store.create_session()
        await store.add_message(session.id, "user", text)
        return len(await store.list_sessions())

    assert asyncio.run(chat("on the start-up loop")) == 1
    assert asyncio.run(chat("on the app's loop")) == 2
    asyncio.run(pools.close())  # the running (new) loop's pool; nothing else was left open


def test_a_database_that_is_down_is_said_at_once(tmp_path: Path) -> None:
    env = {"COMPANION_DATABASE_URL": "postgresql://companion@127.0.0.1:1/companion"}
    with pytest.raises(StoreError, match="could not reach the Postgres database"):
        asyncio.run(startup_settings(ContextFactory({"home": str(tmp_path)}, env)))


def test_a_database_never_migrated_names_the_command(
    tmp_path: Path, postgres: PostgresServer
) -> None:
    maintenance = postgres.admin_url.rsplit("/", 1)[0] + "/postgres"
    with psycopg.connect(maintenance, autocommit=True) as conn:
        conn.execute("CREATE DATABASE never_migrated")
    url = postgres.url.rsplit("/", 1)[0] + "/never_migrated"
    factory = ContextFactory({"home": str(tmp_path)}, {"COMPANION_DATABASE_URL": url})
    with pytest.raises(StoreError, match="run `companion db migrate`"):
        asyncio.run(startup_settings(factory))
    served = companion(tmp_path, "--port", "0", env={"COMPANION_DATABASE_URL": url})
    assert served.returncode == 1
    assert "run `companion db migrate`" in served.stderr
    assert "Traceback" not in served.stderr


def test_terminal_chat_and_doctor_on_postgres(tmp_path: Path, postgres: PostgresServer) -> None:
    env = {"COMPANION_DATABASE_URL": postgres.url}
    with FakeOpenAIServer(default="Noted.") as server:
        model = {
            "COMPANION_BASE_URL": server.url,
            "COMPANION_API_KEY": "chat-key",
            "COMPANION_CHAT_MODEL": "fake-chat",
        }
        said = companion(tmp_path, "chat", "-m", "hello from the terminal", env=env | model)
        assert said.returncode == 0, said.stderr
        assert said.stdout.strip() == "Noted."
        # No accounts: the one person is the owner, in the shared database, not a file.
        assert owner_texts(postgres, OWNER) == ["hello from the terminal"]
        assert not (tmp_path / "companion.db").exists()

        added = companion(tmp_path, "user", "add", "cleo", env=env, stdin="cleo's password\n")
        assert added.returncode == 0, added.stderr
        assert "owns the conversations already in the shared database" in added.stdout
        added = companion(tmp_path, "user", "add", "dan", env=env, stdin="dan's password\n")
        said = companion(tmp_path, "chat", "--user", "dan", "-m", "dan here", env=env | model)
        assert said.returncode == 0, said.stderr
        assert owner_texts(postgres, OWNER) == ["hello from the terminal"]  # cleo's, untouched
        with psycopg.connect(postgres.admin_url) as conn:
            dan = conn.execute("SELECT id FROM users WHERE name = 'dan'").fetchone()
        assert dan is not None and owner_texts(postgres, str(dan[0])) == ["dan here"]

        checked = companion(tmp_path, "doctor", env=env | model)
    assert "✓ database: postgresql://companion@" in checked.stdout, checked.stdout
    assert "(Postgres; 1 chat(s) of the owner)" in checked.stdout
    asyncio.run(release_connections())


# companion db migrate checks what memory_sql relies on (issue 19) -------------------

# Changes only a superuser can make (or unmake), and what verify must then say; None:
# migrate itself puts it right, as the database's owner.
TAMPERS = [
    ("ALTER ROLE companion_sql BYPASSRLS", "ALTER ROLE companion_sql NOBYPASSRLS",
     "companion_sql has BYPASSRLS"),
    ("ALTER ROLE companion_sql SUPERUSER", "ALTER ROLE companion_sql NOSUPERUSER",
     "companion_sql has SUPERUSER"),
    ("ALTER ROLE companion BYPASSRLS", "ALTER ROLE companion NOBYPASSRLS",
     "the app role companion has BYPASSRLS"),
    ("ALTER TABLE memories NO FORCE ROW LEVEL SECURITY",
     "ALTER TABLE memories FORCE ROW LEVEL SECURITY",
     "row-level security is not enabled and forced on memories"),
    ("CREATE FUNCTION public.peek() RETURNS text LANGUAGE sql SECURITY DEFINER "
     "AS 'SELECT string_agg(value, '','') FROM memories'", "DROP FUNCTION public.peek()",
     "may call the SECURITY DEFINER function peek()"),
    ("CREATE SCHEMA side; GRANT CREATE ON SCHEMA side TO companion_sql",
     "DROP SCHEMA side", "companion_sql may create objects in schema side"),
    ("CREATE TABLE side_notes (x text); GRANT SELECT ON side_notes TO PUBLIC",
     "DROP TABLE side_notes", "companion_sql may SELECT on public.side_notes"),
    ("GRANT pg_read_all_data TO companion_sql", "REVOKE pg_read_all_data FROM companion_sql",
     None),
    ("GRANT companion TO companion_sql", "REVOKE companion FROM companion_sql", None),
    ("GRANT companion_sql TO companion", "REVOKE companion_sql FROM companion", None),
    ("GRANT SELECT ON sql_edits, sql_bindings TO companion_sql",
     "REVOKE SELECT ON sql_edits, sql_bindings FROM companion_sql", None),
    ("GRANT INSERT ON messages TO PUBLIC", "REVOKE INSERT ON messages FROM PUBLIC",
     "companion_sql may INSERT on public.messages"),
    ("DROP POLICY memories_companion_sql_person ON memories", "SELECT 1", None),
    ("GRANT CREATE ON SCHEMA public TO PUBLIC", "REVOKE CREATE ON SCHEMA public FROM PUBLIC",
     None),
]  # fmt: skip


# From PostgreSQL 16 on, a CREATEROLE owner may revoke only the memberships it holds
# ADMIN OPTION on: a superuser's grant to companion_sql is then named, not put right.
NAMED_FROM_16 = {
    "GRANT pg_read_all_data TO companion_sql": "companion_sql is a member of pg_read_all_data",
    "GRANT companion TO companion_sql": "companion_sql is a member of companion",
}


def server_version(server: PostgresServer) -> int:
    with psycopg.connect(server.admin_url) as conn:
        return conn.info.server_version // 10000


def as_superuser(server: PostgresServer, statement: str) -> None:
    with psycopg.connect(server.admin_url, autocommit=True) as conn:
        conn.execute(statement)


@pytest.mark.parametrize(("tamper", "undo", "problem"), TAMPERS)
def test_migrate_puts_right_or_names_what_breaks_memory_sqls_isolation(
    postgres: PostgresServer, tamper: str, undo: str, problem: str | None
) -> None:
    if server_version(postgres) >= 16:
        problem = NAMED_FROM_16.get(tamper, problem)
    as_superuser(postgres, tamper)
    try:
        report = migrate_as_owner(postgres)
    finally:
        as_superuser(postgres, undo)
    if problem is None:
        assert report.problems == ()
    else:
        assert any(problem in found for found in report.problems), report.problems
    assert migrate_as_owner(postgres).problems == ()


def test_companion_db_migrate_fails_loudly_and_notes_what_it_cannot_revoke(
    tmp_path: Path, postgres: PostgresServer
) -> None:
    env = {
        "COMPANION_DATABASE_URL": postgres.url,
        "COMPANION_DATABASE_ADMIN_URL": postgres.owner_url,
    }
    as_superuser(postgres, "ALTER ROLE companion_sql BYPASSRLS")
    try:
        failed = companion(tmp_path, "db", "migrate", env=env)
    finally:
        as_superuser(postgres, "ALTER ROLE companion_sql NOBYPASSRLS")
    assert failed.returncode == 1, failed.stdout
    assert "- companion_sql has BYPASSRLS" in failed.stderr
    assert "Traceback" not in failed.stderr
    passed = companion(tmp_path, "db", "migrate", env=env)
    assert passed.returncode == 0, passed.stderr
    assert passed.stdout.startswith("Schema at version")
    # Built-ins a database owner who is no superuser cannot take from PUBLIC: said.
    assert "note: companion_sql may call pg_catalog.set_config" in passed.stderr


def test_memory_sql_logs_in_with_its_password_where_the_server_asks_for_one(
    tmp_path: Path,
) -> None:
    """pg_hba.conf asking companion_sql for a SCRAM password, as a real server would: the
    verifier migrate stored and the password the app reads from sql_login agree."""
    with PostgresServer() as server:
        migrate_as_owner(server)
        hba = server.data / "pg_hba.conf"
        hba.write_text("host all companion_sql 127.0.0.1/32 scram-sha-256\n" + hba.read_text())
        as_superuser(server, "SELECT pg_reload_conf()")
        with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
            psycopg.connect(server.url_as(SQL_ROLE) + "?password=wrong").close()
        result = asyncio.run(run_sql(server.url, "ann", "SELECT count(*) FROM messages"))
        assert result["rows"] == [[0]], result
        assert migrate_as_owner(server).problems == ()  # its login check passes too
