"""Forget a person on Postgres (``AsyncStore.delete_everything``): every row of theirs,
in every table that holds a person's data, in one transaction.

Row-level security shows the transaction only the person's rows, so each ``DELETE``
without a ``WHERE`` takes theirs and nobody else's. The vectors (where the database has
pgvector) and the journal's entries also go with their rows. A deleted row's old version
stays in the table's pages until autovacuum reclaims them; no query, memory_sql's
included, sees it.
"""

from __future__ import annotations

from psycopg import AsyncCursor
from psycopg.rows import DictRow

from memory.postgres import vectors as pg_vectors
from memory.postgres.schema import APP_TABLES, VECTORS

# Children before their parents (``APP_TABLES`` names every table that is a person's).
_ORDER = (
    "answer_traces",
    "answer_feedback",
    "chat_imports",
    "running_turns",
    "segments",
    "messages",
    "sessions",
)
PERSON_TABLES = _ORDER + tuple(table for table in APP_TABLES if table not in _ORDER)


async def delete_everything(cursor: AsyncCursor[DictRow]) -> dict[str, int]:
    """Delete every row the transaction's person has; the rows deleted per table."""
    deleted: dict[str, int] = {}
    tables = (VECTORS, *PERSON_TABLES) if await pg_vectors.available(cursor) else PERSON_TABLES
    for table in tables:
        await cursor.execute(f"DELETE FROM {table}")  # row security: the person's rows
        deleted[table] = cursor.rowcount
    return deleted
