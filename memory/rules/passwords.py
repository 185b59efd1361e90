"""Passwords."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
import secrets
import shutil
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memory.errors import AccountError
from memory.types import Person

NAME_PATTERN = re.compile(r"[A-Za-z0-9_.-]{1,40}")  # matched whole; compared ignoring case
MIN_PASSWORD = 8
FOLDER_MODE = 0o700  # owner only: a person's folder holds their conversations and images


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


def check_name(name: str) -> None:
    if not NAME_PATTERN.fullmatch(name):
        raise AccountError(
            f"{name!r} is not a valid name: use 1–40 letters, digits, '_', '.' or '-'"
        )


def check_password(password: str) -> None:
    if len(password) < MIN_PASSWORD:
        raise AccountError(f"the password is too short: use at least {MIN_PASSWORD} characters")


def make_folder(path: Path) -> None:
    path.parent.mkdir(mode=FOLDER_MODE, parents=True, exist_ok=True)
    path.mkdir(mode=FOLDER_MODE, exist_ok=True)
    path.chmod(FOLDER_MODE)  # mkdir's mode yields to the umask, and the folder may exist


def remove_folder(root: Path, person: Person) -> None:
    """Delete a removed person's own folder and everything in it (the first person's is
    the home itself: that stays, and ``app.deleting`` empties what of it is theirs)."""
    folder = person.home(root)
    if person.folder and folder.exists():
        shutil.rmtree(folder)


class PasswordRegistry(ABC):
    """What both account registries share: a login checked against the stored hash (as
    slow for an unknown name as for a wrong password) and a person found by name."""

    @abstractmethod
    def _find(self, name: str) -> tuple[Person, str] | None:
        """The person of this name (any case) and their password hash, or None."""

    def check(self, name: str, password: str) -> Person | None:
        """The person this name and password log in as, or None."""
        found = self._find(name)
        if found is None:
            verify_password(password, DUMMY_HASH)  # as slow as a wrong password
            return None
        person, password_hash = found
        return person if verify_password(password, password_hash) else None

    def get(self, name: str) -> Person | None:
        """The person of this name (any case), or None."""
        found = self._find(name)
        return None if found is None else found[0]
