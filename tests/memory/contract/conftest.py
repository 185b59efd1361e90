"""The store fixture of the contract tests: one ``AsyncStore`` per test, on SQLite (a
fresh home) and on Postgres (a fresh person of the module's migrated server)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from memory import AsyncStore
from memory.postgres.store import PgStore
from memory.sqlite.async_store import AsyncSqliteStore
from memory.sqlite.store import SqliteStore
from tests.memory.backends import new_person, ticking
from tests.support.postgres import PostgresServer


@pytest.fixture(params=["sqlite", "postgres"])
async def store(
    request: pytest.FixtureRequest, tmp_path: Path, postgres: PostgresServer
) -> AsyncIterator[AsyncStore]:
    opened: AsyncStore
    if request.param == "sqlite":
        opened = AsyncSqliteStore(SqliteStore.open_home(tmp_path / "home", clock=ticking()))
    else:
        opened = await PgStore.open(postgres.url, new_person(), clock=ticking())
    yield opened
    await opened.close()
