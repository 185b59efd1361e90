"""The people of a hosted Companion on Postgres (issue 15): ``memory.accounts``' registry in
a ``users`` table that every app process sharing the database reads.

``PgAccounts`` answers like ``memory.accounts.Accounts`` (``enabled``, ``add``, ``check``,
``get``, ``people``, ``set_password``, ``root``, and the logins and login throttle of
``add_login``, ``claim_login`` and the rest), with the same name rules, the same scrypt
hashes and throttle budgets (``memory.accounts``' own functions) and the same errors, so
the CLI and the app's login need not know which one they hold. What differs:

- **The person key.** Every row of memory.pg_store belongs to ``app.person``; a person's
  key is ``person_key(person)``, their ``id`` as text. The id comes from an identity
  column: unique, never reused (a sequence), never changed (``GENERATED ALWAYS``, and the
  app role may update only ``password_hash``). The name is not the key: names compare
  ignoring case, so "Ann" and "ann" are one person, while ``app.person`` is compared
  exactly — one spelling would see rows another could not.
- **No folder to adopt.** All conversations live in the shared database, so nobody takes
  over the home's own SQLite file: every person's folder is ``people/<id>`` under the
  home (``Person.home(root)``), for their media only.

Logins and the CLI are rare and synchronous (Gradio's auth callback is sync), so every
call opens its own short-lived connection. The table is made by ``migrate_accounts`` as
an admin role, with its own version table (``accounts_schema_version``) beside
memory.pg_store's ``schema_version``. ``users`` has no row-level security (it is the
login table, read before anyone is logged in); the app role may read it, add rows and
change a password, nothing else, and memory_sql's role (``companion_sql``) has no
privilege on it at all.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
from psycopg import errors, sql
from psycopg.rows import DictRow, dict_row

from memory.errors import AccountError, AccountsUnavailable
from memory.rules.passwords import (
    FOLDER_MODE,
    FORGET_FAILURES_SECONDS,
    KNOWN_ADDRESS_SECONDS,
    LOGIN_DAYS,
    MAX_LOGINS_PER_PERSON,
    LoginRecord,
    PasswordRegistry,
    check_name,
    check_password,
    hash_password,
    login_record,
    make_folder,
    throttle_key,
    token_hash,
)
from memory.types import Person

CONNECT_TIMEOUT = 10  # seconds: a login fails rather than hang on an unreachable server
NOT_MIGRATED = "the database has no users table yet: run `companion db migrate`"

# Each entry upgrades the accounts schema by one version. Never edit a shipped entry.
ACCOUNTS_MIGRATIONS: tuple[str, ...] = (
    # 1: the people. A name is unique ignoring case, as on SQLite (NAME_PATTERN is ASCII,
    # so lower() folds it exactly like COLLATE NOCASE).
    """
    CREATE TABLE users (
        id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        name          text NOT NULL CHECK (name <> ''),
        password_hash text NOT NULL,
        created_at    timestamptz NOT NULL DEFAULT now()
    );
    CREATE UNIQUE INDEX users_name ON users (lower(name));
    """,
    # 2: logins, shared by every app process (memory.accounts' migration 2): a token's
    # hash, whose login it is, and when it began.
    """
    CREATE TABLE logins (
        token_hash text PRIMARY KEY,
        name       text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX logins_name ON logins (lower(name));
    """,
    # 3: the login throttle (memory.accounts' migration 3): failed logins per name tried
    # (lower case) and client address, and when that name last logged in from there.
    """
    CREATE TABLE login_failures (
        name     text NOT NULL,
        address  text NOT NULL,
        failures integer NOT NULL,
        last_at  double precision NOT NULL,
        known_at double precision,
        PRIMARY KEY (name, address)
    );
    CREATE INDEX login_failures_address ON login_failures (address);
    """,
)


def person_key(person: Person) -> str:
    """The key of ``person``'s rows in the shared database (``app.person``)."""
    return str(person.id)


def migrate_accounts(admin_url: str, app_role: str) -> int:
    """Bring the users table up to date as the admin and grant ``app_role`` exactly what
    logins and the CLI need; the version in place. Safe to run again, and at once from
    two processes (the second waits, then finds nothing to do)."""
    role = sql.Identifier(app_role)
    with psycopg.connect(admin_url, autocommit=True) as conn, conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(hashtext('companion.accounts_migrate'))")
        conn.execute(
            "CREATE TABLE IF NOT EXISTS accounts_schema_version (version integer NOT NULL)"
        )
        row = conn.execute("SELECT MAX(version) FROM accounts_schema_version").fetchone()
        current = int(row[0] or 0) if row else 0
        for version, script in enumerate(ACCOUNTS_MIGRATIONS[current:], start=current + 1):
            conn.execute(script)
            conn.execute("INSERT INTO accounts_schema_version (version) VALUES (%s)", (version,))
        # Exactly these privileges: take back anything granted before (to anyone), then
        # grant. Not UPDATE of id or name: a person's key and name never change.
        conn.execute(
            sql.SQL("REVOKE ALL ON users, logins, login_failures FROM PUBLIC, {}").format(role)
        )
        conn.execute(sql.SQL("GRANT SELECT, INSERT, DELETE ON logins TO {}").format(role))
        conn.execute(
            sql.SQL("GRANT SELECT, INSERT, UPDATE, DELETE ON login_failures TO {}").format(role)
        )
        conn.execute(
            sql.SQL(
                "GRANT SELECT, INSERT (name, password_hash), UPDATE (password_hash) ON users TO {}"
            ).format(role)
        )
    return len(ACCOUNTS_MIGRATIONS)


def _person(row: DictRow) -> Person:
    return Person(id=row["id"], name=row["name"], folder=f"people/{row['id']}")


class PgAccounts(PasswordRegistry):
    """The people of a Companion whose store is Postgres (``url``, the app role's); their
    media folders live under ``root``, the app's home."""

    def __init__(self, url: str, root: Path) -> None:
        self.url = url
        self.root = Path(root).expanduser()
        self._first_id: int | None = None

    def enabled(self) -> bool:
        """True once anyone has been added: the app then asks everyone to log in."""
        with self._connection() as conn:
            row = conn.execute("SELECT EXISTS (SELECT 1 FROM users) AS anyone").fetchone()
        return bool(row and row["anyone"])

    def add(self, name: str, password: str) -> Person:
        """Register a person and create their media folder under the home."""
        check_name(name)
        check_password(password)
        password_hash = hash_password(password)
        self.root.mkdir(mode=FOLDER_MODE, parents=True, exist_ok=True)
        with self._connection() as conn, conn.transaction():
            try:
                row = conn.execute(
                    "INSERT INTO users (name, password_hash) VALUES (%s, %s) RETURNING id, name",
                    (name, password_hash),
                ).fetchone()
            except errors.UniqueViolation as exc:
                raise AccountError(f"the name {name!r} is taken") from exc
            assert row is not None  # INSERT … RETURNING returns the row it added
            person = _person(row)
            make_folder(person.home(self.root))  # before COMMIT: no person without one
        return person

    def people(self) -> list[Person]:
        """Everyone, in the order they were added."""
        with self._connection() as conn:
            rows = conn.execute("SELECT id, name FROM users ORDER BY id").fetchall()
        return [_person(row) for row in rows]

    def set_password(self, name: str, password: str) -> None:
        """Replace a person's password."""
        if self.get(name) is None:
            raise AccountError(f"no user {name!r}")
        check_password(password)
        password_hash = hash_password(password)
        with self._connection() as conn:
            conn.execute(
                "UPDATE users SET password_hash = %s WHERE lower(name) = lower(%s)",
                (password_hash, name),
            )
            # A new password logs everyone out.
            conn.execute("DELETE FROM logins WHERE lower(name) = lower(%s)", (name,))

    def add_login(self, token: str, name: str) -> None:
        """Keep a login (its cookie's token) for every process; drop expired ones, and
        the person's oldest beyond ``MAX_LOGINS_PER_PERSON``."""
        with self._connection() as conn, conn.transaction():
            conn.execute(
                "DELETE FROM logins WHERE created_at < now() - make_interval(days => %s)",
                (LOGIN_DAYS,),
            )
            conn.execute(  # a token is random: a second use of one is an error
                "INSERT INTO logins (token_hash, name) VALUES (%s, %s)", (token_hash(token), name)
            )
            conn.execute(  # each login is its own transaction: now() tells them apart
                """DELETE FROM logins WHERE lower(name) = lower(%(name)s) AND token_hash NOT IN
                   (SELECT token_hash FROM logins WHERE lower(name) = lower(%(name)s)
                    ORDER BY created_at DESC LIMIT %(keep)s)""",
                {"name": name, "keep": MAX_LOGINS_PER_PERSON},
            )

    def login_name(self, token: str) -> str | None:
        """Who this login token belongs to, or None (unknown, ended or expired)."""
        with self._connection() as conn:
            row = conn.execute(
                """SELECT name FROM logins WHERE token_hash = %s
                   AND created_at >= now() - make_interval(days => %s)""",
                (token_hash(token), LOGIN_DAYS),
            ).fetchone()
        return None if row is None else str(row["name"])

    def end_login(self, token: str) -> None:
        """Forget a login (logging out)."""
        with self._connection() as conn:
            conn.execute("DELETE FROM logins WHERE token_hash = %s", (token_hash(token),))

    def end_logins(self, name: str) -> None:
        """Forget every login of a person (logging out everywhere)."""
        with self._connection() as conn:
            conn.execute("DELETE FROM logins WHERE lower(name) = lower(%s)", (name,))

    def claim_login(self, name: str, address: str, now: float) -> float:
        """Count a login attempt of ``name`` from ``address`` as a failure, unless the
        throttle holds it back: then nothing is counted and the seconds to wait are
        returned (0 when counted). ``now`` is the clock in epoch seconds."""
        keys = {
            "name": throttle_key(name),
            "address": throttle_key(address),
            "now": now,
            "since": now - FORGET_FAILURES_SECONDS,
            "known": now - KNOWN_ADDRESS_SECONDS,
        }
        with self._connection() as conn, conn.transaction():
            # Every process reads, decides and counts one attempt at a time.
            conn.execute("SELECT pg_advisory_xact_lock(hashtext('companion.login_throttle'))")
            conn.execute(
                """DELETE FROM login_failures WHERE last_at < %(since)s
                   AND (known_at IS NULL OR known_at < %(known)s)""",
                keys,
            )
            wait = self._login_record(conn, keys).wait(now)
            if wait == 0:
                conn.execute(
                    """INSERT INTO login_failures (name, address, failures, last_at)
                       VALUES (%(name)s, %(address)s, 1, %(now)s)
                       ON CONFLICT (name, address) DO UPDATE SET
                       failures = CASE WHEN login_failures.last_at >= %(since)s
                                  THEN login_failures.failures + 1 ELSE 1 END,
                       last_at = excluded.last_at""",
                    keys,
                )
        return wait

    def forgive_login(self, name: str, address: str, now: float) -> None:
        """A claimed attempt succeeded: forget this name's failures from this address
        (no one else's) and remember the address as one it logs in from."""
        with self._connection() as conn:
            conn.execute(
                """UPDATE login_failures SET failures = 0, known_at = %s
                   WHERE name = %s AND address = %s""",
                (now, throttle_key(name), throttle_key(address)),
            )

    @staticmethod
    def _login_record(conn: psycopg.Connection[DictRow], keys: dict[str, Any]) -> LoginRecord:
        pair = conn.execute(
            """SELECT failures, last_at, known_at FROM login_failures
               WHERE name = %(name)s AND address = %(address)s""",
            keys,
        ).fetchone()
        by_address = conn.execute(
            """SELECT COALESCE(SUM(failures), 0) AS n, COALESCE(MAX(last_at), 0) AS last
               FROM login_failures
               WHERE address = %(address)s AND failures > 0 AND last_at >= %(since)s""",
            keys,
        ).fetchone()
        by_name = conn.execute(
            """SELECT COALESCE(SUM(failures), 0) AS n, COALESCE(MAX(last_at), 0) AS last
               FROM login_failures
               WHERE name = %(name)s AND failures > 0 AND last_at >= %(since)s""",
            keys,
        ).fetchone()
        assert by_address is not None and by_name is not None  # aggregates return a row
        return login_record(
            None if pair is None else list(pair.values()),
            list(by_address.values()),
            list(by_name.values()),
            keys["now"],
        )

    def is_first(self, person: Person) -> bool:
        """The first person (the smallest id: ids are never reused) owns the rows from
        before accounts."""
        if self._first_id is None:
            self._first_id = min(p.id for p in self.people())
        return person.id == self._first_id

    def person_key(self, person: Person) -> str:
        """The key of ``person``'s rows in the shared database (``app.person``)."""
        return person_key(person)

    def _find(self, name: str) -> tuple[Person, str] | None:
        with self._connection() as conn:
            row = conn.execute(
                "SELECT id, name, password_hash FROM users WHERE lower(name) = lower(%s)",
                (name,),
            ).fetchone()
        return None if row is None else (_person(row), row["password_hash"])

    @contextmanager
    def _connection(self) -> Iterator[psycopg.Connection[DictRow]]:
        try:
            with psycopg.connect(
                self.url, autocommit=True, row_factory=dict_row, connect_timeout=CONNECT_TIMEOUT
            ) as conn:
                yield conn
        except errors.UndefinedTable as exc:
            raise AccountsUnavailable(NOT_MIGRATED) from exc
        except psycopg.OperationalError as exc:
            raise AccountsUnavailable(f"could not reach the database: {exc}") from exc
