"""The eval harness on Postgres: memory cases (English and Indonesian) run through the real
graph with every case run a new person of a real, migrated Postgres database, and pass
as they do on SQLite, with the same tool calls and answers. The scripted keyword policy
drives them: this tests the harness and the store, not a model."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from evals.backends import PostgresBackend, SqliteBackend
from evals.cases import Case, load_cases
from evals.fixtures import FixtureSuite
from evals.results import CaseRun
from evals.runner import ImageCache, run_case, run_from_cli
from memory import format_time, open_store
from memory.postgres.schema import migrate, prepare
from tests.support.policy import scripted_model
from tests.support.postgres import APP_ROLE, DATABASE, PostgresServer
from tools.registry import default_registry

# One recall case in each language (the Indonesian one across two other chats) and a
# memory write whose database check reads the person's rows through memory_sql.
CASE_IDS = ("mem-book-last-week-en", "mem-xs-ramen-id", "mem-remember-en")


@pytest.fixture(scope="module")
def postgres() -> Iterator[PostgresServer]:
    """One server for the module, migrated as `companion db migrate` does."""
    with PostgresServer() as server:
        asyncio.run(migrate(server.admin_url, APP_ROLE))
        asyncio.run(prepare(server.admin_url, app_role=APP_ROLE))
        yield server


@pytest.fixture(scope="module")
def cases() -> list[Case]:
    found = {c.id: c for c in load_cases(["memory"], known_tools=default_registry().names)}
    return [found[case_id] for case_id in CASE_IDS]


async def run_all(cases: list[Case], backend: SqliteBackend | PostgresBackend) -> list[CaseRun]:
    model = scripted_model("native")
    try:
        with FixtureSuite() as fixtures:
            images = ImageCache(fixtures)
            return [
                await run_case(case, model, fixtures, images, backend=backend) for case in cases
            ]
    finally:
        await backend.close()


async def test_memory_cases_pass_on_postgres_as_on_sqlite(
    postgres: PostgresServer, cases: list[Case]
) -> None:
    on_sqlite = await run_all(cases, SqliteBackend())
    backend = PostgresBackend(postgres.url)
    await backend.check()
    on_postgres = await run_all(cases, backend)
    assert {c.language for c in cases} == {"en", "id"}
    for lite, pg in zip(on_sqlite, on_postgres, strict=True):
        assert lite.passed, (lite.case.id, lite.reasons)
        assert pg.passed, (pg.case.id, pg.reasons)
        # the same tools with the same arguments; what recall found reads the same
        calls = [(c.name, c.args, c.ok) for c in pg.observation.calls]
        assert calls == [(c.name, c.args, c.ok) for c in lite.observation.calls]
        found = [c.result for c in pg.observation.calls if c.name == "memory_search"]
        assert found == [c.result for c in lite.observation.calls if c.name == "memory_search"]
        assert pg.observation.answer == lite.observation.answer
        assert pg.observation.db_rows == lite.observation.db_rows
    recall = {r.case.id: r.observation for r in on_postgres}
    assert "Menya Hokage" in recall["mem-xs-ramen-id"].calls[0].result
    assert recall["mem-remember-en"].db_rows == [[["rendang"]]]

    # Each case run was a person of its own, seeded at the history's own times.
    book = cases[0]
    store = open_store(Path("."), backend.url, person=backend.person(book, 1))
    stored = await store.messages(f"eval-{book.id}")
    assert [m.created_at for m in stored[: len(book.history)]] == [
        format_time(m.at) for m in book.history
    ]
    assert stored[len(book.history)].content == book.message
    assert stored[len(book.history)].created_at == format_time(book.now)
    nobody = open_store(Path("."), backend.url, person=backend.person(book, 2))
    assert await nobody.count_messages() == 0
    await backend.close()


def test_eval_refuses_a_database_without_the_schema(
    postgres: PostgresServer, tmp_path: Path
) -> None:
    """`companion eval --database-url` on a database no migration made: exit code 2."""
    bare = postgres.url.replace(f"/{DATABASE}", "/postgres")
    args = argparse.Namespace(
        suite=["memory"],
        eval_model="m",
        repeat=1,
        out=str(tmp_path / "out"),
        judge=False,
        base_url="http://127.0.0.1:9/v1",
        tool_mode=None,
        limit=1,
        database_url=bare,
    )
    assert run_from_cli(args, env={}) == 2
    assert not (tmp_path / "out").exists()
