"""Lexical recall on Postgres over the whole history (memory.postgres.lexical): the search
table finds a word said before the newest 20,000 messages, ranks by BM25, follows every
edit of the messages, and is filled for messages stored before it (the backfill)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta

import psycopg
import pytest

from memory.postgres import schema
from memory.postgres.store import PgStore
from tests.conftest import FIXED_NOW
from tests.memory.backends import new_person
from tests.support.postgres import PostgresServer

OLD = 20_500  # more than the newest 20,000 the search read before (and than DOC_BUDGET)


@pytest.fixture
async def store(postgres: PostgresServer) -> AsyncIterator[PgStore]:
    opened = await PgStore.open(postgres.url, new_person(), clock=lambda: FIXED_NOW)
    yield opened
    await opened.close()


async def _history(store: PgStore, first: str, count: int) -> None:
    """``first`` said a year ago, then ``count`` turns of notes about four places (one
    INSERT)."""
    start = FIXED_NOW - timedelta(days=365)
    async with store._transaction() as cursor:
        await cursor.execute(
            "INSERT INTO sessions (id, title, created_at) VALUES ('old', 'Old', %s)", (start,)
        )
        await cursor.execute(
            """INSERT INTO messages (session_id, role, content, created_at)
               VALUES ('old', 'user', %s, %s)""",
            (first, start),
        )
        await cursor.execute(
            """INSERT INTO messages (session_id, role, content, created_at)
               SELECT 'old', CASE WHEN g %% 2 = 0 THEN 'user' ELSE 'assistant' END,
                      'a note about the '
                      || (ARRAY['garden', 'kitchen', 'porch', 'attic'])[1 + g %% 4]
                      || ', number ' || g, %s + g * interval '1 minute'
               FROM generate_series(1, %s) g""",
            (start, count),
        )


async def _found(store: PgStore, query: str) -> list[str]:
    """The turns lexical recall shows for ``query``, best first."""
    recalled = await store.recall(
        query, now=FIXED_NOW, tz="UTC", session_id=None, question_id=None, mode="lexical"
    )
    return [turn.message.content for turn in recalled.turns]


async def test_a_word_said_before_the_newest_20000_messages_is_found(store: PgStore) -> None:
    said = "My grandmother's quokkaberry jam recipe uses lime"
    await _history(store, said, OLD)
    assert (await _found(store, "quokkaberry"))[:1] == [said]
    # Beside words of a quarter of the messages (past DOC_BUDGET: scored over the newest
    # only) and of every one (dropped, as on SQLite), the rare word still finds it first.
    assert (await _found(store, "the garden quokkaberry note"))[:1] == [said]
    gardens = await _found(store, "garden")
    assert gardens and all("garden" in found for found in gardens)


async def test_a_rare_word_outranks_a_common_one(store: PgStore) -> None:
    """BM25's inverse document frequency: ts_rank, which has none, put the short lines of
    the common word first."""
    session = await store.create_session()
    wanted = await store.add_message(
        session.id, "user", "Arisan di rumah Bu Dewi minggu depan, jam tujuh malam"
    )
    for n in range(12):
        await store.add_message(session.id, "user", f"Aku masak nasi {n}")
    assert (await _found(store, "arisan masak"))[:1] == [wanted.content]


async def test_a_query_is_cut_and_folded_as_the_stored_text(store: PgStore) -> None:
    session = await store.create_session()
    sheet = await store.add_message(session.id, "user", "It is in q4_budget_final.xlsx")
    cafe = await store.add_message(session.id, "assistant", "Meet at Café Batavia?")
    await store.add_message(session.id, "user", "The final budget talk is on Monday")
    assert (await _found(store, "where is q4_budget_final"))[:1] == [sheet.content]
    assert (await _found(store, "cafe"))[:1] == [cafe.content]
    assert (await _found(store, "CAFÉ"))[:1] == [cafe.content]


async def test_the_search_table_follows_every_edit(store: PgStore) -> None:
    session = await store.create_session()
    kept = await store.add_message(session.id, "user", "the wombat ate my sandwich")
    edited = await store.add_message(session.id, "assistant", "a platypus, surely")
    edit = f"UPDATE messages SET content = 'an echidna, surely' WHERE id = {edited.id}"
    assert await store.run_sql(edit, now=FIXED_NOW) == {"updated": 1}  # memory_sql's role
    assert await _found(store, "platypus") == []
    assert await _found(store, "echidna") == ["an echidna, surely"]
    await store.delete_messages_from(session.id, edited.id)
    assert await _found(store, "echidna") == []
    assert await _found(store, "wombat") == [kept.content]
    await store.delete_session(session.id)
    assert await _found(store, "wombat") == []
    async with store._transaction() as cursor:
        await cursor.execute("SELECT count(*) AS n FROM message_terms")
        assert await cursor.fetchone() == {"n": 0}
        await cursor.execute("SELECT sum(documents) AS n FROM message_term_totals")
        assert await cursor.fetchone() == {"n": 0}


def _terms(postgres: PostgresServer, person: str) -> tuple[list[tuple[object, ...]], object]:
    """The person's rows of the search table and their document total, as the superuser."""
    with psycopg.connect(postgres.admin_url) as conn:
        rows = conn.execute(
            """SELECT term, message_id, frequency, length FROM message_terms
               WHERE person = %s ORDER BY term, message_id""",
            (person,),
        ).fetchall()
        total = conn.execute(
            "SELECT sum(documents) FROM message_term_totals WHERE person = %s", (person,)
        ).fetchone()
    return rows, total


async def test_messages_stored_before_the_search_table_are_backfilled_resumably(
    store: PgStore, postgres: PostgresServer
) -> None:
    said = "The quokkaberry jam is in the blue cupboard"
    await _history(store, said, 50)
    indexed = _terms(postgres, store.person)
    with psycopg.connect(postgres.admin_url, autocommit=True) as conn:
        # As migration 8 leaves a database that had these messages: no terms, a mark.
        for table in ("message_terms", "message_term_totals"):
            conn.execute(f"DELETE FROM {table} WHERE person = %s", (store.person,))
        conn.execute(
            "INSERT INTO message_terms_backfill (person, below) VALUES (%s, %s)",
            (store.person, 2**62),
        )
    assert await _found(store, "quokkaberry") == []
    connecting = psycopg.AsyncConnection.connect(postgres.admin_url)
    async with await connecting as conn, conn.transaction():  # one batch, then it stops
        assert await schema._backfill_batch(conn, 20) == 20
    assert 0 < len(_terms(postgres, store.person)[0]) < len(indexed[0])
    assert await _found(store, "quokkaberry") == []  # the oldest waits for the next run
    await schema.backfill_terms(postgres.admin_url, batch=20)
    assert _terms(postgres, store.person) == indexed
    assert (await _found(store, "quokkaberry"))[:1] == [said]
    with psycopg.connect(postgres.admin_url) as conn:
        waiting = conn.execute("SELECT count(*) FROM message_terms_backfill").fetchone()
    assert waiting == (0,)
