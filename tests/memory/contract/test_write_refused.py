"""A database that cannot take a write: both backends raise ``memory.WriteRefused`` with
the driver's own words (SQLite's read-only connection, Postgres's read-only transaction),
so the chat tells the person the same thing whichever backend refused."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from app.chat_handlers import WRITE_FAILURE, failure_bubble, write_failure
from memory import AsyncStore, StoreError, WriteRefused
from memory.postgres.store import PgStore
from memory.sqlite.async_store import AsyncSqliteStore
from memory.sqlite.store import SqliteStore
from tests.support.pg_people import BACKENDS, migrated_postgres
from tests.support.postgres import PostgresServer

READ_ONLY = "options=-c%20default_transaction_read_only%3Don"


@pytest.fixture(scope="module")
def postgres() -> Iterator[PostgresServer]:
    with migrated_postgres() as server:
        yield server


@pytest.fixture(params=BACKENDS)
def server(request: pytest.FixtureRequest) -> PostgresServer | None:
    """None on SQLite, the migrated server on Postgres (started outside the test's loop)."""
    return request.getfixturevalue("postgres") if request.param == "postgres" else None


async def read_only_store(server: PostgresServer | None, home: Path) -> AsyncStore:
    """A store whose database takes reads and refuses every write."""
    if server is None:
        store = AsyncSqliteStore(SqliteStore.open_home(home), try_inline=False)  # one connection
        await store.write(lambda blocking: blocking.conn.execute("PRAGMA query_only = ON"))
        return store
    joiner = "&" if "?" in server.url else "?"
    return await PgStore.open(f"{server.url}{joiner}{READ_ONLY}", "reader")


async def test_a_refused_write_raises_write_refused(
    server: PostgresServer | None, tmp_path: Path
) -> None:
    store = await read_only_store(server, tmp_path)
    try:
        assert await store.list_sessions() == []  # reads still work
        with pytest.raises(WriteRefused, match=r"read-only|readonly") as refused:
            await store.create_session("hello")
        with pytest.raises(WriteRefused):
            await store.set_profile({"persona": "pirate"})
    finally:
        await store.close()
    assert isinstance(refused.value, StoreError)
    assert refused.value.__cause__ is not None  # the driver's error stays in the chain
    # What the chat shows for it: the same sentence on both backends, not "Something
    # went wrong" (the bug branch).
    assert write_failure(refused.value) == WRITE_FAILURE.format(error=refused.value)
    bubble = failure_bubble(refused.value, logged=True)
    assert "Companion can't write to its database" in str(bubble)
    assert "Something went wrong" not in str(bubble)
