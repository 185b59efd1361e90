"""Where an eval case's store lives: a SQLite file in the case's home, or a person of a
shared Postgres database.

A backend opens one ``CaseStore`` per case run: the ``AsyncStore`` the graph and the
seeding use (through ``memory.open_store``, as the app does), on a ``CaseClock`` (each
seeded message's time while the history is written, then the case's "now"), and how the
case's database checks read rows after the turn (``memory.backends.check_rows``).
``SqliteBackend`` (the default) uses the case's temporary home; ``PostgresBackend`` makes
every case run a new person of one migrated database, whose rows stay after the run.
See docs/evals.md.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from config.settings import ConfigError
from evals.cases import Case
from graph.jobs import settle_embedding
from memory import AsyncStore, open_store, release_connections
from memory.backends import check_rows

SQLITE = "sqlite"
POSTGRES = "postgres"

RowReader = Callable[[str], Awaitable[list[list[Any]]]]


@dataclass
class CaseClock:
    """The store's clock during a case: ``now`` is whatever the case set it to."""

    now: datetime

    def __call__(self) -> datetime:
        return self.now


@dataclass(frozen=True)
class CaseStore:
    """One case run's store, and how its database checks read rows."""

    store: AsyncStore
    rows: RowReader  # a check's SELECT -> its rows (an error becomes one row holding it)


class Backend(Protocol):
    """Opens each case run's store, on one kind of database."""

    name: str  # "sqlite" | "postgres", as reports show it

    async def check(self) -> None:
        """Raise ConfigError, saying why, when the database cannot be used."""
        ...

    def open(
        self, case: Case, run: int, home: Path, clock: CaseClock
    ) -> AbstractAsyncContextManager[CaseStore]:
        """The case run's store, closed when the block ends."""
        ...

    async def close(self) -> None:
        """Release what the run held (the running loop's connections)."""
        ...


class SqliteBackend:
    """Each case run in a SQLite file of its own, in the case's home."""

    name = SQLITE

    async def check(self) -> None:
        """A SQLite file is always there to be made."""

    @asynccontextmanager
    async def open(
        self, case: Case, run: int, home: Path, clock: CaseClock
    ) -> AsyncIterator[CaseStore]:
        """The home's store; checks read its own connection."""
        store = open_store(home, None, clock=clock)

        async def rows(sql: str) -> list[list[Any]]:
            return await check_rows(store, sql, now=clock())

        try:
            yield CaseStore(store, rows)
        finally:
            await settle_embedding(store.location)  # the turns' last job, before it closes
            await store.close()

    async def close(self) -> None:
        """Nothing outlives a case on SQLite."""


class PostgresBackend:
    """Each case run a new person of one shared, migrated Postgres database."""

    name = POSTGRES

    def __init__(self, url: str) -> None:
        self.url = url
        self.token = uuid.uuid4().hex[:8]  # this run's people: eval-<token>-<case>-<repeat>

    def person(self, case: Case, run: int) -> str:
        """The person a case run is, unique to this run."""
        return f"eval-{self.token}-{case.id}-{run}"

    async def check(self) -> None:
        """Connect and read as a person: ConfigError when the server or schema is missing."""
        probe = open_store(Path("."), self.url, person=f"eval-{self.token}-probe")
        try:
            await probe.count_messages()
        except Exception as exc:  # whatever the database says: it cannot be used
            raise ConfigError(
                f"--database-url: cannot use the database ({type(exc).__name__}: {exc}); "
                "is the server up, and its schema made by `companion db migrate`?"
            ) from exc

    @asynccontextmanager
    async def open(
        self, case: Case, run: int, home: Path, clock: CaseClock
    ) -> AsyncIterator[CaseStore]:
        """The case run's person on the shared pools; checks run through its memory_sql."""
        store = open_store(home, self.url, person=self.person(case, run), clock=clock)

        async def rows(sql: str) -> list[list[Any]]:
            return await check_rows(store, sql, now=clock())

        try:
            yield CaseStore(store, rows)
        finally:
            await settle_embedding(store.location)  # the turns' last job, before it closes
            await store.close()

    async def close(self) -> None:
        """Close the running loop's connections."""
        await release_connections()


def backend_for(database_url: str | None) -> Backend:
    """SQLite without a URL, else that Postgres database."""
    return SqliteBackend() if database_url is None else PostgresBackend(database_url)
