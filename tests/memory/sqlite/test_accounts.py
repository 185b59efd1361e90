"""The accounts registry: scrypt password hashes, names, and one folder per person."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from memory import AccountError, Person
from memory.rules.passwords import hash_password, verify_password
from memory.sqlite.accounts import SqliteAccounts

PASSWORD = "correct horse"


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_password_verifies_against_its_hash_and_no_other() -> None:
    stored = hash_password(PASSWORD)
    kind, n, r, p, _salt, _digest = stored.split("$")
    assert (kind, n, r, p) == ("scrypt", "16384", "8", "1")
    assert verify_password(PASSWORD, stored)
    assert not verify_password("correct horsE", stored)


def test_every_hash_has_its_own_salt() -> None:
    first, second = hash_password(PASSWORD), hash_password(PASSWORD)
    assert first.split("$")[4] != second.split("$")[4]
    assert first != second


@pytest.mark.parametrize(
    "stored",
    [
        "",
        "plain",
        "scrypt$16384$8$1$c2FsdA==",
        "bcrypt$16384$8$1$c2FsdA==$aGFzaA==",
        "scrypt$many$8$1$c2FsdA==$aGFzaA==",
        "scrypt$16384$8$1$not base64!$aGFzaA==",
        "scrypt$16384$8$1$c2FsdA==$",
        "scrypt$1000$8$1$c2FsdA==$aGFzaA==",  # n is not a power of two
        "scrypt$1048576$8$1$c2FsdA==$aGFzaA==",  # would need 1 GiB
    ],
)
def test_a_malformed_stored_value_never_verifies(stored: str) -> None:
    assert verify_password(PASSWORD, stored) is False


def test_add_check_get_and_people(tmp_path: Path) -> None:
    accounts = SqliteAccounts.open_home(tmp_path)
    assert not accounts.enabled()
    assert accounts.people() == [] and accounts.get("ann") is None
    assert not (tmp_path / "accounts.db").exists()  # nothing is created by looking

    ann = accounts.add("ann", PASSWORD)
    bob = accounts.add("Bob.B-2_", "another password")
    assert accounts.enabled()
    assert ann == Person(id=1, name="ann", folder="")
    assert bob == Person(id=2, name="Bob.B-2_", folder="people/2")
    assert accounts.check("ann", PASSWORD) == ann
    assert accounts.check("ann", "another password") is None
    assert accounts.get("bob.b-2_") == bob
    assert accounts.people() == [ann, bob]


def test_names_are_compared_ignoring_case(tmp_path: Path) -> None:
    accounts = SqliteAccounts.open_home(tmp_path)
    ann = accounts.add("Ann", PASSWORD)
    assert accounts.get("ANN") == ann
    assert accounts.check("aNN", PASSWORD) == ann
    with pytest.raises(AccountError, match="taken"):
        accounts.add("ann", PASSWORD)


def test_a_taken_name_is_refused(tmp_path: Path) -> None:
    accounts = SqliteAccounts.open_home(tmp_path)
    accounts.add("ann", PASSWORD)
    with pytest.raises(AccountError, match="taken"):
        accounts.add("ann", "a different one")
    assert len(accounts.people()) == 1


@pytest.mark.parametrize("name", ["", "a" * 41, "a/b", "../x", "name with space", "ann\n"])
def test_a_bad_name_is_refused(tmp_path: Path, name: str) -> None:
    accounts = SqliteAccounts.open_home(tmp_path)
    with pytest.raises(AccountError, match="not a valid name"):
        accounts.add(name, PASSWORD)
    assert not accounts.enabled()


def test_forty_characters_is_the_longest_name(tmp_path: Path) -> None:
    assert SqliteAccounts.open_home(tmp_path).add("a" * 40, PASSWORD).name == "a" * 40


def test_a_short_password_is_refused(tmp_path: Path) -> None:
    accounts = SqliteAccounts.open_home(tmp_path)
    with pytest.raises(AccountError, match="at least 8"):
        accounts.add("ann", "1234567")
    assert not accounts.enabled()
    assert accounts.add("ann", "12345678").name == "ann"


def test_the_first_person_adopts_the_home_and_later_ones_get_their_own_folder(
    tmp_path: Path,
) -> None:
    accounts = SqliteAccounts.open_home(tmp_path)
    ann = accounts.add("ann", PASSWORD)
    bob = accounts.add("bob", PASSWORD)
    assert ann.folder == "" and ann.home(tmp_path) == tmp_path
    assert bob.folder == "people/2" and bob.home(tmp_path) == tmp_path / "people" / "2"
    assert bob.home(tmp_path).is_dir()
    assert mode(bob.home(tmp_path)) == 0o700
    assert mode(tmp_path / "people") == 0o700


def test_the_registry_file_is_owner_only(tmp_path: Path) -> None:
    SqliteAccounts.open_home(tmp_path).add("ann", PASSWORD)
    assert mode(tmp_path / "accounts.db") == 0o600


def test_an_unknown_name_checks_as_none(tmp_path: Path) -> None:
    accounts = SqliteAccounts.open_home(tmp_path)
    assert accounts.check("ann", PASSWORD) is None  # no registry yet
    accounts.add("ann", PASSWORD)
    assert accounts.check("nobody", PASSWORD) is None


def test_set_password(tmp_path: Path) -> None:
    accounts = SqliteAccounts.open_home(tmp_path)
    ann = accounts.add("ann", PASSWORD)
    accounts.set_password("ANN", "a new password")
    assert accounts.check("ann", PASSWORD) is None
    assert accounts.check("ann", "a new password") == ann
    with pytest.raises(AccountError, match="no user"):
        accounts.set_password("nobody", "a new password")
    with pytest.raises(AccountError, match="at least 8"):
        accounts.set_password("ann", "short")
    assert accounts.check("ann", "a new password") == ann
