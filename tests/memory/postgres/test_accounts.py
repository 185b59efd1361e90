"""Accounts on Postgres (``PgAccounts``) answer like the home's ``SqliteAccounts``: the shared
cases run on both. Then what only Postgres has to prove: each person's key and folder,
the app role's narrow grants, memory_sql's role blind to the users table, and the real
``companion user`` and ``companion db migrate`` commands against a real server."""

from __future__ import annotations

import asyncio
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import errors

from memory import AccountError, AccountsUnavailable
from memory.postgres.accounts import PgAccounts, person_key
from memory.postgres.schema import ACCOUNTS_MIGRATIONS, PG_MIGRATIONS
from memory.postgres.sql_guard import SQL_ROLE, run_sql
from memory.sqlite.accounts import SqliteAccounts
from tests.support.pg_people import migrated_postgres
from tests.support.postgres import APP_ROLE, PostgresServer

Registry = SqliteAccounts | PgAccounts


@pytest.fixture(scope="module")
def postgres() -> Iterator[PostgresServer]:
    """One server for the module, migrated as `companion db migrate` does."""
    with migrated_postgres() as server:
        yield server


def empty_users(server: PostgresServer) -> None:
    with psycopg.connect(server.admin_url, autocommit=True) as conn:
        conn.execute("TRUNCATE users RESTART IDENTITY")


@pytest.fixture
def pg_accounts(postgres: PostgresServer, tmp_path: Path) -> PgAccounts:
    empty_users(postgres)
    return PgAccounts(postgres.url, tmp_path / "home")


@pytest.fixture(params=["sqlite", "postgres"])
def accounts(request: pytest.FixtureRequest, tmp_path: Path) -> Registry:
    if request.param == "sqlite":
        return SqliteAccounts.open_home(tmp_path / "home")
    server: PostgresServer = request.getfixturevalue("postgres")
    empty_users(server)
    return PgAccounts(server.url, tmp_path / "home")


# -- the same behaviour on both ------------------------------------------------------------


def test_nobody_until_the_first_person_is_added(accounts: Registry) -> None:
    assert not accounts.enabled()
    assert accounts.people() == []
    assert accounts.get("ann") is None
    accounts.add("ann", "ann's password")
    assert accounts.enabled()


def test_add_check_get_and_list(accounts: Registry) -> None:
    ann = accounts.add("Ann", "ann's password")
    bob = accounts.add("bob", "bob's password")
    assert accounts.check("Ann", "ann's password") == ann
    assert accounts.check("ann", "ann's password") == ann  # the name in any case
    assert accounts.get("BOB") == bob
    assert [person.name for person in accounts.people()] == ["Ann", "bob"]
    assert ann.id != bob.id and ann.home(accounts.root) != bob.home(accounts.root)


def test_a_wrong_password_or_an_unknown_name_is_refused(accounts: Registry) -> None:
    accounts.add("ann", "ann's password")
    assert accounts.check("ann", "bob's password") is None
    assert accounts.check("ann", "") is None
    assert accounts.check("nobody", "ann's password") is None


def test_names_are_unique_ignoring_case(accounts: Registry) -> None:
    accounts.add("ann", "ann's password")
    with pytest.raises(AccountError, match="taken"):
        accounts.add("ANN", "another password")
    assert [person.name for person in accounts.people()] == ["ann"]
    assert accounts.check("ANN", "another password") is None


@pytest.mark.parametrize(
    ("name", "password", "reason"),
    [("a/b", "long enough", "not a valid name"), ("", "long enough", "not a valid name"),
     ("x" * 41, "long enough", "not a valid name"), ("ann", "short", "at least 8")],
)  # fmt: skip
def test_bad_names_and_short_passwords_are_refused(
    accounts: Registry, name: str, password: str, reason: str
) -> None:
    with pytest.raises(AccountError, match=reason):
        accounts.add(name, password)
    assert accounts.people() == []


def test_set_password_replaces_the_old_one(accounts: Registry) -> None:
    accounts.add("ann", "first password")
    accounts.add("bob", "bob's password")
    accounts.set_password("ANN", "second password")
    assert accounts.check("ann", "first password") is None
    assert accounts.check("ann", "second password") is not None
    assert accounts.check("bob", "bob's password") is not None  # nobody else's
    with pytest.raises(AccountError, match="no user 'nobody'"):
        accounts.set_password("nobody", "third password")
    with pytest.raises(AccountError, match="at least 8"):
        accounts.set_password("ann", "short")


# -- Postgres only ---------------------------------------------------------------------------


def test_each_person_has_a_key_and_a_private_media_folder(pg_accounts: PgAccounts) -> None:
    ann = pg_accounts.add("ann", "ann's password")
    bob = pg_accounts.add("bob", "bob's password")
    assert (person_key(ann), person_key(bob)) == ("1", "2")
    # Nobody adopts the home itself: the conversations are in the shared database.
    assert ann.home(pg_accounts.root) == pg_accounts.root / "people" / "1"
    assert stat.S_IMODE(ann.home(pg_accounts.root).stat().st_mode) == 0o700
    assert not (pg_accounts.root / "accounts.db").exists()
    # Another process (another machine) reading the same database sees the same people.
    other = PgAccounts(pg_accounts.url, pg_accounts.root)
    assert other.check("Bob", "bob's password") == bob
    assert [person_key(person) for person in other.people()] == ["1", "2"]


def test_a_refused_name_leaves_no_folder_and_keys_are_never_reused(
    pg_accounts: PgAccounts,
) -> None:
    pg_accounts.add("ann", "ann's password")
    with pytest.raises(AccountError, match="taken"):
        pg_accounts.add("Ann", "ann's password")
    bob = pg_accounts.add("bob", "bob's password")
    assert person_key(bob) not in ("1", "2")  # the refused insert used its id up
    assert sorted(p.name for p in (pg_accounts.root / "people").iterdir()) == [
        "1",
        person_key(bob),
    ]


def test_the_app_role_may_read_add_remove_and_change_a_password_only(
    postgres: PostgresServer, pg_accounts: PgAccounts
) -> None:
    pg_accounts.add("ann", "ann's password")
    with psycopg.connect(postgres.url, autocommit=True) as conn:
        conn.execute("DELETE FROM users WHERE false")  # a person deletes their account
        with pytest.raises(errors.InsufficientPrivilege):
            conn.execute("UPDATE users SET name = 'eve'")
        with pytest.raises(errors.InsufficientPrivilege):
            conn.execute("SELECT * FROM accounts_schema_version")
        with pytest.raises(errors.InsufficientPrivilege):
            conn.execute("ALTER TABLE users ADD COLUMN note text")
    assert [person.name for person in pg_accounts.people()] == ["ann"]


def test_memory_sql_cannot_read_the_users_table(
    postgres: PostgresServer, pg_accounts: PgAccounts
) -> None:
    ann = pg_accounts.add("ann", "ann's password")
    with psycopg.connect(postgres.url_as(SQL_ROLE), autocommit=True) as conn:  # its own login
        for query in ("SELECT name, password_hash FROM users", "SELECT count(*) FROM users"):
            with pytest.raises(errors.InsufficientPrivilege):
                conn.execute(query)
        privileges = conn.execute(
            "SELECT has_table_privilege(%s, 'users', 'SELECT'), "
            "has_column_privilege(%s, 'users', 'password_hash', 'SELECT')",
            (SQL_ROLE, SQL_ROLE),
        ).fetchone()
        assert privileges == (False, False)
    # And through the tool's own path, as a logged-in person.
    for query in (
        "SELECT name, password_hash FROM users",
        "SELECT * FROM sessions WHERE title IN (SELECT password_hash FROM users)",
        "SELECT query_to_xml('SELECT * FROM users', true, true, '')",
    ):
        result = asyncio.run(run_sql(postgres.url, person_key(ann), query))
        assert "error" in result and "rows" not in result, (query, result)


def test_an_unmigrated_database_says_to_run_migrate(tmp_path: Path) -> None:
    with PostgresServer() as server:
        accounts = PgAccounts(server.url, tmp_path)
        with pytest.raises(AccountsUnavailable, match="companion db migrate"):
            accounts.enabled()
        with pytest.raises(AccountsUnavailable, match="companion db migrate"):
            accounts.check("ann", "ann's password")
    with pytest.raises(AccountsUnavailable, match="could not reach the database"):
        PgAccounts(server.url, tmp_path).people()  # the server is gone


# -- the real commands -------------------------------------------------------------------------


def companion(
    home: Path, *args: str, stdin: str = "", **env: str
) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("COMPANION_", "PG"))}
    return subprocess.run(
        [sys.executable, "-m", "app.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        env={**clean, "COMPANION_HOME": str(home), **env},
    )


def test_user_add_list_and_passwd_go_to_postgres(
    postgres: PostgresServer, pg_accounts: PgAccounts, tmp_path: Path
) -> None:
    home = pg_accounts.root
    url = {"COMPANION_DATABASE_URL": postgres.url}
    added = companion(home, "user", "add", "ann", stdin="ann's password\n", **url)
    assert added.returncode == 0, added.stderr
    assert added.stdout.startswith("Added ann.") and "shared database" in added.stdout
    assert pg_accounts.check("ann", "ann's password") is not None  # the newline is not in it
    assert not (home / "accounts.db").exists()  # nothing went to the SQLite registry

    taken = companion(home, "user", "add", "ANN", stdin="long enough\n", **url)
    assert taken.returncode == 2 and "taken" in taken.stderr
    changed = companion(home, "user", "passwd", "Ann", stdin="new password\n", **url)
    assert changed.returncode == 0, changed.stderr
    assert pg_accounts.check("ann", "new password") is not None
    unknown = companion(home, "user", "passwd", "nobody", stdin="new password\n", **url)
    assert unknown.returncode == 2 and "no user nobody" in unknown.stderr

    listed = companion(home, "user", "list", **url)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines() == [f"ann\t{home / 'people' / '1'}"]
    # Without the URL the same home has no users: the SQLite registry is separate.
    alone = companion(home, "user", "list")
    assert alone.returncode == 0 and alone.stdout == ""


def test_user_commands_refuse_a_non_postgres_url(tmp_path: Path) -> None:
    done = companion(
        tmp_path, "user", "list", COMPANION_DATABASE_URL="sqlite:///" + str(tmp_path / "x.db")
    )
    assert done.returncode == 2 and "only a Postgres URL" in done.stderr
    flag = companion(
        tmp_path, "user", "list", "--database-url", "postgresql://companion:pw@127.0.0.1/c"
    )
    assert flag.returncode == 2 and "PGPASSWORD" in flag.stderr


def test_db_migrate_makes_everything_and_is_idempotent(tmp_path: Path) -> None:
    with PostgresServer() as server:
        env = {"COMPANION_DATABASE_URL": server.url}
        missing = companion(tmp_path, "db", "migrate", **env)
        assert missing.returncode == 2 and "COMPANION_DATABASE_ADMIN_URL" in missing.stderr
        refused = companion(
            tmp_path, "db", "migrate", "--admin-url", server.admin_url.replace("@", ":pw@"), **env
        )
        assert refused.returncode == 2 and "PGPASSWORD" in refused.stderr

        expected = (
            f"Schema at version {len(PG_MIGRATIONS)}, accounts at version "
            f"{len(ACCOUNTS_MIGRATIONS)}; granted to {APP_ROLE} (memory_sql runs as {SQL_ROLE})."
        )
        first = companion(
            tmp_path, "db", "migrate", COMPANION_DATABASE_ADMIN_URL=server.admin_url, **env
        )
        assert first.returncode == 0, first.stderr
        assert first.stdout.strip() == expected
        # Again, this time with the flag (its password, none here, from PGPASSWORD).
        again = companion(
            tmp_path, "db", "migrate", "--admin-url", server.admin_url, PGPASSWORD="", **env
        )
        assert again.returncode == 0, again.stderr
        assert again.stdout.strip() == expected

        with psycopg.connect(server.admin_url) as conn:
            versions = conn.execute("SELECT version FROM accounts_schema_version").fetchall()
            assert versions == [(v,) for v in range(1, len(ACCOUNTS_MIGRATIONS) + 1)]
            (stored,) = conn.execute("SELECT MAX(version) FROM schema_version").fetchone() or (0,)
            assert stored == len(PG_MIGRATIONS)
        added = companion(tmp_path, "user", "add", "ann", stdin="ann's password\n", **env)
        assert added.returncode == 0, added.stderr
        assert PgAccounts(server.url, tmp_path).check("ann", "ann's password") is not None


WITHOUT_PSYCOPG = (
    "import sys; sys.modules['psycopg'] = None; from app.cli import main; "
    "raise SystemExit(main(sys.argv[1:]))"
)  # None in sys.modules: importing psycopg raises ImportError, as when it is not installed


@pytest.mark.parametrize("command", [["user", "list"], ["db", "migrate"]])
def test_without_psycopg_postgres_is_refused_with_the_fix(
    command: list[str], tmp_path: Path
) -> None:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("COMPANION_", "PG"))}
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_PSYCOPG, *command],
        capture_output=True,
        text=True,
        timeout=120,
        env={
            **clean,
            "COMPANION_HOME": str(tmp_path),
            "COMPANION_DATABASE_URL": "postgresql://companion@127.0.0.1/companion",
            "COMPANION_DATABASE_ADMIN_URL": "postgresql://postgres@127.0.0.1/companion",
        },
    )
    assert done.returncode == 2, done.stderr
    assert "companion[postgres]" in done.stderr and "Traceback" not in done.stderr
