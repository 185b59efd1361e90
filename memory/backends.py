"""Which backend a Companion uses: the only module that looks at a database URL.

``url`` None means SQLite, a file per person in the home; a URL means the shared
Postgres database, each person's rows under their key. ``open_store`` gives a person's
``AsyncStore``, ``open_accounts`` the registry of people, ``migrate`` makes the Postgres
schema. Callers resolve the home and the URL from configuration. psycopg is the
``postgres`` extra: it is imported only when a URL is given (ImportError without it).
A process keeps one set of Postgres pools per URL, shared by every person's store.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memory.protocol import Accounts, AsyncStore
from memory.sqlite.accounts import SqliteAccounts
from memory.sqlite.async_store import AsyncSqliteStore
from memory.sqlite.store import SqliteStore, query_rows
from memory.types import OWNER, Clock, utc_now

if TYPE_CHECKING:
    from memory.postgres.pool import LoopPools

_DATABASES: dict[str, LoopPools] = {}  # one set of pools per database URL in a process


def open_store(
    home: Path, url: str | None, *, person: str = OWNER, clock: Clock = utc_now
) -> AsyncStore:
    """``person``'s store: the SQLite file of ``home`` when ``url`` is None, else their
    rows of the Postgres database at ``url``, with their images in ``home``/media."""
    if url is None:
        return AsyncSqliteStore(SqliteStore.open_home(home, clock=clock))
    from memory.postgres.pool import LoopPools
    from memory.postgres.store import PgStore

    pools = _DATABASES.get(url) or _DATABASES.setdefault(url, LoopPools(url))
    return PgStore.for_person(pools, person, clock=clock, media_dir=home / "media")


async def check_rows(store: AsyncStore, sql: str, *, now: datetime) -> list[list[Any]]:
    """The rows of a read-only check query (the evals' database checks), an error as one
    row holding it: on SQLite on the file's own connection (its catalog readable), on
    Postgres through the person's memory_sql (read-only, scoped to the person)."""
    if isinstance(store, AsyncSqliteStore):
        return query_rows(store.blocking, sql)
    result = await store.run_sql(sql, now=now)
    if "error" in result:
        return [[f"error: {result['error']}"]]
    return [list(row) for row in result.get("rows", [])]


async def postgres_vector_index(store: AsyncStore) -> str | None:
    """pgvector's version where ``store``'s Postgres database has the vector index; None
    where it has not (recall is lexical there) or ``store`` is not on Postgres."""
    from memory.postgres.store import PgStore

    return await store.vector_index() if isinstance(store, PgStore) else None


def sqlite_health(home: Path) -> tuple[str, int]:
    """The SQLite file of ``home``, opened (made if missing): SQLite's integrity verdict
    ("ok" or what it found) and the schema version."""
    store = SqliteStore.open_home(home)
    try:
        return store.health()
    finally:
        store.close()


def sqlite_profile(home: Path) -> dict[str, str]:
    """The profile kept in the SQLite file of ``home`` (empty when it has no file yet:
    none is made)."""
    if not (home / "companion.db").exists():
        return {}
    store = SqliteStore.open_home(home)
    try:
        return store.profile()
    finally:
        store.close()


def open_accounts(root: Path, url: str | None) -> Accounts:
    """The people of the Companion at home ``root``: its accounts.db when ``url`` is
    None, else the users table of the Postgres database at ``url``."""
    if url is None:
        return SqliteAccounts.open_home(root)
    from memory.postgres.accounts import PgAccounts

    return PgAccounts(url, root)


async def release_connections() -> None:
    """Close the running loop's Postgres connections (``companion`` reads its settings on
    a start-up loop before Gradio starts its own: that loop's pool must not linger)."""
    for pools in _DATABASES.values():
        await pools.close()


@dataclass(frozen=True)
class Migrated:
    """What ``migrate`` did and found: the versions in place, memory_sql's role, and the
    problems (a broken guarantee) and notes (an open door not relied on) of the check."""

    version: int
    accounts_version: int
    sql_role: str
    problems: tuple[str, ...]
    notes: tuple[str, ...]


async def migrate(admin_url: str, url: str, app_role: str) -> Migrated:
    """Make or update the Postgres schema, memory_sql's role and the users table as the
    admin, grant ``app_role`` (the user of ``url``) what the app needs, then check every
    privilege memory_sql relies on. StoreError when the database fails."""
    from memory.postgres.schema import migrate_everything
    from memory.postgres.sql_guard import SQL_ROLE

    version, accounts_version, report = await migrate_everything(admin_url, url, app_role)
    return Migrated(version, accounts_version, SQL_ROLE, report.problems, report.notes)
