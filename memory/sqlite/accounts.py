"""``SqliteAccounts``: the people of one Companion home, in ``<home>/accounts.db``.

Each person has their own database file and media folder (the first person keeps the
home's own; later people get ``people/<id>/``), so isolation is by construction. The
registry also keeps the logins every app process shares and the login throttle
(``memory.rules.passwords``). Every call opens its own short-lived connection. Design:
docs/storage.md.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

from memory.errors import AccountError
from memory.rules.files import owner_only
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
from memory.sqlite.db import connect, migrate
from memory.types import OWNER, Person, format_time, utc_now

WAIT_MS = 5_000


# Each entry upgrades the schema by one version, one statement at a time. Never edit a
# shipped entry: append.
MIGRATIONS: tuple[str, ...] = (
    # 1: the people. ``folder`` is relative to the home: "" for the first person (the
    # home's own companion.db), "people/<id>" for the others.
    """
    CREATE TABLE users (
        id            INTEGER PRIMARY KEY,
        name          TEXT NOT NULL UNIQUE COLLATE NOCASE,
        password_hash TEXT NOT NULL,
        folder        TEXT NOT NULL UNIQUE,
        created_at    TEXT NOT NULL
    );
    """,
    # 2: logins, so every app process of the home knows a login made through another
    # (behind a load balancer). Only a token's hash is kept: the file never holds a key.
    """
    CREATE TABLE logins (
        token_hash TEXT PRIMARY KEY,
        name       TEXT NOT NULL COLLATE NOCASE,
        created_at TEXT NOT NULL
    );
    """,
    # 3: the login throttle, shared by every app process: failed logins per name tried
    # (lower case, as typed: it need not be anyone's) and client address, and when that
    # name last logged in from that address (epoch seconds).
    """
    CREATE TABLE login_failures (
        name     TEXT NOT NULL,
        address  TEXT NOT NULL,
        failures INTEGER NOT NULL,
        last_at  REAL NOT NULL,
        known_at REAL,
        PRIMARY KEY (name, address)
    );
    CREATE INDEX login_failures_address ON login_failures (address);
    """,
    # 4: the ids of removed people (``remove``), never given again: a new person never
    # gets a removed one's folder, nor the store an app process may still hold open on it.
    """
    CREATE TABLE removed_users (
        id INTEGER PRIMARY KEY
    );
    """,
)


def _person(row: sqlite3.Row) -> Person:
    return Person(id=row["id"], name=row["name"], folder=row["folder"])


class SqliteAccounts(PasswordRegistry):
    """The registry of a home's people (``accounts.db``); every call opens its own
    connection, and nothing is created until the first person is added."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    @classmethod
    def open_home(cls, home: Path) -> SqliteAccounts:
        """The registry of a COMPANION_HOME folder."""
        return cls(Path(home).expanduser() / "accounts.db")

    @property
    def root(self) -> Path:
        """The home the people's folders are relative to."""
        return self.path.parent

    def enabled(self) -> bool:
        """True once anyone has been added: the app then asks everyone to log in."""
        if not self.path.exists():
            return False
        with self._connection() as conn:
            return bool(conn.execute("SELECT EXISTS (SELECT 1 FROM users)").fetchone()[0])

    def add(self, name: str, password: str) -> Person:
        """Register a person and create their folder; the first adopts the home itself."""
        check_name(name)
        check_password(password)
        password_hash = hash_password(password)
        self.root.mkdir(mode=FOLDER_MODE, parents=True, exist_ok=True)
        with self._connection() as conn:
            conn.execute("BEGIN IMMEDIATE")  # the next id and folder are ours until COMMIT
            try:
                if self._row(conn, name) is not None:
                    raise AccountError(f"the name {name!r} is taken")
                count, last = conn.execute(
                    "SELECT (SELECT COUNT(*) FROM users), MAX(id) FROM "
                    "(SELECT id FROM users UNION ALL SELECT id FROM removed_users)"
                ).fetchone()
                person_id = (last or 0) + 1
                folder = "" if count == 0 else f"people/{person_id}"
                conn.execute(
                    "INSERT INTO users (id, name, password_hash, folder, created_at) "
                    "VALUES (?, ?, ?, ?, ?)",
                    (person_id, name, password_hash, folder, format_time(utc_now())),
                )
                person = Person(id=person_id, name=name, folder=folder)
                if folder:
                    make_folder(person.home(self.root))
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        return person

    def remove(self, name: str) -> Person:
        """Forget a person's login: their account, logins, failed logins and (a folder of
        their own, not the home) their folder with everything in it (AccountError: no
        such person). Their id is never given again."""
        found = self.get(name)
        if found is None:
            raise AccountError(f"no user {name!r}")
        with self._connection() as conn:
            conn.execute("PRAGMA secure_delete=ON")  # the name and hash are zeroed
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.execute("DELETE FROM users WHERE id = ?", (found.id,))
                conn.execute("INSERT OR IGNORE INTO removed_users (id) VALUES (?)", (found.id,))
                conn.execute("DELETE FROM logins WHERE name = ?", (found.name,))
                conn.execute("DELETE FROM login_failures WHERE name = ?", (throttle_key(name),))
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the log's older copies go
        remove_folder(self.root, found)
        return found

    def people(self) -> list[Person]:
        """Everyone, in the order they were added."""
        if not self.path.exists():
            return []
        with self._connection() as conn:
            rows = conn.execute("SELECT id, name, folder FROM users ORDER BY id").fetchall()
        return [_person(row) for row in rows]

    def set_password(self, name: str, password: str) -> None:
        """Replace a person's password."""
        if self.get(name) is None:
            raise AccountError(f"no user {name!r}")
        check_password(password)
        with self._connection() as conn:
            conn.execute(
                "UPDATE users SET password_hash = ? WHERE name = ?",
                (hash_password(password), name),
            )
            conn.execute("DELETE FROM logins WHERE name = ?", (name,))  # log everyone out

    def add_login(self, token: str, name: str) -> None:
        """Keep a login (its cookie's token) for every process; drop expired ones, and
        the person's oldest beyond ``MAX_LOGINS_PER_PERSON``."""
        now = utc_now()
        with self._connection() as conn:
            conn.execute(
                "DELETE FROM logins WHERE created_at < ?",
                (format_time(now - timedelta(days=LOGIN_DAYS)),),
            )
            conn.execute(
                "INSERT INTO logins (token_hash, name, created_at) VALUES (?, ?, ?)",
                (token_hash(token), name, format_time(now)),
            )
            conn.execute(  # rowids grow with every insert: the newest are the largest
                "DELETE FROM logins WHERE name = ? AND rowid NOT IN "
                "(SELECT rowid FROM logins WHERE name = ? ORDER BY rowid DESC LIMIT ?)",
                (name, name, MAX_LOGINS_PER_PERSON),
            )

    def login_name(self, token: str) -> str | None:
        """Who this login token belongs to, or None (unknown, ended or expired)."""
        if not self.path.exists():
            return None
        since = format_time(utc_now() - timedelta(days=LOGIN_DAYS))
        with self._connection() as conn:
            row = conn.execute(
                "SELECT name FROM logins WHERE token_hash = ? AND created_at >= ?",
                (token_hash(token), since),
            ).fetchone()
        return None if row is None else str(row["name"])

    def end_login(self, token: str) -> None:
        """Forget a login (logging out)."""
        if self.path.exists():
            with self._connection() as conn:
                conn.execute("DELETE FROM logins WHERE token_hash = ?", (token_hash(token),))

    def end_logins(self, name: str) -> None:
        """Forget every login of a person (logging out everywhere)."""
        if self.path.exists():
            with self._connection() as conn:
                conn.execute("DELETE FROM logins WHERE name = ?", (name,))

    def claim_login(self, name: str, address: str, now: float) -> float:
        """Count a login attempt of ``name`` from ``address`` as a failure, unless the
        throttle holds it back: then nothing is counted and the seconds to wait are
        returned (0 when counted). ``now`` is the clock in epoch seconds."""
        name, address = throttle_key(name), throttle_key(address)
        with self._connection() as conn:
            conn.execute("BEGIN IMMEDIATE")  # read, decide and count as one step
            try:
                conn.execute(
                    "DELETE FROM login_failures WHERE last_at < ? "
                    "AND (known_at IS NULL OR known_at < ?)",
                    (now - FORGET_FAILURES_SECONDS, now - KNOWN_ADDRESS_SECONDS),
                )
                wait = self._login_record(conn, name, address, now).wait(now)
                if wait == 0:
                    conn.execute(
                        "INSERT INTO login_failures (name, address, failures, last_at) "
                        "VALUES (?, ?, 1, ?) ON CONFLICT (name, address) DO UPDATE SET "
                        "failures = CASE WHEN last_at >= ? THEN failures + 1 ELSE 1 END, "
                        "last_at = excluded.last_at",
                        (name, address, now, now - FORGET_FAILURES_SECONDS),
                    )
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        return wait

    def forgive_login(self, name: str, address: str, now: float) -> None:
        """A claimed attempt succeeded: forget this name's failures from this address
        (no one else's) and remember the address as one it logs in from."""
        with self._connection() as conn:
            conn.execute(
                "UPDATE login_failures SET failures = 0, known_at = ? "
                "WHERE name = ? AND address = ?",
                (now, throttle_key(name), throttle_key(address)),
            )

    @staticmethod
    def _login_record(conn: sqlite3.Connection, name: str, address: str, now: float) -> LoginRecord:
        since = now - FORGET_FAILURES_SECONDS
        pair = conn.execute(
            "SELECT failures, last_at, known_at FROM login_failures WHERE name = ? AND address = ?",
            (name, address),
        ).fetchone()
        by_address = conn.execute(
            "SELECT COALESCE(SUM(failures), 0), COALESCE(MAX(last_at), 0) FROM login_failures "
            "WHERE address = ? AND failures > 0 AND last_at >= ?",
            (address, since),
        ).fetchone()
        by_name = conn.execute(
            "SELECT COALESCE(SUM(failures), 0), COALESCE(MAX(last_at), 0) FROM login_failures "
            "WHERE name = ? AND failures > 0 AND last_at >= ?",
            (name, since),
        ).fetchone()
        return login_record(pair, by_address, by_name, now)

    def is_first(self, person: Person) -> bool:
        """The first person keeps the home's own database (the others a folder each)."""
        return not person.folder

    def person_key(self, person: Person) -> str:
        """Each person has a database of their own: every key is ``OWNER``."""
        return OWNER

    def _find(self, name: str) -> tuple[Person, str] | None:
        if not self.path.exists():
            return None
        with self._connection() as conn:
            row = self._row(conn, name)
        return None if row is None else (_person(row), row["password_hash"])

    @staticmethod
    def _row(conn: sqlite3.Connection, name: str) -> sqlite3.Row | None:
        row: sqlite3.Row | None = conn.execute(
            "SELECT id, name, folder, password_hash FROM users WHERE name = ?", (name,)
        ).fetchone()
        return row

    @contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection]:
        owner_only(self.path)
        conn = connect(self.path, wait_ms=WAIT_MS)
        conn.isolation_level = None  # transactions are explicit (BEGIN IMMEDIATE)
        try:
            migrate(conn, MIGRATIONS)
            yield conn
        finally:
            conn.close()
