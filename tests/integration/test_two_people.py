"""Two people, one running app: whatever the second person (bob) asks the app, with ann's
session and memory ids in hand, he sees and changes nothing of the first person's (ann's).

The app is launched once per backend for the module around ``People`` over a home with two
accounts: on SQLite (ann has the home's own database file, bob ``people/2``) and on a real
Postgres server (one shared database: ann's rows are the owner's, bob's his id's). Ann
has chatted and saved a memory before any test runs. Ann's and bob's data are checked
through their own stores' async interface, the very stores the app's handlers use, so the
same assertions hold on both backends.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Coroutine, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
from gradio_client import Client

from app.ui import launch_app
from evals.fixtures import cat_image
from graph.setup import People
from memory import OWNER, AsyncStore, release_connections, utc_now
from memory.postgres.store import PgStore
from memory.sqlite.async_store import AsyncSqliteStore
from tests.integration.conftest import free_port, policy, settings_form
from tests.integration.test_app_client import send, text_of
from tests.support.chat_model import ScriptedChatModel
from tests.support.pg_people import BACKENDS, migrated_postgres, open_accounts
from tests.support.postgres import PostgresServer

SECRET = "zanzibarquokka"  # said by ann, remembered for ann: never in anything of bob's
PASSWORDS = {"ann": "ann's long password", "bob": "bob's long password"}
T = TypeVar("T")


@dataclass
class TwoPeople:
    """The running app, each person's store, and the ids of ann's data."""

    url: str
    model: ScriptedChatModel
    loop: asyncio.AbstractEventLoop  # the tests' own loop (the app runs another)
    ann_store: AsyncStore
    bob_store: AsyncStore
    ann_session: str
    ann_memory: str
    ann_image: str  # the image ann sent, in her media folder
    home: Path
    env: dict[str, str]  # what selects the backend (COMPANION_DATABASE_URL on Postgres)

    def run(self, call: Coroutine[Any, Any, T]) -> T:
        """A store call, awaited on the tests' loop."""
        return self.loop.run_until_complete(call)

    def media(self, path: str, client: Client | None = None) -> httpx.Response:
        """GET a media file the way the page does (Gradio's file route), as ``client``."""
        cookies = client.cookies if client is not None else None
        url = f"{self.url.rstrip('/')}/gradio_api/file={path}"
        return httpx.get(url, cookies=cookies, trust_env=False)

    def client(self, name: str | None = None, password: str | None = None) -> Client:
        auth = None if name is None else (name, password or PASSWORDS[name])
        return Client(self.url, auth=auth, analytics_enabled=False, verbose=False)

    def ann_data(self) -> tuple[Any, ...]:
        """Ann's sessions, messages, memories and profile, as stored."""
        return self.run(data_of(self.ann_store, self.ann_session))

    def sessions(self, store: AsyncStore) -> list[tuple[str, str]]:
        return [(s.id, s.title) for s in self.run(store.list_sessions())]

    def memories(self, store: AsyncStore) -> list[tuple[str, str, str, str]]:
        return self.run(memories_of(store))

    def profile(self, store: AsyncStore) -> dict[str, str]:
        return self.run(store.profile())


async def memories_of(store: AsyncStore) -> list[tuple[str, str, str, str]]:
    ranked = await store.ranked_memories(utc_now())
    return sorted((m.id, m.category, m.key, m.value) for m in ranked)


async def data_of(store: AsyncStore, session_id: str) -> tuple[Any, ...]:
    sessions = [(s.id, s.title) for s in await store.list_sessions()]
    messages = [(m.role, m.content) for m in await store.messages(session_id)]
    return sessions, messages, await memories_of(store), await store.profile()


def shows_secret(outputs: Any) -> bool:
    return SECRET in json.dumps(outputs, ensure_ascii=False, default=str)


@pytest.fixture(scope="module")
def postgres() -> Iterator[PostgresServer]:
    with migrated_postgres() as server:
        yield server


@pytest.fixture(scope="module", params=BACKENDS)
def app(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TwoPeople]:
    backend = request.param
    server = request.getfixturevalue("postgres") if backend == "postgres" else None
    root = tmp_path_factory.mktemp(f"two-people-{backend}") / "home"
    env, accounts = open_accounts(backend, root, server)
    added = {name: accounts.add(name, password) for name, password in PASSWORDS.items()}
    model = ScriptedChatModel(script=policy, name_="scripted-chat")
    flags = {"home": root, "provider": "openai-compatible", "base_url": "http://127.0.0.1:9/v1"}
    people = People(flags, env=env, chat_model=model)
    stores = {name: people.factory(name).store for name in PASSWORDS}
    assert stores["ann"].media_dir == root / "media"
    assert stores["bob"].media_dir == root / "people" / "2" / "media"
    if backend == "sqlite":
        assert all(isinstance(store, AsyncSqliteStore) for store in stores.values())
        assert stores["ann"].location == str(root / "companion.db")
        assert stores["bob"].location == str(root / "people" / "2" / "companion.db")
    else:
        ann_pg, bob_pg = stores["ann"], stores["bob"]
        assert isinstance(ann_pg, PgStore) and isinstance(bob_pg, PgStore)
        assert (ann_pg.person, bob_pg.person) == (OWNER, str(added["bob"].id))
    loop = asyncio.new_event_loop()
    for store in stores.values():
        loop.run_until_complete(store.set_profile({"chat_model": "scripted-chat"}))
    photo = root.parent / "photo.png"
    photo.write_bytes(cat_image("black"))
    demo, url = launch_app(people, port=free_port())
    try:
        client = Client(url, auth=("ann", PASSWORDS["ann"]), analytics_enabled=False, verbose=False)
        send(client, f"my password hint is {SECRET}", [str(photo)])
        (session,) = loop.run_until_complete(stores["ann"].list_sessions())
        image = loop.run_until_complete(stores["ann"].messages(session.id))[0].image_path
        assert image and Path(image).parent == root / "media"
        client.predict("", "identity", "name", f"Ann {SECRET}", api_name="/update_memory")
        ((memory, *_),) = loop.run_until_complete(memories_of(stores["ann"]))
        yield TwoPeople(
            url, model, loop, stores["ann"], stores["bob"], session.id, memory, image, root, env
        )
    finally:
        demo.close()
        loop.run_until_complete(release_connections())  # the tests' loop's pool, if any
        loop.close()


def test_bob_loads_none_of_anns_chats_and_ann_loads_hers(app: TwoPeople) -> None:
    chat, line, _ = app.client("bob").predict(api_name="/load")
    assert chat == [] and line == "model: scripted-chat"
    assert app.sessions(app.bob_store) == []
    chat, *_ = app.client("ann").predict(api_name="/load")
    assert [m["role"] for m in chat] == ["user", "assistant"]
    assert text_of(chat[0]) == f"my password hint is {SECRET}"
    assert text_of(chat[1]).startswith(f"You said: my password hint is {SECRET}")


def test_bob_cannot_open_rename_or_delete_anns_chat(app: TwoPeople) -> None:
    before = app.ann_data()
    bob = app.client("bob")
    assert not shows_secret(bob.predict(app.ann_session, api_name="/switch_session"))
    assert not shows_secret(
        bob.predict(app.ann_session, "Bob was here", api_name="/rename_session")
    )
    assert not shows_secret(bob.predict(app.ann_session, api_name="/delete_session"))
    assert app.ann_data() == before
    assert app.sessions(app.bob_store) == []


def test_bob_neither_sees_nor_changes_anns_memories(app: TwoPeople) -> None:
    bob = app.client("bob")
    table, status = bob.predict(api_name="/memories")
    assert table["data"] == [] and status.startswith("_No memories yet")
    before = app.ann_data()
    outputs = bob.predict(app.ann_memory, "identity", "name", "Bob", api_name="/update_memory")
    assert not shows_secret(outputs) and outputs[1].startswith("❌")
    assert not shows_secret(bob.predict(app.ann_memory, api_name="/delete_memory"))
    assert app.ann_data() == before
    assert app.memories(app.bob_store) == []


def test_bobs_undo_does_not_undo_anns_sql_edit(app: TwoPeople) -> None:
    edit = f"UPDATE memories SET value = 'Ann Smith {SECRET}' WHERE key = 'name'"
    assert app.run(app.ann_store.run_sql(edit, now=utc_now())) == {"updated": 1}  # ann's
    before = app.ann_data()
    _, status = app.client("bob").predict(api_name="/undo_sql_edit")
    assert status.startswith("Nothing to undo")
    assert app.ann_data() == before


def undo_sql(app: TwoPeople, name: str) -> subprocess.CompletedProcess[str]:
    """``companion undo-sql --user NAME`` in a process of its own, on the app's backend."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COMPANION_", "OPENROUTER_"))}
    return subprocess.run(
        [sys.executable, "-m", "app.cli", "undo-sql", "--home", str(app.home), "--user", name],
        capture_output=True,
        text=True,
        timeout=120,
        env={**env, **app.env},
    )


def test_undo_sql_on_the_command_line_undoes_that_persons_newest_edit(app: TwoPeople) -> None:
    bob_memory = app.run(app.bob_store.create_memory("identity", "pet", "a cat"))
    edit = "UPDATE memories SET value = 'a dog' WHERE key = 'pet'"
    assert app.run(app.bob_store.run_sql(edit, now=utc_now())) == {"updated": 1}
    (*_, ann_value), *_ = app.memories(app.ann_store)
    ann_edit = f"UPDATE memories SET value = 'Ann Jones {SECRET}' WHERE key = 'name'"
    assert app.run(app.ann_store.run_sql(ann_edit, now=utc_now())) == {"updated": 1}
    ann_before = app.ann_data()
    undone = undo_sql(app, "bob")
    assert undone.returncode == 0, undone.stderr
    assert "restored memories" in undone.stdout and SECRET not in undone.stdout
    assert app.memories(app.bob_store) == [(bob_memory.id, "identity", "pet", "a cat")]
    assert app.ann_data() == ann_before  # ann's newer edit stands
    undone = undo_sql(app, "ann")
    assert undone.returncode == 0 and "restored memories" in undone.stdout, undone.stderr
    assert [m[3] for m in app.memories(app.ann_store)] == [ann_value]
    nobody = undo_sql(app, "carol")
    assert nobody.returncode == 2 and "no user carol" in nobody.stderr


def test_bobs_settings_are_his_alone(app: TwoPeople) -> None:
    before = app.ann_data()
    status, _ = app.client("bob").predict(
        *settings_form(latitude=12.5, longitude=99.5),
        "You are Bob's pirate.",
        api_name="/save_settings",
    )
    assert status.startswith("✅ Saved")
    assert app.profile(app.bob_store)["latitude"] == "12.5"
    assert app.ann_data() == before
    assert "latitude" not in app.profile(app.ann_store)


def test_bobs_turn_knows_nothing_of_ann(app: TwoPeople) -> None:
    chat, *_ = send(app.client("bob"), "what do you know about me?")
    assert [text_of(m) for m in chat] == [
        "what do you know about me?",
        "You said: what do you know about me?",
    ]
    assert not any(shows_secret(m.content) for m in app.model.calls[-1]["messages"])
    (session,) = app.run(app.bob_store.list_sessions())
    assert session.id != app.ann_session
    bobs = app.run(app.bob_store.messages(session.id))
    assert SECRET not in json.dumps([m.content for m in bobs])


@pytest.mark.parametrize(
    ("name", "password"),
    [
        ("ann", "bob's long password"),  # someone else's password
        ("ann", "wrong password"),
        ("carol", "carol's long password"),  # no such person
        ("companion", "ann's long password"),  # the single-password user is gone
    ],
)
def test_a_wrong_login_is_refused(app: TwoPeople, name: str, password: str) -> None:
    with pytest.raises(ValueError, match="Could not login"):
        app.client(name, password)
    assert app.client("ann").predict(api_name="/load")[0]  # the right one still gets in


def test_with_accounts_there_is_no_way_in_without_one(app: TwoPeople) -> None:
    with pytest.raises(ValueError):
        app.client()
    assert app.media(app.ann_image).status_code in (401, 404)


def test_ann_downloads_her_own_image_however_it_is_spelled(app: TwoPeople) -> None:
    ann = app.client("ann")
    for path in spellings(app.ann_image):
        answer = app.media(path, ann)
        assert answer.status_code == 200 and answer.content == Path(app.ann_image).read_bytes()


def spellings(path: str) -> list[str]:
    """Ways to name ann's image in the file route: as is, through bob's own media folder
    (dots escaped, so no client tidies them away), and with a doubled slash."""
    folder = Path(path).parent
    detour = f"{folder}/../people/2/media/%2E%2E/%2E%2E/%2E%2E/media/{Path(path).name}"
    return [path, detour, path.replace("/media/", "//media/")]


def test_bob_cannot_download_anns_image(app: TwoPeople) -> None:
    bob = app.client("bob")
    for path in spellings(app.ann_image):
        answer = app.media(path, bob)
        assert answer.status_code == 404, path
