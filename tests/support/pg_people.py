"""The isolation tests' two backends: a home of people on SQLite (a database file per
person) or on a real Postgres server (one shared database, every row a person's).

``migrated_postgres`` starts a ``PostgresServer`` and migrates it as ``companion db
migrate`` does, as the database's owner who is no superuser (the store's schema,
memory_sql's role, the users table, then ``verify``: a problem fails the fixture).
``open_accounts``
gives the registry ``People`` will read for a backend and the environment that selects
it, so a test builds ``People(flags, env, ...)`` the same way on both. ``forget_everyone``
empties a migrated server between tests (people, their rows, and the id sequences, so the
first person added is id 1 again).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

import psycopg
from psycopg import sql

from memory.postgres.accounts import PgAccounts
from memory.postgres.schema import APP_TABLES, migrate, migrate_accounts, prepare
from memory.postgres.sql_guard import SQL_ROLE, SetupReport, verify
from memory.sqlite.accounts import SqliteAccounts
from tests.support.postgres import APP_ROLE, PostgresServer

Backend = Literal["sqlite", "postgres"]
BACKENDS: tuple[Backend, ...] = ("sqlite", "postgres")


@contextmanager
def migrated_postgres() -> Iterator[PostgresServer]:
    """A running server with the schema, memory_sql's role and the users table in place,
    made by the database's owner (no superuser) and verified."""
    with PostgresServer() as server:
        report = migrate_as_owner(server)
        if report.problems:
            raise RuntimeError("the migrated database fails verify: " + "; ".join(report.problems))
        yield server


def migrate_as_owner(server: PostgresServer) -> SetupReport:
    """``companion db migrate``'s steps, as the database's owner; what verify found."""
    asyncio.run(migrate(server.owner_url, APP_ROLE))
    asyncio.run(prepare(server.owner_url, SQL_ROLE, APP_ROLE))
    migrate_accounts(server.owner_url, APP_ROLE)
    return asyncio.run(verify(server.owner_url, APP_ROLE, server.url))


def forget_everyone(server: PostgresServer) -> None:
    """Empty the people and every app table (and the vectors, which follow their
    messages), restarting their ids (as the admin)."""
    tables = sql.SQL(", ").join(map(sql.Identifier, ("users", *APP_TABLES)))
    with psycopg.connect(server.admin_url, autocommit=True) as conn:
        conn.execute(sql.SQL("TRUNCATE {} RESTART IDENTITY CASCADE").format(tables))


def open_accounts(
    backend: Backend, root: Path, server: PostgresServer | None
) -> tuple[dict[str, str], SqliteAccounts | PgAccounts]:
    """The environment that selects ``backend`` and the accounts ``People`` will read."""
    if backend == "sqlite":
        return {}, SqliteAccounts.open_home(root)
    if server is None:
        raise ValueError("the postgres backend needs a server")
    return {"COMPANION_DATABASE_URL": server.url}, PgAccounts(server.url, root)
