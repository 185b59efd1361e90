"""The shared database's URLs: from a flag or the environment (never the profile), Postgres
only, and no password on a command line."""

from __future__ import annotations

import pytest

from config.settings import ConfigError, database_admin_url, database_url, database_user

APP = "postgresql://companion:secret@db.example:5432/companion"


def test_unset_means_sqlite() -> None:
    assert database_url({}, {}) is None
    assert database_url({"database_url": None}, {"COMPANION_DATABASE_URL": ""}) is None
    assert database_admin_url({}, {}) is None


@pytest.mark.parametrize(
    "url",
    [APP, "postgres://companion@db.example/companion", "POSTGRESQL://companion@[::1]:5433/c"],
)
def test_postgres_urls_from_the_environment_are_taken_as_given(url: str) -> None:
    assert database_url({}, {"COMPANION_DATABASE_URL": f" {url} "}) == url


def test_a_flag_wins_over_the_environment() -> None:
    flags = {"database_url": "postgresql://companion@flag.example/companion"}
    env = {"COMPANION_DATABASE_URL": APP}
    assert database_url(flags, env) == flags["database_url"]
    admin = {"admin_url": "postgresql://postgres@flag.example/companion"}
    env = {"COMPANION_DATABASE_ADMIN_URL": "postgresql://postgres:pw@env.example/companion"}
    assert database_admin_url(admin, env) == admin["admin_url"]
    assert database_admin_url({}, env) == env["COMPANION_DATABASE_ADMIN_URL"]


def test_the_admin_url_and_the_app_url_are_separate_settings() -> None:
    env = {"COMPANION_DATABASE_ADMIN_URL": "postgresql://postgres:pw@db/companion"}
    assert database_url({}, env) is None
    assert database_admin_url({}, {"COMPANION_DATABASE_URL": APP}) is None


@pytest.mark.parametrize(
    "url",
    ["sqlite:///home/companion.db", "mysql://u@h/db", "host=db dbname=companion", "http://db/x"],
)
def test_anything_but_postgres_is_refused_naming_the_variable(url: str) -> None:
    with pytest.raises(ConfigError, match=r"^COMPANION_DATABASE_URL: only a Postgres URL"):
        database_url({}, {"COMPANION_DATABASE_URL": url})
    with pytest.raises(ConfigError, match=r"^--admin-url: only a Postgres URL"):
        database_admin_url({"admin_url": url}, {})


def test_a_bad_port_is_refused_before_any_connection() -> None:
    with pytest.raises(ConfigError, match="not a valid URL"):
        database_url({}, {"COMPANION_DATABASE_URL": "postgresql://u@db:99999/companion"})


@pytest.mark.parametrize(
    "url",
    ["postgresql://postgres:hunter2@db/companion", "postgresql://postgres@db/c?password=hunter2"],
)
def test_a_password_on_the_command_line_is_refused_without_repeating_it(url: str) -> None:
    for flag, read in (("admin_url", database_admin_url), ("database_url", database_url)):
        with pytest.raises(ConfigError, match="PGPASSWORD") as caught:
            read({flag: url}, {})
        assert "hunter2" not in str(caught.value)


def test_a_password_in_the_environment_is_fine() -> None:
    env = {"COMPANION_DATABASE_ADMIN_URL": "postgresql://postgres:hunter2@db/companion"}
    assert database_admin_url({}, env) == env["COMPANION_DATABASE_ADMIN_URL"]


def test_the_app_role_is_the_urls_user() -> None:
    assert database_user(APP) == "companion"
    assert database_user("postgresql://app%2Drole:pw@db/companion") == "app-role"
    with pytest.raises(ConfigError, match="names no user"):
        database_user("postgresql://db.example/companion")
