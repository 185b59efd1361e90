"""One process's connections to the shared Postgres database, whatever event loop asks.

psycopg's ``AsyncConnectionPool`` belongs to the event loop that opened it. A Companion
process can run more than one loop over its life: ``companion`` reads the settings on a
short start-up loop before Gradio starts its own, and tests start one loop per test. So
``LoopPools`` keeps one pool per running loop, opened on first use (nothing connects
before a call needs a connection) and forgotten with its loop. It has the part of the
pool's interface ``memory.postgres.store.PgStore`` uses (``connection``, ``conninfo``,
``close``), so every person's store of a process shares it: N people cost at most
``max_size`` connections per loop, not N pools.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from psycopg import AsyncConnection, OperationalError
from psycopg.rows import TupleRow
from psycopg_pool import AsyncConnectionPool

from memory.errors import StoreUnavailable

MAX_SIZE = 10  # connections a process keeps at most (per loop)
CONNECT_SECONDS = 10


class LoopPools:
    """A connection pool per running event loop, over one database URL."""

    def __init__(self, url: str, *, max_size: int = MAX_SIZE) -> None:
        self.conninfo = url
        self.max_size = max_size
        self._pools: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, AsyncConnectionPool[AsyncConnection[TupleRow]]
        ] = weakref.WeakKeyDictionary()
        self._opening: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = (
            weakref.WeakKeyDictionary()
        )

    async def pool(self) -> AsyncConnectionPool[AsyncConnection[TupleRow]]:
        """The running loop's pool, opened (and its first connection made) on first use."""
        loop = asyncio.get_running_loop()
        pool = self._pools.get(loop)
        if pool is not None:
            return pool
        lock = self._opening.setdefault(loop, asyncio.Lock())
        async with lock:  # two first calls at once open one pool
            pool = self._pools.get(loop)
            if pool is None:
                await self._reachable()
                pool = AsyncConnectionPool(
                    self.conninfo,
                    min_size=1,
                    max_size=self.max_size,
                    open=False,
                    kwargs={"autocommit": True},
                )
                await pool.open(wait=True)
                self._pools[loop] = pool
        return pool

    async def _reachable(self) -> None:
        """One plain connection first: a database that is down or refuses the role is
        said at once, not after the pool's 30 s of retries (each logged)."""
        try:
            conn = await AsyncConnection.connect(self.conninfo, connect_timeout=CONNECT_SECONDS)
        except OperationalError as exc:
            raise StoreUnavailable(f"could not reach the Postgres database: {exc}") from exc
        await conn.close()

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[AsyncConnection[TupleRow]]:
        """A connection of the running loop's pool, given back when the block ends."""
        pool = await self.pool()
        async with pool.connection() as conn:
            yield conn

    async def close(self) -> None:
        """Close the running loop's pool (the next call opens a new one)."""
        pool = self._pools.pop(asyncio.get_running_loop(), None)
        if pool is not None:
            await pool.close()
