"""Which store a person gets: the SQLite file of a home, or their rows of a shared
Postgres database. Callers resolve the home and the URL from configuration
(``graph.setup.open_store``); this module only opens.

A process keeps one ``memory.pg_pool.LoopPools`` per database URL, shared by every
person's ``PgStore``: connections are a process's, not a person's. psycopg is the
``postgres`` extra, so it is imported only when a URL is given.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from memory.async_store import AsyncSqliteStore, AsyncStore
from memory.store import Store

if TYPE_CHECKING:
    from memory.pg_pool import LoopPools

# The person of a Companion on Postgres without accounts, and of its first account: the
# rows from before accounts stay theirs, as the home's own SQLite file does.
OWNER = "owner"
_DATABASES: dict[str, LoopPools] = {}  # one set of pools per database URL in a process


def open_store(home: Path, url: str | None, *, person: str = OWNER) -> AsyncStore:
    """``person``'s store: the SQLite file of ``home`` when ``url`` is None, else their
    rows of the Postgres database at ``url``, with their images in ``home``/media."""
    if url is None:
        return AsyncSqliteStore(Store.open_home(home))
    from memory.pg_pool import LoopPools
    from memory.pg_store import PgStore

    pools = _DATABASES.get(url) or _DATABASES.setdefault(url, LoopPools(url))
    return PgStore.for_person(pools, person, media_dir=home / "media")


async def release_connections() -> None:
    """Close the running loop's Postgres connections (``companion`` reads its settings on
    a start-up loop before Gradio starts its own: that loop's pool must not linger)."""
    for pools in _DATABASES.values():
        await pools.close()
