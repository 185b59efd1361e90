"""memory_search on Postgres at scale: turn-level hybrid recall over pgvector, timed.

A throwaway server (tests/support/postgres.py) is loaded inside the database: ``--size``
messages of one person (chats of 20 over six months, small talk over a few foods and
places plus two of 50,000 rare words each; the oldest also says ``OLD_QUERY``, a word
said nowhere else) and a random unit vector of the bundled
embedder's model and dimension for every user/assistant message (random vectors are
HNSW's worst case: no real history is slower). The dimension's partial HNSW index is
built after the load; its build time is printed. Then p50/p95 over ``--queries`` runs
each:

- memory_search itself (the tool, as the app calls it: the query embedded by the bundled
  embedder, recall hybrid, the text formatted) for a common phrase, a rare word and a
  time window; on a database loaded before with another model (``--model``,
  ``--dimensions``) the query is still embedded by the bundled embedder, then searched
  with a random vector of that model and dimension;
- the query embedding alone, recall alone per mode (lexical, dense, hybrid), lexical
  recall of the oldest message's word (and whether it is found: lexical search covers
  the whole history since the search table, memory.postgres.lexical) and the nearest 50
  alone;
- last, storing one message (``add_message``, as a turn stores each of its two or more),
  the search table's triggers included.

    python -m bench.recall_postgres --size 100000
    python -m bench.recall_postgres --url postgresql://companion@…  # loaded before: no load
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

import numpy
import psycopg

from bench import quiet_environment

quiet_environment()

from config.settings import Settings  # noqa: E402
from memory.postgres import vectors as pg_vectors  # noqa: E402
from memory.postgres.schema import migrate  # noqa: E402
from memory.postgres.store import PgStore  # noqa: E402
from memory.types import RecallMode  # noqa: E402
from providers import open_embedder  # noqa: E402
from providers.embeddings import Embedder  # noqa: E402
from tests.support.postgres import APP_ROLE, PostgresServer  # noqa: E402
from tools.base import ToolContext  # noqa: E402
from tools.memory_search import memory_search  # noqa: E402

NOW = datetime(2026, 11, 25, 9, 30, tzinfo=UTC)
PERSON = "bench"
BURST = 20  # messages per chat
COMMON_QUERY = "nasi goreng recipe"
RARE_QUERY = "w31337"
WINDOW_QUERY = "what did I cook last Thursday"
OLD_QUERY = "quokkaberry"
_LINES = (
    "ARRAY['I cooked', 'we went to the market for', 'can we talk about',"
    " 'I am a bit tired of', 'thinking about making', 'remind me what I said about']"
)
_FOODS = "ARRAY['nasi goreng', 'ramen', 'lasagna', 'pho', 'tacos', 'curry', 'risotto', 'dumplings']"


class Probe:
    """The bundled embedder, timed as memory_search calls it, answering with a random
    unit vector of the database's model and dimension (its vectors are random too)."""

    def __init__(self, embedder: Embedder, model: str, dimensions: int) -> None:
        self.embedder, self.model, self.dimensions = embedder, model, dimensions
        vector = numpy.random.default_rng(1).standard_normal(dimensions).astype(numpy.float32)
        self.vector = vector / numpy.linalg.norm(vector)

    def query(self, text: str) -> numpy.ndarray:
        self.embedder.query(text)
        return self.vector


def load(server: PostgresServer, size: int, model: str, dimensions: int) -> float:
    """``size`` messages and their random vectors of ``model``, as the superuser; the
    HNSW build's seconds."""
    asyncio.run(migrate(server.admin_url, APP_ROLE))
    step = (NOW - datetime(2026, 5, 27, tzinfo=UTC)).total_seconds() / size
    with psycopg.connect(server.admin_url, autocommit=True) as conn:
        conn.execute(
            f"""INSERT INTO sessions (person, id, title, created_at)
                SELECT %s, 's' || g, 'chat ' || g, %s
                FROM generate_series(0, {size} / {BURST}) g""",
            (PERSON, NOW),
        )
        conn.execute(
            f"""INSERT INTO messages (person, session_id, role, content, created_at)
                SELECT %s, 's' || (g / {BURST}),
                       CASE WHEN g %% 2 = 0 THEN 'user' ELSE 'assistant' END,
                       CASE WHEN g = 0 THEN '{OLD_QUERY} jam, ' ELSE '' END
                         || ({_LINES})[1 + (g * 7) %% 6] || ' ' || ({_FOODS})[1 + (g * 13) %% 8]
                         || ' w' || (g::bigint * 7919) %% 50000
                         || ' w' || (g::bigint * 104729) %% 50000,
                       %s::timestamptz - interval '182 days' + g * %s * interval '1 second'
                FROM generate_series(0, {size} - 1) g""",
            (PERSON, NOW, step),
        )
        index = f"message_vectors_hnsw_{dimensions}"
        conn.execute(f"DROP INDEX IF EXISTS {index}")
        # Normal coordinates over their length: a uniform random direction.
        conn.execute(
            f"""INSERT INTO message_vectors (person, message_id, model, embedding)
                SELECT m.person, m.id, %s, (
                    SELECT array_agg(x / norm)::vector FROM (
                        SELECT x, sqrt(sum(x * x) OVER ()) AS norm FROM (
                            SELECT sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random())
                                   + 0 * m.id AS x
                            FROM generate_series(1, {dimensions})) coordinates) scaled)
                FROM messages m""",
            (model,),
        )
        conn.execute("VACUUM ANALYZE")
        conn.execute("SET maintenance_work_mem = '4GB'")
        started = time.perf_counter()
        conn.execute(
            f"""CREATE INDEX {index} ON message_vectors USING hnsw
                ((embedding::vector({dimensions})) vector_cosine_ops)
                WHERE dimensions = {dimensions}"""
        )
        return time.perf_counter() - started


async def percentiles(run: Callable[[], Awaitable[Any]], queries: int) -> tuple[float, float]:
    """p50/p95 in milliseconds of ``queries`` runs (after one unmeasured run)."""
    await run()
    samples = []
    for _ in range(queries):
        started = time.perf_counter()
        await run()
        samples.append((time.perf_counter() - started) * 1000)
    samples.sort()
    return statistics.median(samples), samples[min(len(samples) - 1, int(0.95 * len(samples)))]


async def measure(
    url: str, queries: int, probe: Probe, home: Path
) -> dict[str, tuple[float, float]]:
    """Every timed operation on the loaded database at ``url`` (the app role's), its
    vectors ``probe``'s model's."""
    model = probe.model
    store = await PgStore.open(url, PERSON, clock=lambda: NOW)
    try:
        async with store._transaction() as cursor:
            await cursor.execute(
                "SELECT id, session_id AS s FROM messages WHERE role = 'user' "
                "ORDER BY id DESC LIMIT 1"
            )
            row = await cursor.fetchone()
        assert row is not None, "the database holds no messages"
        question, session = int(row["id"]), str(row["s"])
        settings = Settings(home=home, timezone="UTC")
        ctx = ToolContext(
            settings, store, session, clock=lambda: NOW, user_message_id=question, embedder=probe
        )

        def tool(query: str) -> Callable[[], Awaitable[Any]]:
            return lambda: memory_search({"query": query}, ctx)

        def recall(mode: RecallMode, query: str = COMMON_QUERY) -> Callable[[], Awaitable[Any]]:
            return lambda: store.recall(
                query, now=NOW, tz="UTC", session_id=session, question_id=question,
                vector=probe.vector, vector_model=model, mode=mode,
            )  # fmt: skip

        async def store_message() -> Any:
            return await store.add_message(session, "user", "one more note about ramen w7")

        oldest = await recall("lexical", OLD_QUERY)()
        found = any(OLD_QUERY in turn.message.content for turn in oldest.turns)
        print(f"the oldest message's word ({OLD_QUERY}): {'found' if found else 'NOT found'}")

        async def nearest() -> Any:
            async with store._transaction() as cursor:
                return await pg_vectors.nearest(cursor, model, probe.vector, (0, question - 1), 50)

        async def embed() -> Any:
            return probe.embedder.query(COMMON_QUERY)

        return {
            "memory_search hybrid, common phrase": await percentiles(tool(COMMON_QUERY), queries),
            "memory_search hybrid, rare word": await percentiles(tool(RARE_QUERY), queries),
            "memory_search hybrid, time window": await percentiles(tool(WINDOW_QUERY), queries),
            "query embedding alone": await percentiles(embed, queries),
            "recall lexical": await percentiles(recall("lexical"), queries),
            "recall dense": await percentiles(recall("dense"), queries),
            "recall hybrid": await percentiles(recall("hybrid"), queries),
            "recall lexical, the oldest message's word": await percentiles(
                recall("lexical", OLD_QUERY), queries
            ),
            "nearest 50 alone": await percentiles(nearest, queries),
            "add_message (storing one message)": await percentiles(store_message, queries),
        }
    finally:
        await store.close()


def table(figures: dict[str, tuple[float, float]]) -> str:
    rows = [f"| {name} | {p50:.1f} | {p95:.1f} |" for name, (p50, p95) in figures.items()]
    return "\n".join(["| operation | p50 ms | p95 ms |", "|---|---:|---:|", *rows])


def run(
    size: int,
    queries: int,
    url: str | None = None,
    model: str | None = None,
    dimensions: int | None = None,
) -> dict[str, tuple[float, float]]:
    """Load ``size`` messages into a new server (unless ``url`` names a loaded database,
    its vectors ``model``'s of ``dimensions``; the bundled embedder's by default) and time
    every operation."""
    with TemporaryDirectory() as home:
        embedder = open_embedder(Settings(home=Path(home)))
        assert embedder is not None, "the bundled embedder is off"
        probe = Probe(embedder, model or embedder.model, dimensions or embedder.dimensions)
        if url is not None:
            return asyncio.run(measure(url, queries, probe, Path(home)))
        with PostgresServer() as server:
            started = time.perf_counter()
            build = load(server, size, probe.model, probe.dimensions)
            print(f"loaded {size:,} messages in {time.perf_counter() - started:.0f} s "
                  f"(HNSW build {build:.0f} s)", flush=True)  # fmt: skip
            return asyncio.run(measure(server.url, queries, probe, Path(home)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000, help="messages to load")
    parser.add_argument("--queries", type=int, default=50, help="timed runs per operation")
    parser.add_argument("--url", help="the app role's URL of a database loaded before")
    parser.add_argument("--model", help="--url's vectors' model (default: the bundled)")
    parser.add_argument("--dimensions", type=int, help="--url's vectors' dimension")
    args = parser.parse_args()
    print(table(run(args.size, args.queries, args.url, args.model, args.dimensions)))


if __name__ == "__main__":
    main()
