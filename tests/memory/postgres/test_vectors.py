"""The vector index on Postgres (pgvector): each person's vectors are theirs alone (and
so is every turn recall returns, dense or lexical), memory_sql cannot read them, an
indexed dimension is searched through its HNSW index, and a database without pgvector
migrates, answers and recalls lexically, with no error."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from pathlib import Path

import numpy
import psycopg
import pytest
from psycopg import errors

from app.doctor import PGVECTOR_MISSING, Check, postgres
from config.settings import Settings
from memory import Message, RecallMode, Recollection
from memory.postgres.schema import INDEXED_DIMENSIONS, VECTORS, migrate
from memory.postgres.sql_guard import SQL_ROLE
from memory.postgres.store import PgStore
from memory.postgres.vectors import literal, nearest_query
from tests.conftest import FIXED_NOW
from tests.memory.backends import new_person, ticking
from tests.support.pg_people import migrate_as_owner
from tests.support.postgres import APP_ROLE, PostgresServer

MODEL = "test:unit"


def unit(seed: int, dimensions: int = 384) -> numpy.ndarray:
    vector = numpy.random.default_rng(seed).standard_normal(dimensions).astype(numpy.float32)
    return vector / numpy.linalg.norm(vector)


async def embedded(store: PgStore, text: str, vector: numpy.ndarray | None = None) -> Message:
    """A user message of ``store``'s person, with a vector of MODEL (``unit(1)`` unless
    given)."""
    said = await store.add_message("s", "user", text)
    await store.add_vectors(MODEL, [(said.id, unit(1) if vector is None else vector)])
    return said


async def ask(
    store: PgStore,
    query: str,
    vector: numpy.ndarray,
    *,
    mode: RecallMode = "hybrid",
    question_id: int | None = None,
) -> Recollection:
    """``store``'s recall of ``query`` with a query vector of MODEL, from chat "s"."""
    return await store.recall(
        query, now=FIXED_NOW, tz="UTC", session_id="s", question_id=question_id,
        vector=vector, vector_model=MODEL, mode=mode,
    )  # fmt: skip


@pytest.fixture
async def stores(postgres: PostgresServer) -> AsyncIterator[tuple[PgStore, PgStore]]:
    """Ann's and bob's stores on the module's server (with pgvector)."""
    ann = await PgStore.open(postgres.url, new_person(), clock=ticking())
    bob = await PgStore.open(postgres.url, new_person(), clock=ticking())
    yield ann, bob
    await ann.close()
    await bob.close()


async def test_each_person_embeds_counts_and_drops_only_their_own_messages(
    stores: tuple[PgStore, PgStore],
) -> None:
    ann, bob = stores
    said = await ann.add_message("s", "user", "my cat hides under the bed")
    answered = await ann.add_message("s", "assistant", "Poor thing!")
    await ann.add_message("s", "memory_tool", "not a turn")
    bobs = await bob.add_message("s", "user", "bob's own words")

    assert await ann.unembedded(MODEL, 10) == [
        (said.id, said.content),
        (answered.id, "Poor thing!"),
    ]
    assert await bob.unembedded(MODEL, 10) == [(bobs.id, bobs.content)]
    await ann.add_vectors(MODEL, [(said.id, unit(1)), (answered.id, unit(2)), (bobs.id, unit(3))])
    await ann.add_vectors(MODEL, [(said.id, unit(4))])  # again: replaced, not doubled
    # Bob's writes to ann's ids are skipped; his drop leaves hers.
    await bob.add_vectors(MODEL, [(said.id, unit(5))])
    assert await bob.drop_vectors(None) == 0

    assert await ann.vector_status(MODEL) == (2, 2)
    assert await ann.unembedded(MODEL, 10) == []
    gap = await ann.add_message("s", "assistant", "a gap")
    later = await ann.add_message("s", "user", "a later word")
    await ann.add_vectors(MODEL, [(later.id, unit(6))])  # newer than the gap
    assert await ann.unembedded(MODEL, 10) == [(gap.id, "a gap")]
    await ann.add_vectors(MODEL, [(gap.id, unit(9))])
    newest = await ann.add_message("s", "user", "newest")
    assert await ann.unembedded(MODEL, 10) == [(newest.id, "newest")]
    await ann.add_vectors(MODEL, [(newest.id, unit(10))])
    assert await bob.vector_status(MODEL) == (0, 1)
    assert await bob.unembedded(MODEL, 10) == [(bobs.id, bobs.content)]
    assert await ann.vector_status("other:model") == (0, 5)
    assert await ann.drop_vectors(except_model=MODEL) == 0
    assert await ann.drop_vectors(except_model="other:model") == 5
    assert await ann.vector_status(MODEL) == (0, 5)


async def test_a_deleted_message_takes_its_vector_along(
    stores: tuple[PgStore, PgStore], postgres: PostgresServer
) -> None:
    ann, _ = stores
    kept = await ann.add_message("s", "user", "kept")
    gone = await ann.add_message("s", "user", "gone")
    await ann.add_vectors(MODEL, [(kept.id, unit(1)), (gone.id, unit(2))])
    assert await ann.delete_messages_from("s", gone.id) == 1
    await ann.add_vectors(MODEL, [(gone.id, unit(3))])  # its message is gone: skipped
    assert await ann.vector_status(MODEL) == (1, 1)
    with psycopg.connect(postgres.admin_url) as conn:
        rows = conn.execute(f"SELECT message_id FROM {VECTORS} WHERE person = %s", (ann.person,))
        assert rows.fetchall() == [(kept.id,)]


@pytest.mark.parametrize("dimensions", [512, 64])  # through the HNSW index, and exact
async def test_recall_never_returns_another_persons_turns(
    stores: tuple[PgStore, PgStore], dimensions: int
) -> None:
    ann, bob = stores
    meaning = unit(7, dimensions)
    secret = await embedded(ann, "Mochi hides whenever I vacuum", meaning)
    own = await embedded(bob, "I vacuum on Sundays", unit(8, dimensions))
    asked = await bob.add_message("s", "user", "what is my cat scared of?")

    for mode in ("hybrid", "dense", "lexical"):
        # ann's own vector: the nearest in the whole index
        found = await ask(bob, "Mochi vacuum", meaning, mode=mode, question_id=asked.id)
        assert [turn.message.id for turn in found.turns] == [own.id], mode
    mine = await ask(ann, "pet", meaning)
    assert [turn.message.id for turn in mine.turns] == [secret.id]
    assert mine.searched == "hybrid"


async def test_memory_sql_cannot_read_the_vectors(
    stores: tuple[PgStore, PgStore], postgres: PostgresServer
) -> None:
    ann, _ = stores
    await embedded(ann, "a private thought")

    refused = await ann.run_sql(f"SELECT * FROM {VECTORS}", now=FIXED_NOW)
    assert "error" in refused and VECTORS in refused["error"]
    login = psycopg.connect(postgres.url_as(SQL_ROLE))
    with login as conn, pytest.raises(errors.InsufficientPrivilege, match="permission denied"):
        conn.execute(f"SELECT * FROM {VECTORS}")
    with psycopg.connect(postgres.admin_url) as conn:
        granted = conn.execute(
            """SELECT p FROM unnest(ARRAY['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'TRUNCATE',
                                          'REFERENCES', 'TRIGGER']) p
               WHERE has_table_privilege(%s, %s, p)""",
            (SQL_ROLE, VECTORS),
        ).fetchall()
    assert granted == []


async def test_an_indexed_dimension_is_searched_through_its_hnsw_index(
    stores: tuple[PgStore, PgStore], postgres: PostgresServer
) -> None:
    ann, _ = stores
    said = await embedded(ann, "words")
    async with await psycopg.AsyncConnection.connect(postgres.url) as conn:
        await conn.execute("SELECT set_config('app.person', %s, true)", (ann.person,))
        # A tiny table: the planner would sort the person's few rows (as it should).
        await conn.execute("SET LOCAL enable_sort = off")
        for dimensions in (*INDEXED_DIMENSIONS, 64):
            params = {"query": literal(unit(2, dimensions)), "model": MODEL}
            params |= {"low": 0, "high": said.id, "limit": 5}
            cursor = await conn.execute(
                b"EXPLAIN " + nearest_query(dimensions).as_bytes(conn), params
            )
            plan = "\n".join(row[0] for row in await cursor.fetchall())
            if dimensions in INDEXED_DIMENSIONS:
                assert f"Index Scan using message_vectors_hnsw_{dimensions} " in plan
            else:
                assert "hnsw" not in plan


def _doctor_lines(server: PostgresServer, home: Path) -> list[Check]:
    return list(postgres(server.url, Settings(home=home)))


def test_without_pgvector_migrate_and_the_index_answer_with_no_error(tmp_path: Path) -> None:
    with PostgresServer(vector=False) as server:
        report = migrate_as_owner(server)  # the owner may not create pgvector: a note
        assert report.problems == ()
        with psycopg.connect(server.admin_url) as conn:
            assert conn.execute("SELECT to_regclass(%s)", (VECTORS,)).fetchone() == (None,)

        async def use() -> None:
            store = await PgStore.open(server.url, "ann")
            said = await store.add_message("s", "user", "my cat hides when I vacuum")
            assert await store.unembedded(MODEL, 10) == []
            await store.add_vectors(MODEL, [(said.id, unit(1))])
            assert await store.vector_status(MODEL) == (0, 1)
            assert await store.drop_vectors(None) == 0
            assert await store.vector_index() is None
            found = await ask(store, "vacuum", unit(1))
            assert [turn.message for turn in found.turns] == [said]
            assert found.searched == "lexical"
            await store.close()

        asyncio.run(use())
        doctor = _doctor_lines(server, tmp_path)
        assert [(c.status, c.name) for c in doctor] == [("ok", "database"), ("info", "pgvector")]
        assert doctor[1].detail == PGVECTOR_MISSING

        # An admin adds the extension later: the next migrate makes the index.
        with psycopg.connect(server.admin_url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION vector")
        asyncio.run(migrate(server.owner_url, APP_ROLE))
        doctor = _doctor_lines(server, tmp_path)
        assert (doctor[1].status, doctor[1].name) == ("ok", "pgvector")
        assert re.fullmatch(r"\d+\.\d+\.\d+: hybrid recall.*", doctor[1].detail)
