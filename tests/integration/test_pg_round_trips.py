"""A Postgres store call in one round trip (issue 27), counted on the wire by
``bench.round_trips.WireCounter`` in front of a real server: the turn's calls, the
person set in the same trip and still alone with their rows, a failing batch rolled back
as a whole, and the bench at a small size."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from bench import round_trips
from bench.round_trips import WireCounter
from memory.postgres.store import PgStore
from tests.support.pg_people import migrated_postgres
from tests.support.postgres import PostgresServer

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def server() -> Iterator[PostgresServer]:
    with migrated_postgres() as running:
        yield running


@pytest.fixture(scope="module")
def counter(server: PostgresServer) -> Iterator[WireCounter]:
    proxy = WireCounter(server.port)
    yield proxy
    proxy.close()


async def trips(counter: WireCounter, call: Callable[[], Awaitable[Any]]) -> tuple[int, Any]:
    """The round trips ``call`` takes, and what it gave."""
    before = counter.counts().round_trips
    result = await call()
    return counter.counts().round_trips - before, result


def test_a_turns_calls_take_one_round_trip_each(
    server: PostgresServer, counter: WireCounter
) -> None:
    async def run() -> dict[str, tuple[int, int]]:
        store = await PgStore.open(counter.url(server.url), "trips")
        try:
            await store.create_memory("identity", "cat", "Miso")
            asked = await store.add_message("s", "user", "hello")
            calls: dict[str, Callable[[], Awaitable[Any]]] = {
                "add_message": lambda: store.add_message("s", "assistant", "hi"),
                "read_turn": lambda: store.read_turn("s", asked.id, history=10, now=NOW),
                "memory_gates": lambda: store.memory_gates(asked.id),
                "save_trace": lambda: store.save_trace(asked.id, {"entries": []}),
                "refresh_segments": lambda: store.refresh_segments(
                    "s", None, force=False, tz="UTC"
                ),
                "set_pinned": lambda: store.set_pinned("s", True),  # a general transaction
            }
            counted: dict[str, tuple[int, int]] = {}
            for name, call in calls.items():
                store.pipeline = False
                before, _ = await trips(counter, call)
                store.pipeline = True
                after, _ = await trips(counter, call)
                counted[name] = (before, after)
            reads = await store.read_turn("s", asked.id, history=10, now=NOW)
            assert [m.content for m in reads.history] == ["hello"]
            assert [m.content for m in reads.turn] == ["hi", "hi"]
            assert [m.value for m in reads.memories] == ["Miso"]
            return counted
        finally:
            await store.close()

    counted = asyncio.run(run())
    # Before: BEGIN, the person, each statement and COMMIT, a round trip each.
    assert counted["read_turn"] == (8, 1)  # with the memory tools' gates
    assert counted["memory_gates"] == (4, 1)  # the four tools' gates
    assert counted["save_trace"][1] == 1 and counted["save_trace"][0] >= 4
    assert counted["add_message"] == (4, 1)  # BEGIN, the person, one INSERT, COMMIT
    assert counted["refresh_segments"][1] == 1 and counted["refresh_segments"][0] >= 4
    # A transaction that reads between its statements: BEGIN and the person in one trip.
    assert counted["set_pinned"] == (4, 3)


def test_a_batch_sends_no_begin_or_commit_its_transaction_is_the_pipelines(
    server: PostgresServer, counter: WireCounter
) -> None:
    async def run() -> tuple[int, int]:
        store = await PgStore.open(counter.url(server.url), "implicit")
        try:
            await store.add_message("s", "user", "warm the pool")
            before = counter.counts().statements
            stored = await store.add_message("new-chat", "user", "hello")  # a new session too
            sent = counter.counts().statements - before
            assert (await store.get_session("new-chat")) is not None
            assert [m.id for m in await store.messages("new-chat")] == [stored.id]
            before = counter.counts().statements
            await store.read_turn("s", 0, history=10, now=NOW)
            return sent, counter.counts().statements - before
        finally:
            await store.close()

    # The person and the statement(s): no BEGIN, no COMMIT (before: 5, and 7 without
    # the memory tools' gates, which read_turn reads with the history since).
    assert asyncio.run(run()) == (2, 6)


def test_a_batch_holds_at_most_one_statement_that_writes(server: PostgresServer) -> None:
    async def run() -> None:
        store = await PgStore.open(server.url, "two-writes")
        try:
            with pytest.raises(ValueError, match="at most one statement that writes"):
                await store._batch(
                    ("INSERT INTO sessions (id, title, created_at) VALUES ('a', 't', now())", ()),
                    ("  with gone AS (DELETE FROM sessions) SELECT 1", ()),
                )
            assert await store.get_session("a") is None  # refused before anything was sent
        finally:
            await store.close()

    asyncio.run(run())


def test_the_person_set_in_the_same_trip_sees_only_their_rows(server: PostgresServer) -> None:
    async def run() -> None:
        alice = await PgStore.open(server.url, "alice-trips")
        bob = PgStore.for_person(alice.pool, "bob-trips")
        try:
            asked = await alice.add_message("shared-id", "user", "alice's secret")
            await alice.create_memory("identity", "dog", "Rex")
            seen = await bob.read_turn("shared-id", 0, history=10, now=NOW)
            assert (seen.turn, seen.history, seen.memories) == ([], [], [])
            assert await bob.messages("shared-id") == []
            assert not await bob.has_history(asked.id + 1)
            mine = await bob.add_message("shared-id", "user", "bob's own")
            assert [m.content for m in await alice.messages("shared-id")] == ["alice's secret"]
            assert [m.id for m in await bob.messages("shared-id")] == [mine.id]
            # The setting is local to each call's transaction: a pooled connection keeps none.
            async with alice.pool.connection() as conn:
                cursor = await conn.execute("SELECT current_setting('app.person', true)")
                assert (await cursor.fetchone()) in [("",), (None,)]
        finally:
            await alice.close()

    asyncio.run(run())


def test_a_failing_batch_writes_nothing_and_the_connection_is_clean(
    server: PostgresServer, caplog: pytest.LogCaptureFixture
) -> None:
    async def run() -> None:
        store = await PgStore.open(server.url, "failing-batch")
        try:
            with pytest.raises(Exception, match="division by zero"):
                await store._batch(
                    ("INSERT INTO sessions (id, title, created_at) VALUES ('x', 't', now())", ()),
                    ("SELECT 1 / 0", ()),
                )
            # A failure that reaches psycopg while the batch is still being sent (many
            # statements after it) is raised once: psycopg logs no second error from the
            # pipeline's end (`companion doctor` on a database never migrated printed it).
            with pytest.raises(Exception, match="no_such_table"):
                await store._batch(("SELECT * FROM no_such_table", ()), *[("SELECT 1", ())] * 2000)
            assert "error ignored terminating" not in caplog.text
            assert await store.get_session("x") is None
            assert await store.has_history() is False
            async with store.pool.connection() as conn:
                assert conn.pgconn.transaction_status == 0  # idle, not left in a transaction
        finally:
            await store.close()

    asyncio.run(run())


def test_the_bench_measures_every_store(capsys: pytest.CaptureFixture[str]) -> None:
    runs = round_trips.main(["--turns", "2", "--rounds", "1", "--warm", "1"])
    assert set(runs) == set(round_trips.VARIANTS)
    for figures in runs.values():
        assert figures.errors == [] and figures.turns == 2 and figures.cpu > 0
    assert runs["sqlite"].round_trips == 0
    assert 0 < runs["postgres"].round_trips < runs["postgres, before"].round_trips
    assert "| postgres, before | 2 |" in capsys.readouterr().out
