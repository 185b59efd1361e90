"""``SharedLogins``' memory: a token is asked of the registry once per recheck period,
a registry that fails logs nobody in (and does not break the request), and an ended or
unknown token is nobody's."""

from __future__ import annotations

from pathlib import Path

from app.logins import SharedLogins
from memory.sqlite.accounts import SqliteAccounts


class Counting(SqliteAccounts):
    """The real SQLite registry, counting its lookups (and able to fail)."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.lookups = 0
        self.down = False

    def login_name(self, token: str) -> str | None:
        self.lookups += 1
        if self.down:
            raise OSError("the registry is unreachable")
        return super().login_name(token)


def test_a_token_is_asked_once_per_period(tmp_path: Path) -> None:
    now = [0.0]
    registry = Counting(tmp_path / "accounts.db")
    mine = SharedLogins(registry, clock=lambda: now[0])
    other = SharedLogins(registry, clock=lambda: now[0])  # another process
    mine["token-1"] = "ann"
    assert other.get("token-1") == "ann" and registry.lookups == 1
    assert other["token-1"] == "ann" and "token-1" in other and registry.lookups == 1
    now[0] += SharedLogins.RECHECK_SECONDS
    del mine["token-1"]  # logged out through this process
    assert other.get("token-1") is None and registry.lookups == 2
    assert list(other) == []


def test_nobody_for_an_unknown_token_or_a_registry_that_fails(tmp_path: Path) -> None:
    registry = Counting(tmp_path / "accounts.db")
    logins = SharedLogins(registry)
    assert logins.get("never-issued") is None
    assert logins.get(None) is None and logins.get("") is None
    logins["token-2"] = "bob"
    fresh = SharedLogins(registry)
    registry.down = True
    assert fresh.get("token-2") is None  # refused, not raised: the app stays up
    assert "token-2" not in fresh
