"""``PgAccounts``: the people of a Companion on Postgres, in the shared ``users`` table.

Answers like ``SqliteAccounts`` (the same name rules, hashes, throttle and errors) so the
CLI and the app need not know which they hold. A person's key is their id as text
(``person_key``: unique, never reused, never changed); every person's folder is
``people/<id>``, for their media only. Each call opens its own short-lived connection.
Design: docs/postgres.md.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
from psycopg import errors
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
    remove_folder,
    throttle_key,
    token_hash,
)
from memory.types import Person

CONNECT_TIMEOUT = 10  # seconds: a login fails rather than hang on an unreachable server
NOT_MIGRATED = "the database has no users table yet: run `companion db migrate`"


def person_key(person: Person) -> str:
    """The key of ``person``'s rows in the shared database (``app.person``)."""
    return str(person.id)


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

    def remove(self, name: str) -> Person:
        """Forget a person's login: their account, logins, failed logins and their media
        folder (AccountError: no such person). A removed first person stays the first
        while anyone is left (``is_first``)."""
        with self._connection() as conn, conn.transaction():
            row = conn.execute(
                "DELETE FROM users WHERE lower(name) = lower(%s) RETURNING id, name", (name,)
            ).fetchone()
            if row is None:
                raise AccountError(f"no user {name!r}")
            conn.execute("INSERT INTO removed_users (id) VALUES (%s)", (row["id"],))
            conn.execute("DELETE FROM logins WHERE lower(name) = lower(%s)", (name,))
            conn.execute("DELETE FROM login_failures WHERE name = %s", (throttle_key(name),))
            conn.execute("DELETE FROM removed_users WHERE NOT EXISTS (SELECT 1 FROM users)")
        person = _person(row)
        remove_folder(self.root, person)
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
        """The first person (the smallest id, a removed person's included while anyone is
        left: ids are never reused) owns the rows from before accounts."""
        if self._first_id is None:
            with self._connection() as conn:
                row = conn.execute(
                    "SELECT MIN(id) AS first FROM "
                    "(SELECT id FROM users UNION ALL SELECT id FROM removed_users) AS ids"
                ).fetchone()
            self._first_id = None if row is None else row["first"]
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
