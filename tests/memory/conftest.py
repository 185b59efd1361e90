"""A migrated Postgres server per test module, for the contract tests and the
Postgres-only ones (a module may start its own instead)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from memory.postgres.schema import migrate, prepare
from tests.support.postgres import APP_ROLE, PostgresServer


@pytest.fixture(scope="module")
def postgres() -> Iterator[PostgresServer]:
    """One server for the module, migrated once; each test is a new person on it."""
    with PostgresServer() as server:
        asyncio.run(migrate(server.admin_url, APP_ROLE))
        asyncio.run(prepare(server.admin_url))
        yield server
