"""The people of one Companion home: their names, password hashes and folders.

On SQLite every person has their own database file and media folder, so a query can only
ever see its own person's data: isolation by construction, not by a ``WHERE`` clause
someone could forget (memory_sql's guard already forbids ATTACH). The first person adopts
the home's existing single-person database in place — nothing is moved, so nothing can
be lost — and later people get ``people/<id>/``. The default stays one person with no
login; accounts are enabled once a first person is added. The registry lives in
``<home>/accounts.db`` and is read rarely (a login, the CLI), so every call opens its own
short-lived connection.

It also keeps what every app process of the home must agree on: the logins (token hashes,
at most ``MAX_LOGINS_PER_PERSON`` each) and the login throttle. Failed logins are counted
per name tried and client address (``login_failures``); three budgets are read from those
rows — one name from one address, every name from one address, one name from every
address it never logged in from — and a success forgives only its own name from its own
address, so nobody's login resets the count of guesses at someone else.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
import secrets
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

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
)
LOGIN_DAYS = 30  # a login lasts this long, then the person logs in again
MAX_LOGINS_PER_PERSON = 20  # a new login beyond these ends the person's oldest

# The login throttle. An attempt counts as a failure when it starts (a burst of parallel
# guesses cannot slip in before the first result) and a success forgives it. A budget
# spent locks for FIRST_LOCK_SECONDS, doubling with each further failure.
LOGIN_FREE_FAILURES = 5  # one name from one address
ADDRESS_FREE_FAILURES = 20  # every name from one address (people behind one router)
# One name from every address that it never logged in from: a lock here shuts out
# strangers only, so guessing from many addresses cannot lock its owner out at home.
ACCOUNT_FREE_FAILURES = 50
FIRST_LOCK_SECONDS = 2.0
MAX_LOCK_SECONDS = 300.0
FORGET_FAILURES_SECONDS = 3600.0  # a failure older than this no longer counts
KNOWN_ADDRESS_SECONDS = LOGIN_DAYS * 86_400.0  # a login from an address makes it known
MAX_KEY_CHARS = 64  # of a name tried or an address, as kept (both come from outside)


@dataclass(frozen=True)
class Person:
    """One person of the home and where their data lives."""

    id: int
    name: str
    folder: str  # relative to the home: "" for the first person, else "people/<id>"

    def home(self, root: Path) -> Path:
        """This person's own home folder (their companion.db and media/) under ``root``."""
        return root / self.folder if self.folder else root


@dataclass(frozen=True)
class Failures:
    """Failed logins counted against one budget, and when the latest began (epoch s)."""

    count: int = 0
    last: float = 0.0

    def locked_until(self, free: int) -> float:
        """When this budget's lock ends (0 when it is not spent: another process's clock
        may be a little ahead of ours)."""
        lock = lock_seconds(self.count, free)
        return self.last + lock if lock else 0.0


def lock_seconds(failures: int, free: int) -> float:
    """How long a budget of ``free`` failures locks after ``failures`` (0: not locked)."""
    if failures < free:
        return 0.0
    return min(FIRST_LOCK_SECONDS * 2.0 ** min(failures - free, 16), MAX_LOCK_SECONDS)


@dataclass(frozen=True)
class LoginRecord:
    """What the registry holds about a login attempt's name and address."""

    pair: Failures  # this name from this address
    address: Failures  # every name from this address
    account: Failures  # this name from every address
    known: bool  # this name has logged in from this address lately

    def wait(self, now: float) -> float:
        """Seconds before the attempt may be made (0: now)."""
        ends = [
            self.pair.locked_until(LOGIN_FREE_FAILURES),
            self.address.locked_until(ADDRESS_FREE_FAILURES),
        ]
        if not self.known:
            ends.append(self.account.locked_until(ACCOUNT_FREE_FAILURES))
        return max(0.0, max(ends) - now)


def throttle_key(text: str) -> str:
    """How a name tried or an address is kept in ``login_failures``."""
    return text.strip().lower()[:MAX_KEY_CHARS]


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


def login_record(
    pair: Sequence[Any] | None,
    by_address: Sequence[Any],
    by_name: Sequence[Any],
    now: float,
) -> LoginRecord:
    """A ``LoginRecord`` from the rows both registries read: the pair's (failures,
    last_at, known_at) or None, and the (sum, latest) of failures by address and by name."""
    fresh = pair is not None and pair[1] >= now - FORGET_FAILURES_SECONDS
    known = pair is not None and pair[2] is not None and pair[2] >= now - KNOWN_ADDRESS_SECONDS
    return LoginRecord(
        pair=Failures(int(pair[0]), float(pair[1])) if pair is not None and fresh else Failures(),
        address=Failures(int(by_address[0]), float(by_address[1])),
        account=Failures(int(by_name[0]), float(by_name[1])),
        known=known,
    )


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
