"""Two people, one running app: whatever the second person (bob) asks the app, with ann's
session and memory ids in hand, he sees and changes nothing of the first person's (ann's).

The app is launched once for the module around ``People`` over a home with two accounts;
ann (the home's own database) has chatted and saved a memory before any test runs. Ann's
and bob's data are checked in their own stores, the very ones the app's handlers use.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from gradio_client import Client

from app.ui import launch_app
from evals.fixtures import cat_image
from graph.setup import People
from memory.accounts import Accounts
from memory.memories import all_memories
from memory.sql_guard import run_sql
from memory.store import Store
from tests.integration.conftest import free_port, policy, settings_form
from tests.integration.test_app_client import send, text_of
from tests.support.chat_model import ScriptedChatModel

SECRET = "zanzibarquokka"  # said by ann, remembered for ann: never in anything of bob's
PASSWORDS = {"ann": "ann's long password", "bob": "bob's long password"}


@dataclass
class TwoPeople:
    """The running app, each person's store, and the ids of ann's data."""

    url: str
    model: ScriptedChatModel
    ann_store: Store
    bob_store: Store
    ann_session: str
    ann_memory: str
    ann_image: str  # the image ann sent, in her media folder

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
        store = self.ann_store
        sessions = [(s.id, s.title) for s in store.list_sessions()]
        messages = [(m.role, m.content) for m in store.messages(self.ann_session)]
        memories = [(m.id, m.category, m.key, m.value) for m in all_memories(store)]
        return sessions, messages, memories, store.profile()


def shows_secret(outputs: Any) -> bool:
    return SECRET in json.dumps(outputs, ensure_ascii=False, default=str)


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TwoPeople]:
    root = tmp_path_factory.mktemp("two-people") / "home"
    accounts = Accounts.open_home(root)
    for name, password in PASSWORDS.items():
        accounts.add(name, password)
    model = ScriptedChatModel(script=policy, name_="scripted-chat")
    flags = {"home": root, "provider": "openai-compatible", "base_url": "http://127.0.0.1:9/v1"}
    people = People(flags, env={}, chat_model=model)
    stores = {name: people.factory(name).store.blocking for name in PASSWORDS}
    for store in stores.values():
        store.set_profile({"chat_model": "scripted-chat"})
    assert stores["ann"].path == root / "companion.db"
    assert stores["bob"].path == root / "people" / "2" / "companion.db"
    photo = root.parent / "photo.png"
    photo.write_bytes(cat_image("black"))
    demo, url = launch_app(people, port=free_port())
    try:
        ann = Client(url, auth=("ann", PASSWORDS["ann"]), analytics_enabled=False, verbose=False)
        send(ann, f"my password hint is {SECRET}", [str(photo)])
        (session,) = stores["ann"].list_sessions()
        image = stores["ann"].messages(session.id)[0].image_path
        assert image and Path(image).parent == root / "media"
        ann.predict("", "identity", "name", f"Ann {SECRET}", api_name="/update_memory")
        (memory,) = all_memories(stores["ann"])
        yield TwoPeople(url, model, stores["ann"], stores["bob"], session.id, memory.id, image)
    finally:
        demo.close()


def test_bob_loads_none_of_anns_chats_and_ann_loads_hers(app: TwoPeople) -> None:
    chat, line, _ = app.client("bob").predict(api_name="/load")
    assert chat == [] and line == "model: scripted-chat"
    assert app.bob_store.list_sessions() == []
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
    assert app.bob_store.list_sessions() == []


def test_bob_neither_sees_nor_changes_anns_memories(app: TwoPeople) -> None:
    bob = app.client("bob")
    table, status = bob.predict(api_name="/memories")
    assert table["data"] == [] and status.startswith("_No memories yet")
    before = app.ann_data()
    outputs = bob.predict(app.ann_memory, "identity", "name", "Bob", api_name="/update_memory")
    assert not shows_secret(outputs) and outputs[1].startswith("❌")
    assert not shows_secret(bob.predict(app.ann_memory, api_name="/delete_memory"))
    assert app.ann_data() == before
    assert all_memories(app.bob_store) == []


def test_bobs_undo_does_not_undo_anns_sql_edit(app: TwoPeople) -> None:
    edit = f"UPDATE memories SET value = 'Ann Smith {SECRET}' WHERE key = 'name'"
    assert run_sql(app.ann_store.path, edit) == {"updated": 1}  # journalled in ann's db
    before = app.ann_data()
    _, status = app.client("bob").predict(api_name="/undo_sql_edit")
    assert status.startswith("Nothing to undo")
    assert app.ann_data() == before


def test_bobs_settings_are_his_alone(app: TwoPeople) -> None:
    before = app.ann_data()
    status, _ = app.client("bob").predict(
        *settings_form(latitude=12.5, longitude=99.5),
        "You are Bob's pirate.",
        api_name="/save_settings",
    )
    assert status.startswith("✅ Saved")
    assert app.bob_store.profile()["latitude"] == "12.5"
    assert app.ann_data() == before
    assert "latitude" not in app.ann_store.profile()


def test_bobs_turn_knows_nothing_of_ann(app: TwoPeople) -> None:
    chat, *_ = send(app.client("bob"), "what do you know about me?")
    assert [text_of(m) for m in chat] == [
        "what do you know about me?",
        "You said: what do you know about me?",
    ]
    assert not any(shows_secret(m.content) for m in app.model.calls[-1]["messages"])
    (session,) = app.bob_store.list_sessions()
    assert session.id != app.ann_session
    assert SECRET not in json.dumps([m.content for m in app.bob_store.messages(session.id)])


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
