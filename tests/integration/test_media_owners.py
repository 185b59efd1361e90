"""With accounts, each person's images are served to that person only: Gradio would serve
any file of an allowed folder, and any upload, to anyone logged in, so
``app.security.FileOwners`` answers 404 for a file in someone else's media folder or
someone else's upload, on both of Gradio's file routes, and 403 to a request that names
one (checked over real HTTP, logged in through the login form), on both backends: SQLite
(the first person's folder is the home's ``media/``, later people's ``people/<id>/media``)
and Postgres (the same folders; the rows are in the shared database)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gradio as gr
import httpx
import pytest
from gradio import processing_utils

from app.ui import launch_app
from graph.setup import People
from tests.e2e.harness import free_port
from tests.support.chat_model import ScriptedChatModel
from tests.support.pg_people import BACKENDS, migrated_postgres, open_accounts
from tests.support.postgres import PostgresServer

PASSWORDS = {"ann": "ann-password-1", "bob": "bob-password-2"}
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)


@dataclass
class WithAccounts:
    url: str
    images: dict[str, Path]  # one image in each person's media folder


@pytest.fixture(scope="module")
def postgres() -> Iterator[PostgresServer]:
    with migrated_postgres() as server:
        yield server


@pytest.fixture(scope="module", params=BACKENDS)
def with_accounts(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[WithAccounts]:
    backend = request.param
    server = request.getfixturevalue("postgres") if backend == "postgres" else None
    home = tmp_path_factory.mktemp(f"accounts-{backend}") / "home"
    env, accounts = open_accounts(backend, home, server)
    for name, password in PASSWORDS.items():
        accounts.add(name, password)
    flags: dict[str, Any] = {"home": home, "provider": "openai-compatible"}
    people = People(flags, env=env, chat_model=ScriptedChatModel(script=["hi"]))
    images = {}
    for name in PASSWORDS:
        images[name] = people.factory(name).store.media_dir / f"{name}.png"
        images[name].write_bytes(PNG)
    assert images == {"ann": home / "media" / "ann.png", "bob": home / "people/2/media/bob.png"}
    demo, url = launch_app(people, port=free_port())
    try:
        yield WithAccounts(url.rstrip("/"), images)
    finally:
        demo.close()


def logged_in(with_accounts: WithAccounts, name: str) -> httpx.Client:
    client = httpx.Client(base_url=with_accounts.url, timeout=10)
    answer = client.post("/login", data={"username": name, "password": PASSWORDS[name]})
    assert answer.status_code == 200, answer.text
    return client


def fetch(client: httpx.Client, image: Path) -> int:
    return client.get(f"/gradio_api/file={image}").status_code


def test_a_person_gets_their_own_image(with_accounts: WithAccounts) -> None:
    with (
        closing(logged_in(with_accounts, "ann")) as ann,
        closing(logged_in(with_accounts, "bob")) as bob,
    ):
        assert fetch(ann, with_accounts.images["ann"]) == 200
        assert fetch(bob, with_accounts.images["bob"]) == 200


def test_nobody_gets_another_persons_image(with_accounts: WithAccounts) -> None:
    with (
        closing(logged_in(with_accounts, "ann")) as ann,
        closing(logged_in(with_accounts, "bob")) as bob,
    ):
        assert fetch(bob, with_accounts.images["ann"]) == 404
        assert fetch(ann, with_accounts.images["bob"]) == 404
        sneaky = with_accounts.images["bob"].parent / ".." / ".." / ".." / "media" / "ann.png"
        assert fetch(bob, sneaky) == 404


def test_no_image_without_a_login(with_accounts: WithAccounts) -> None:
    with httpx.Client(base_url=with_accounts.url, timeout=10) as stranger:
        assert fetch(stranger, with_accounts.images["ann"]) in (401, 403, 404)


def test_neither_file_route_serves_another_persons_image(with_accounts: WithAccounts) -> None:
    with closing(logged_in(with_accounts, "bob")) as bob:
        for route in ("file=", "file/"):
            assert bob.get(f"/gradio_api/{route}{with_accounts.images['ann']}").status_code == 404
            assert bob.get(f"/gradio_api/{route}{with_accounts.images['bob']}").status_code == 200
        assert bob.get("/gradio_api/file=http://127.0.0.1:9/x.png").status_code == 404


def upload(client: httpx.Client, data: bytes = PNG) -> str:
    """Upload a picture as the browser does; where Gradio keeps it (named by its bytes)."""
    answer = client.post("/gradio_api/upload", files={"files": ("cat.png", data, "image/png")})
    assert answer.status_code == 200, answer.text
    path: str = answer.json()[0]
    return path


def test_an_upload_is_served_to_whoever_uploaded_it_only(with_accounts: WithAccounts) -> None:
    with (
        closing(logged_in(with_accounts, "ann")) as ann,
        closing(logged_in(with_accounts, "bob")) as bob,
    ):
        kept = upload(ann)
        assert ann.get(f"/gradio_api/file={kept}").status_code == 200
        for route in ("file=", "file/"):
            assert bob.get(f"/gradio_api/{route}{kept}").status_code == 404
        assert upload(bob) == kept  # the same bytes: bob uploaded them too
        assert bob.get(f"/gradio_api/file={kept}").status_code == 200


def test_nobody_may_send_another_persons_file_as_their_own(with_accounts: WithAccounts) -> None:
    with (
        closing(logged_in(with_accounts, "ann")) as ann,
        closing(logged_in(with_accounts, "bob")) as bob,
    ):
        for theirs in (upload(ann, PNG + b"ann's alone"), str(with_accounts.images["ann"])):
            message = {"text": "what is this?", "files": [{"path": theirs, "meta": {}}]}
            join = {"data": [message], "fn_index": 0, "session_hash": "bob-session"}
            assert bob.post("/gradio_api/queue/join", json=join).status_code == 403


def test_an_image_shown_is_served_from_its_owners_folder_not_gradios_cache(
    with_accounts: WithAccounts,
) -> None:
    """Gradio copies a shown file into its cache (served to anyone logged in) unless its
    folder is a static path: the media folders are."""
    chatbot = gr.Chatbot()
    shown = {"path": str(with_accounts.images["ann"]), "meta": {"_type": "gradio.FileData"}}
    moved = processing_utils.move_files_to_cache(shown, chatbot, postprocess=True)
    assert moved["path"] == str(with_accounts.images["ann"])
