"""The logins and the login throttle kept in the accounts registry answer alike on both
backends (the home's accounts.db and Postgres's accounts tables), since every app process
of a Companion reads them there: the budgets per name and address, per address and per
name, forgiveness that reaches no one else's count, the cap on a person's logins, and
logging a person out everywhere. On Postgres, memory_sql's role cannot see the throttle."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from memory.postgres.accounts import PgAccounts
from memory.postgres.sql_guard import SQL_ROLE
from memory.rules.passwords import (
    ACCOUNT_FREE_FAILURES,
    ADDRESS_FREE_FAILURES,
    FIRST_LOCK_SECONDS,
    LOGIN_FREE_FAILURES,
    MAX_LOGINS_PER_PERSON,
)
from memory.sqlite.accounts import SqliteAccounts
from tests.support.pg_people import BACKENDS, migrated_postgres
from tests.support.postgres import PostgresServer

NOW = 1_800_000_000.0
HOME, ATTACKER = "10.0.0.1", "10.6.6.6"
Registry = SqliteAccounts | PgAccounts


@pytest.fixture(scope="module")
def postgres() -> Iterator[PostgresServer]:
    with migrated_postgres() as server:
        yield server


@pytest.fixture(params=BACKENDS)
def registry(request: pytest.FixtureRequest, tmp_path: Path) -> Registry:
    if request.param == "sqlite":
        return SqliteAccounts.open_home(tmp_path)  # the home exists: the app made it
    server: PostgresServer = request.getfixturevalue("postgres")
    with psycopg.connect(server.admin_url, autocommit=True) as conn:
        conn.execute("TRUNCATE users, logins, login_failures RESTART IDENTITY")
    return PgAccounts(server.url, tmp_path / "home")


def fail(registry: Registry, name: str, address: str, times: int = 1) -> list[float]:
    """Claim ``times`` attempts that then fail; what each claim answered."""
    return [registry.claim_login(name, address, NOW) for _ in range(times)]


def test_a_name_from_an_address_is_locked_after_its_free_failures(registry: Registry) -> None:
    assert fail(registry, "Ann", HOME, LOGIN_FREE_FAILURES) == [0.0] * LOGIN_FREE_FAILURES
    assert registry.claim_login("ann", HOME, NOW) == FIRST_LOCK_SECONDS  # any case
    assert registry.claim_login("ann", HOME, NOW + FIRST_LOCK_SECONDS) == 0.0
    assert registry.claim_login("ann", HOME, NOW + FIRST_LOCK_SECONDS) == 2 * FIRST_LOCK_SECONDS
    assert registry.claim_login("bob", HOME, NOW) == 0.0  # bob's own count


def test_a_success_forgives_its_own_name_from_its_own_address_only(registry: Registry) -> None:
    fail(registry, "ann", HOME, LOGIN_FREE_FAILURES - 1)
    fail(registry, "ann", ATTACKER, LOGIN_FREE_FAILURES - 1)
    assert registry.claim_login("bob", HOME, NOW) == 0.0
    registry.forgive_login("bob", HOME, NOW)
    assert fail(registry, "ann", HOME, 2)[1] > 0  # bob's success forgave none of ann's
    assert registry.claim_login("ann", ATTACKER, NOW) == 0.0
    registry.forgive_login("ann", ATTACKER, NOW)
    assert fail(registry, "ann", ATTACKER, LOGIN_FREE_FAILURES) == [0.0] * LOGIN_FREE_FAILURES
    assert registry.claim_login("ann", HOME, NOW) > 0  # forgiven there, not here


def test_an_address_guessing_many_names_is_locked(registry: Registry) -> None:
    for n in range(ADDRESS_FREE_FAILURES):
        assert fail(registry, f"name{n}", ATTACKER) == [0.0]
    assert registry.claim_login("bob", ATTACKER, NOW) > 0
    assert registry.claim_login("bob", HOME, NOW) == 0.0


def test_a_name_guessed_from_many_addresses_is_locked_for_strangers(registry: Registry) -> None:
    registry.claim_login("ann", HOME, NOW)
    registry.forgive_login("ann", HOME, NOW)
    for n in range(ACCOUNT_FREE_FAILURES):
        assert fail(registry, "ann", f"10.9.0.{n}") == [0.0]
    assert registry.claim_login("ann", "10.1.1.1", NOW) > 0
    assert registry.claim_login("ann", HOME, NOW) == 0.0  # ann at home is not locked out


def test_a_persons_logins_are_capped_and_end_together(registry: Registry) -> None:
    tokens = [f"token-{n}" for n in range(MAX_LOGINS_PER_PERSON + 3)]
    for token in tokens:
        registry.add_login(token, "bob")
    registry.add_login("ann's", "ann")
    assert [registry.login_name(t) for t in tokens[:3]] == [None] * 3  # the oldest went
    assert {registry.login_name(t) for t in tokens[3:]} == {"bob"}
    registry.end_logins("BOB")
    assert {registry.login_name(t) for t in tokens} == {None}
    assert registry.login_name("ann's") == "ann"


def test_memory_sql_cannot_see_the_login_throttle(postgres: PostgresServer) -> None:
    with psycopg.connect(postgres.admin_url, autocommit=True) as conn:
        privileges = conn.execute(
            "SELECT has_table_privilege(%s, 'login_failures', 'SELECT'), "
            "has_table_privilege(%s, 'login_failures', 'UPDATE')",
            (SQL_ROLE, SQL_ROLE),
        ).fetchone()
    assert privileges == (False, False)
