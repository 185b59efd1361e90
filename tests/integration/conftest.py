"""Integration fixtures: the app launched on a free port around a scripted policy (one
person, or ``with_accounts``: accounts on, ann the first and bob)."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from gradio_client import Client
from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage

from app.settings_view import FORM_KEYS
from app.ui import launch_app
from config.settings import Settings
from evals.fixtures import OpenMeteoFixture
from graph.setup import ContextFactory, People
from memory.sqlite.accounts import SqliteAccounts
from memory.sqlite.async_store import AsyncSqliteStore
from memory.sqlite.store import SqliteStore
from tests.support.chat_model import ScriptedChatModel, tool_call


def policy(messages: list[BaseMessage], kwargs: dict[str, Any]) -> Any:
    """Weather and drawing requests call their tools; tool results and other text are echoed."""
    last = messages[-1]
    if isinstance(last, HumanMessage) and "weather" in str(last.content).lower():
        return tool_call("weather", {})
    if isinstance(last, HumanMessage) and "draw" in str(last.content).lower():
        return tool_call("image_generate", {"prompt": "a black cat"})
    if isinstance(last, ToolMessage):
        return f"Tool says: {last.content.splitlines()[2]}"
    if isinstance(last, HumanMessage) and "fail" in str(last.content):
        return ConnectionError("provider down")
    return f"You said: {last.content if isinstance(last.content, str) else 'an image'}"


@dataclass
class Running:
    """A launched app and what the test needs to look inside it."""

    url: str
    model: ScriptedChatModel
    store: SqliteStore
    home: Path
    graph_store: AsyncSqliteStore  # the same database as the app's handlers reach it

    def client(self, **kwargs: Any) -> Client:
        return Client(self.url, analytics_enabled=False, verbose=False, **kwargs)

    def system_message(self, call: int = -1) -> str:
        return str(self.model.calls[call]["messages"][0].content)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def open_meteo() -> Iterator[OpenMeteoFixture]:
    with OpenMeteoFixture() as fixture:
        yield fixture


@pytest.fixture
def launch(tmp_path: Path, open_meteo: OpenMeteoFixture) -> Iterator[Callable[..., Running]]:
    """Start the app (as often as a test asks) in one home; everything stops afterwards."""
    demos: list[Any] = []

    def start(
        password: str | None = None, allowed_hosts: tuple[str, ...] = (), **flags: Any
    ) -> Running:
        home = tmp_path / "home"
        flags = {
            "home": home,
            "provider": "openai-compatible",
            "base_url": "http://127.0.0.1:9/v1",
            **open_meteo.settings_overrides(),
            **flags,
        }
        model = ScriptedChatModel(script=policy, name_="scripted-chat")
        make = ContextFactory(flags, env={}, chat_model=model)
        store = make.store.blocking
        store.set_profile({"chat_model": "scripted-chat"})
        demo, url = launch_app(
            make, port=free_port(), password=password, allowed_hosts=allowed_hosts
        )
        demos.append(demo)
        return Running(url, model, store, home, make.store)

    yield start
    for demo in demos:
        demo.close()


PASSWORDS = {"ann": "ann's long password", "bob": "bob's long password"}


@dataclass
class WithAccounts:
    """A running app with accounts (ann, the first, and bob) and their stores."""

    url: str
    people: People

    def client(self, name: str) -> Client:
        auth = (name, PASSWORDS[name])
        return Client(self.url, auth=auth, analytics_enabled=False, verbose=False)

    def profile(self, name: str) -> dict[str, str]:
        return asyncio.run(self.people.factory(name).store.profile())

    def settings(self, name: str) -> Settings:
        return asyncio.run(self.people.factory(name)()).settings


@pytest.fixture
def with_accounts(tmp_path: Path) -> Iterator[Callable[..., WithAccounts]]:
    """Start the app with accounts on, with the given flags and environment."""
    demos: list[Any] = []

    def start(env: dict[str, str] | None = None, **flags: Any) -> WithAccounts:
        root = tmp_path / "home"
        accounts = SqliteAccounts.open_home(root)
        for name, password in PASSWORDS.items():
            accounts.add(name, password)
        model = ScriptedChatModel(script=policy, name_="scripted-chat")
        people = People({"home": root, **flags}, env=env or {}, chat_model=model)
        demo, url = launch_app(people, port=free_port())
        demos.append(demo)
        return WithAccounts(url, people)

    yield start
    for demo in demos:
        demo.close()


def settings_form(**changes: Any) -> list[Any]:
    """The Settings form's values in FORM_KEYS order: a scripted endpoint, then ``changes``."""
    values = {
        "base_url": "http://127.0.0.1:9/v1",
        "api_key": "",
        "chat_model": "scripted-chat",
        "vision_model": "",
        "tool_mode": "native",
        "image_backend": "none",
        "image_base_url": "",
        "image_model": "",
        "image_api_key": "",
        "latitude": 0.0,
        "longitude": 0.0,
        "timezone": "UTC",
        "persona": "yuzuki",
    }
    values.update(changes)
    return [values[key] for key in FORM_KEYS]
