"""The real ``companion forget --all`` and ``companion user delete NAME``: each asks first
(a typed answer, or --yes), then nothing of the person is left in the home's files (the
databases, their logs and the media folder) or, on Postgres, in any table; the other
person keeps everything, and a removed person's id is never given again."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from graph.setup import People
from memory import AsyncStore, release_connections
from memory.postgres.accounts import PgAccounts
from memory.sqlite.accounts import SqliteAccounts
from tests.conftest import FIXED_NOW
from tests.integration.test_cli_users import companion
from tests.support.person_data import files_holding, fill, rows_holding
from tests.support.pg_people import migrated_postgres
from tests.support.postgres import PostgresServer

Holdings = tuple[int, int, int, list[str]]  # chats, messages, memories, image files


async def _holdings(store: AsyncStore) -> Holdings:
    return (
        len(await store.list_sessions()),
        await store.count_messages(),
        len(await store.ranked_memories(FIXED_NOW)),
        sorted(path.name for path in store.media_dir.iterdir()),
    )


def fill_person(home: Path, name: str | None, marker: str, env: Mapping[str, str]) -> Holdings:
    """Fill the store of ``name`` (None: the home's one person) as the app finds it; what
    it then holds."""

    async def run() -> Holdings:
        people = People({"home": str(home)}, env)
        store = people.factory(name).store
        try:
            await fill(store, marker)
            return await _holdings(store)
        finally:
            await release_connections()

    return asyncio.run(run())


def holdings(home: Path, name: str | None, env: Mapping[str, str]) -> Holdings:
    async def run() -> Holdings:
        try:
            return await _holdings(People({"home": str(home)}, env).factory(name).store)
        finally:
            await release_connections()

    return asyncio.run(run())


def add(home: Path, name: str, *database: str) -> None:
    done = companion(home, "user", "add", name, *database, stdin=f"{name}'s password\n")
    assert done.returncode == 0, done.stderr


def test_forget_all_asks_then_leaves_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    before = fill_person(home, None, "Quokkaberry", {})
    assert before == (2, 16, 2, ["Quokkaberry.png"])
    refused = companion(home, "forget", "--all")
    assert refused.returncode == 2 and "add --yes" in refused.stderr
    wrong = companion(home, "forget", "--all", stdin="no\n")
    assert wrong.returncode == 2
    assert holdings(home, None, {}) == before  # nothing went
    assert files_holding(home, "Quokkaberry")

    done = companion(home, "forget", "--all", "--yes")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Deleted 2 chats, 16 messages, 2 memories, ")
    assert done.stdout.rstrip().endswith("and 1 files.")
    assert files_holding(home, "Quokkaberry") == []
    assert holdings(home, None, {}) == (0, 0, 0, [])


def test_forget_all_is_refused_once_accounts_are_on(tmp_path: Path) -> None:
    add(tmp_path, "quokka")
    done = companion(tmp_path, "forget", "--all", "--yes")
    assert done.returncode == 2 and "companion user delete NAME" in done.stderr


def test_user_delete_forgets_one_person_and_keeps_the_other(tmp_path: Path) -> None:
    add(tmp_path, "quokka")  # the first: the home's own database and media
    add(tmp_path, "wombat")  # people/2
    fill_person(tmp_path, "quokka", "Quokkaberry", {})
    wombat = fill_person(tmp_path, "wombat", "Wombatpear", {})
    assert companion(tmp_path, "user", "delete", "nobody", "--yes").returncode == 2
    assert companion(tmp_path, "user", "delete", "quokka").returncode == 2  # nobody asked

    done = companion(tmp_path, "user", "delete", "QUOKKA", "--yes")
    assert done.returncode == 0, done.stderr
    assert done.stdout.rstrip().endswith("and the login of quokka.")
    assert files_holding(tmp_path, "quokka") == []  # the name too, in accounts.db
    assert holdings(tmp_path, "wombat", {}) == wombat
    assert files_holding(tmp_path, "Wombatpear")
    accounts = SqliteAccounts.open_home(tmp_path)
    assert accounts.check("quokka", "quokka's password") is None
    assert [p.name for p in accounts.people()] == ["wombat"]

    assert companion(tmp_path, "user", "delete", "wombat", "--yes").returncode == 0
    assert not (tmp_path / "people" / "2").exists()
    assert files_holding(tmp_path, "Wombatpear") == []
    add(tmp_path, "kiwi")  # no one is left: the next person owns the home again
    add(tmp_path, "lime")  # a removed person's id and folder are never given again
    listed = companion(tmp_path, "user", "list").stdout.splitlines()
    assert listed == [f"kiwi\t{tmp_path}", f"lime\t{tmp_path / 'people' / '4'}"]


@pytest.fixture(scope="module")
def postgres() -> Iterator[PostgresServer]:
    with migrated_postgres() as server:
        yield server


def test_user_delete_on_postgres(tmp_path: Path, postgres: PostgresServer) -> None:
    env = {"COMPANION_DATABASE_URL": postgres.url}
    database = ("--database-url", postgres.url)
    add(tmp_path, "quokka", *database)  # the first: the rows from before accounts
    add(tmp_path, "wombat", *database)
    fill_person(tmp_path, "quokka", "Quokkaberry", env)
    wombat = fill_person(tmp_path, "wombat", "Wombatpear", env)

    done = companion(tmp_path, "user", "delete", "quokka", "--yes", *database)
    assert done.returncode == 0, done.stderr
    assert files_holding(tmp_path, "Quokkaberry") == []
    assert rows_holding(postgres.admin_url, "quokka") == {}  # the login's name too
    # wombat does not become the first person: their own rows stay theirs
    assert holdings(tmp_path, "wombat", env) == wombat
    accounts = PgAccounts(postgres.url, tmp_path)  # as a new app process reads it
    wombat_person = accounts.get("wombat")
    assert wombat_person is not None and not accounts.is_first(wombat_person)
