"""``graph.setup.People``: one person with no login until accounts exist, then a factory
(and a database) per person, and no way in for a name that is no one's."""

from __future__ import annotations

from pathlib import Path

import pytest

from graph.setup import People, UnknownPerson
from memory.sqlite.accounts import SqliteAccounts


def people(home: Path) -> People:
    return People({"home": home, "provider": "openai-compatible"}, env={})


def test_without_accounts_everyone_is_the_one_person(tmp_path: Path) -> None:
    single = people(tmp_path)
    assert not single.accounts_on
    assert single.factory(None) is single.default
    assert single.factory("companion") is single.default  # COMPANION_PASSWORD's user
    assert single.media_owners() == {}
    assert single.media_dirs() == [tmp_path / "media"]


def test_each_person_gets_their_own_database(tmp_path: Path) -> None:
    accounts = SqliteAccounts.open_home(tmp_path)
    accounts.add("ann", "ann-password-1")
    accounts.add("bob", "bob-password-2")
    with_accounts = people(tmp_path)
    assert with_accounts.accounts_on
    ann, bob = with_accounts.factory("ann"), with_accounts.factory("Bob")
    assert ann is with_accounts.default  # the first person keeps the home's own database
    assert ann.store.location != bob.store.location
    assert Path(bob.store.location).parent == tmp_path / "people" / "2"
    assert with_accounts.factory("bob") is bob  # one factory per person
    assert with_accounts.media_owners() == {
        "ann": tmp_path / "media",
        "bob": tmp_path / "people" / "2" / "media",
    }
    assert with_accounts.check("ann", "ann-password-1")
    assert not with_accounts.check("ann", "bob-password-2")


@pytest.mark.parametrize("name", [None, "", "companion", "carol"])
def test_with_accounts_a_request_naming_no_one_gets_nothing(
    tmp_path: Path, name: str | None
) -> None:
    SqliteAccounts.open_home(tmp_path).add("ann", "ann-password-1")
    with pytest.raises(UnknownPerson):
        people(tmp_path).factory(name)
