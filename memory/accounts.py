"""The people of one Companion home: their names, password hashes and folders.

On SQLite every person has their own database file and media folder, so a query can only
ever see its own person's data: isolation by construction, not by a ``WHERE`` clause
someone could forget (memory_sql's guard already forbids ATTACH). The first person adopts
the home's existing single-person database in place — nothing is moved, so nothing can
be lost — and later people get ``people/<id>/``. The default stays one person with no
login; accounts are enabled once a first person is added. The registry lives in
``<home>/accounts.db`` and is read rarely (a login, the CLI), so every call opens its own
short-lived connection.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
import secrets
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from memory.db import connect, migrate, owner_only
from memory.store import format_time, utc_now

NAME_PATTERN = re.compile(r"[A-Za-z0-9_.-]{1,40}")  # matched whole; compared ignoring case
MIN_PASSWORD = 8
FOLDER_MODE = 0o700  # owner only: a person's folder holds their conversations and images
WAIT_MS = 5_000

# scrypt's cost: 16 MiB and ~50 ms per hash, a login's budget (RFC 7914's interactive set).
SCRYPT_N = 2**14
SCRYPT_R = 8
SCRYPT_P = 1
SCRYPT_LEN = 32
SALT_BYTES = 16
SCRYPT_MAXMEM = 64 * 1024 * 1024  # a stored value asking for more is refused, not computed
# Checked for an unknown name, so it costs one scrypt like a known name's wrong password.
# Its digest is all zeros: no password is found to match it.
DUMMY_HASH = f"scrypt${SCRYPT_N}${SCRYPT_R}${SCRYPT_P}${'A' * 22}==${'A' * 43}="

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
)
LOGIN_DAYS = 30  # a login lasts this long, then the person logs in again


@dataclass(frozen=True)
class Person:
    """One person of the home and where their data lives."""

    id: int
    name: str
    folder: str  # relative to the home: "" for the first person, else "people/<id>"

    def home(self, root: Path) -> Path:
        """This person's own home folder (their companion.db and media/) under ``root``."""
        return root / self.folder if self.folder else root


class AccountError(Exception):
    """An account change that cannot be made: a bad or taken name, a short password."""


def hash_password(password: str) -> str:
    """The stored form of a password: scrypt with a random salt, its parameters kept."""
    salt = secrets.token_bytes(SALT_BYTES)
    digest = _scrypt(password, salt, SCRYPT_N, SCRYPT_R, SCRYPT_P, SCRYPT_LEN)
    return "$".join(
        ("scrypt", str(SCRYPT_N), str(SCRYPT_R), str(SCRYPT_P), _b64(salt), _b64(digest))
    )


def verify_password(password: str, stored: str) -> bool:
    """True when ``password`` is the one ``stored`` was made from (False if malformed)."""
    try:
        kind, n, r, p, salt, digest = stored.split("$")
        if kind != "scrypt":
            return False
        expected = base64.b64decode(digest, validate=True)
        actual = _scrypt(
            password, base64.b64decode(salt, validate=True), int(n), int(r), int(p), len(expected)
        )
    except (ValueError, binascii.Error, OverflowError):  # a bad field or too costly
        return False
    return bool(expected) and hmac.compare_digest(actual, expected)


def _scrypt(password: str, salt: bytes, n: int, r: int, p: int, length: int) -> bytes:
    return hashlib.scrypt(
        password.encode(), salt=salt, n=n, r=r, p=p, dklen=length, maxmem=SCRYPT_MAXMEM
    )


def token_hash(token: str) -> str:
    """How a login token is kept: its SHA-256 (a token is random, so no salt is needed)."""
    return hashlib.sha256(token.encode()).hexdigest()


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _person(row: sqlite3.Row) -> Person:
    return Person(id=row["id"], name=row["name"], folder=row["folder"])


class Accounts:
    """The registry of a home's people (``accounts.db``); every call opens its own
    connection, and nothing is created until the first person is added."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    @classmethod
    def open_home(cls, home: Path) -> Accounts:
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
        _check_name(name)
        _check_password(password)
        password_hash = hash_password(password)
        self.root.mkdir(mode=FOLDER_MODE, parents=True, exist_ok=True)
        with self._connection() as conn:
            conn.execute("BEGIN IMMEDIATE")  # the next id and folder are ours until COMMIT
            try:
                if self._row(conn, name) is not None:
                    raise AccountError(f"the name {name!r} is taken")
                count, last = conn.execute("SELECT COUNT(*), MAX(id) FROM users").fetchone()
                person_id = (last or 0) + 1
                folder = "" if count == 0 else f"people/{person_id}"
                conn.execute(
                    "INSERT INTO users (id, name, password_hash, folder, created_at) "
                    "VALUES (?, ?, ?, ?, ?)",
                    (person_id, name, password_hash, folder, format_time(utc_now())),
                )
                person = Person(id=person_id, name=name, folder=folder)
                if folder:
                    _make_folder(person.home(self.root))
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        return person

    def check(self, name: str, password: str) -> Person | None:
        """The person this name and password log in as, or None."""
        row = self._find(name)
        if row is None:
            verify_password(password, DUMMY_HASH)  # as slow as a wrong password
            return None
        return _person(row) if verify_password(password, row["password_hash"]) else None

    def get(self, name: str) -> Person | None:
        """The person of this name (any case), or None."""
        row = self._find(name)
        return None if row is None else _person(row)

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
        _check_password(password)
        with self._connection() as conn:
            conn.execute(
                "UPDATE users SET password_hash = ? WHERE name = ?",
                (hash_password(password), name),
            )
            conn.execute("DELETE FROM logins WHERE name = ?", (name,))  # log everyone out

    def add_login(self, token: str, name: str) -> None:
        """Keep a login (Gradio's cookie token) for every process; drop expired ones."""
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

    def _find(self, name: str) -> sqlite3.Row | None:
        if not self.path.exists():
            return None
        with self._connection() as conn:
            return self._row(conn, name)

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


def _check_name(name: str) -> None:
    if not NAME_PATTERN.fullmatch(name):
        raise AccountError(
            f"{name!r} is not a valid name: use 1–40 letters, digits, '_', '.' or '-'"
        )


def _check_password(password: str) -> None:
    if len(password) < MIN_PASSWORD:
        raise AccountError(f"the password is too short: use at least {MIN_PASSWORD} characters")


def _make_folder(path: Path) -> None:
    path.parent.mkdir(mode=FOLDER_MODE, parents=True, exist_ok=True)
    path.mkdir(mode=FOLDER_MODE, exist_ok=True)
    path.chmod(FOLDER_MODE)  # mkdir's mode yields to the umask, and the folder may exist
