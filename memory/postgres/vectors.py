"""The vector index on Postgres: each user/assistant message's embedding, and nearest search.

``message_vectors`` (memory.postgres.schema's ``VECTOR_SCHEMA``, made where the database
has pgvector) keeps one vector per message and embedding model, under the person's
row-level security like every row. Where the table is missing (no pgvector) the index is
empty: nothing to embed, nothing found, recall lexical. Nearest search orders by cosine
distance on the column cast to the query's dimension, so a model of an indexed dimension
(``INDEXED_DIMENSIONS``) is searched through its HNSW index, and pgvector's iterative
scan keeps reading it while row security (the person) and the filters (model, ids) drop
rows; any other dimension is scanned exactly. Each function runs in the caller's
transaction (``Cursor``), already scoped to one person. Design: docs/postgres.md.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy
from psycopg import AsyncCursor, sql
from psycopg.rows import DictRow

from memory.postgres.schema import INDEXED_DIMENSIONS, VECTORS

Cursor = AsyncCursor[DictRow]

_ROLES = "m.role IN ('user', 'assistant')"
# HNSW candidates a search looks at first. From pgvector 0.8 on it reads on
# (iteratively) while row security and the filters drop rows, up to pgvector's
# hnsw.max_scan_tuples; before 0.8 the scan ends there, so a person whose vectors are a
# small share of a shared index can get fewer than asked (a bigger ef_search costs too
# much: 1000 took 89 ms at 20,000 vectors against 16 ms for 100).
EF_SEARCH = 100
ITERATIVE_SCAN = (0, 8)  # the first pgvector version with hnsw.iterative_scan


def literal(vector: numpy.ndarray) -> str:
    """``vector`` in pgvector's text form: ``[x1,x2,…]``."""
    values = numpy.asarray(vector, dtype=numpy.float32).ravel()
    return "[" + ",".join(map(repr, values.tolist())) + "]"


async def index_version(cursor: Cursor) -> tuple[int, ...] | None:
    """pgvector's version when this database has the vector index (the extension and
    ``message_vectors``), else None."""
    await cursor.execute(
        """SELECT extversion FROM pg_extension
           WHERE extname = 'vector' AND to_regclass(%s) IS NOT NULL""",
        (f"public.{VECTORS}",),
    )
    row = await cursor.fetchone()
    if row is None:
        return None
    return tuple(int(part) for part in str(row["extversion"]).split(".") if part.isdigit())


async def available(cursor: Cursor) -> bool:
    """Whether this database has the vector index."""
    return await index_version(cursor) is not None


async def unembedded(cursor: Cursor, model: str, limit: int) -> list[tuple[int, str]]:
    """(id, text) of up to ``limit`` user/assistant messages with no vector of ``model``,
    oldest first; none without the index (nothing would keep their vectors).

    The background job asks after every turn, so the usual answers are cheap: nothing
    missing (the counts agree), or only messages newer than the newest vector (read by
    index). Only a gap below it (a message committed late, a failed batch) reads every
    message against every vector (2.5 s at a million)."""
    if not await available(cursor):
        return []
    done, total = await vector_status(cursor, model)
    if done >= total:
        return []
    await cursor.execute(
        f"""SELECT COALESCE(MAX(message_id), 0) AS newest FROM {VECTORS} WHERE model = %s""",
        (model,),
    )
    row = await cursor.fetchone()
    newest = int(row["newest"]) if row else 0
    await cursor.execute(
        f"SELECT COUNT(*) AS newer FROM messages m WHERE m.id > %s AND {_ROLES}", (newest,)
    )
    row = await cursor.fetchone()
    params: list[object]
    if row is not None and int(row["newer"]) == total - done:  # no gap below the newest
        where, params = "m.id > %s", [newest]
    else:
        where = f"NOT EXISTS (SELECT 1 FROM {VECTORS} v WHERE v.model = %s AND v.message_id = m.id)"
        params = [model]
    await cursor.execute(
        f"""SELECT m.id, m.content FROM messages m WHERE {_ROLES} AND {where}
            ORDER BY m.id LIMIT %s""",
        [*params, limit],
    )
    return [(int(row["id"]), str(row["content"])) for row in await cursor.fetchall()]


async def add_vectors(
    cursor: Cursor, model: str, rows: Sequence[tuple[int, numpy.ndarray]]
) -> None:
    """Keep each message's vector for ``model`` (replacing one it had); a message that is
    gone, or not this person's, is skipped. Nothing without the index."""
    if not rows or not await available(cursor):
        return
    ids = [int(message_id) for message_id, _ in rows]
    texts = [literal(vector) for _, vector in rows]
    await cursor.execute(
        f"""INSERT INTO {VECTORS} (message_id, model, embedding)
            SELECT m.id, %s, given.embedding::vector
            FROM unnest(%s::bigint[], %s::text[]) AS given (id, embedding)
            JOIN messages m ON m.id = given.id AND {_ROLES}
            ON CONFLICT (person, model, message_id)
            DO UPDATE SET embedding = EXCLUDED.embedding""",
        (model, ids, texts),
    )


async def vector_status(cursor: Cursor, model: str) -> tuple[int, int]:
    """(messages with a vector of ``model``, user/assistant messages in all)."""
    await cursor.execute(f"SELECT COUNT(*) AS total FROM messages m WHERE {_ROLES}")
    row = await cursor.fetchone()
    total = int(row["total"]) if row else 0
    if not await available(cursor):
        return 0, total
    await cursor.execute(f"SELECT COUNT(*) AS done FROM {VECTORS} WHERE model = %s", (model,))
    row = await cursor.fetchone()
    return (int(row["done"]) if row else 0), total


async def drop_vectors(cursor: Cursor, except_model: str | None) -> int:
    """Forget every model's vectors but ``except_model``'s (None: all); how many went."""
    if not await available(cursor):
        return 0
    await cursor.execute(
        f"DELETE FROM {VECTORS} WHERE model IS DISTINCT FROM %s::text", (except_model,)
    )
    return cursor.rowcount


def nearest_query(dimensions: int) -> sql.Composed:
    """The nearest search for a query of ``dimensions``: the cast and the predicate name
    the dimension as a constant, so the planner matches that dimension's partial HNSW
    index (when there is one). Parameters: query, model, low, high, limit."""
    cast = sql.SQL("vector({})").format(sql.Literal(dimensions))
    distance = sql.SQL("v.embedding::{cast} <=> %(query)s::{cast}").format(cast=cast)
    return sql.SQL(
        """SELECT ranked.message_id, 1 - ranked.distance AS cosine FROM (
               SELECT v.message_id, {distance} AS distance FROM {table} v
               WHERE v.model = %(model)s AND v.dimensions = {dimensions}
                 AND v.message_id BETWEEN %(low)s AND %(high)s
               ORDER BY {distance} LIMIT %(limit)s) ranked
           ORDER BY ranked.distance, ranked.message_id"""
    ).format(distance=distance, table=sql.Identifier(VECTORS), dimensions=sql.Literal(dimensions))


async def nearest(
    cursor: Cursor, model: str, query: numpy.ndarray, ids: tuple[int, int], limit: int
) -> list[tuple[int, float]]:
    """(message id, cosine) of up to ``limit`` messages with ids in [low, high] (``ids``)
    nearest ``query`` under ``model``, best first; none without the index."""
    version = await index_version(cursor)
    if version is None:
        return []
    dimensions = int(numpy.asarray(query).size)
    if dimensions in INDEXED_DIMENSIONS:
        ef_search = str(max(EF_SEARCH, limit))
        await cursor.execute("SELECT set_config('hnsw.ef_search', %s, true)", (ef_search,))
        if version >= ITERATIVE_SCAN:
            await cursor.execute("SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true)")
    # Never a prepared (generic) plan: planned without the ids' range, it scanned and
    # sorted every one of the person's vectors (220 ms at 100k) instead of the index.
    await cursor.execute(
        nearest_query(dimensions),
        {"query": literal(query), "model": model, "low": ids[0], "high": ids[1], "limit": limit},
        prepare=False,
    )
    return [(int(row["message_id"]), float(row["cosine"])) for row in await cursor.fetchall()]
