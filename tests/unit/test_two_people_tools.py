"""Two people in one home: every tool, run as the second person (bob), finds and changes
nothing of the first person's (ann's) data — her messages, memories and images.

Each person's Context comes from ``People.factory`` over a home with two accounts, as the
app builds them. Ann is seeded with more messages than bob, so the id of her message with
the secret word does not exist in bob's database; every check looks for her words and
values, not ids.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from evals.fixtures import cat_image
from graph.context import Context
from graph.setup import People
from memory.accounts import Accounts, Person
from memory.memories import all_memories, create_memory
from memory.store import Store
from tests.support.chat_model import ScriptedChatModel
from tools.registry import execute_tool

SECRET = "zanzibarquokka"  # in ann's messages and memory, nowhere in bob's
PASSWORD = "correct horse battery"


@dataclass
class Home:
    """A home with ann (the home's own database) and bob (``people/2``), both seeded."""

    root: Path
    ann: Person
    bob: Person
    ann_store: Store  # ann's database, opened on the side to check it
    bob_store: Store
    ann_session: str
    bob_session: str
    ann_secret_id: int  # ann's message with SECRET: no message of bob's has this id
    ann_memory_id: str
    ann_image: Path  # in ann's media folder

    def ann_data(self) -> tuple[list[tuple[str, str]], list[tuple[str, str, str]]]:
        """Everything of ann's a tool could leak or change: messages and memories."""
        messages = [(m.role, m.content) for m in self.ann_store.messages(self.ann_session)]
        memories = [(m.category, m.key, m.value) for m in all_memories(self.ann_store)]
        return messages, memories


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Home]:
    root = tmp_path / "home"
    accounts = Accounts.open_home(root)
    ann, bob = accounts.add("ann", PASSWORD), accounts.add("bob", PASSWORD)
    assert (ann.folder, bob.folder) == ("", "people/2")
    ann_store = Store.open_home(ann.home(root))
    bob_store = Store.open_home(bob.home(root))
    ann_session = ann_store.create_session("Ann's plans").id
    for text in ("good morning", "hello Ann", "what is new?", "not much"):
        ann_store.add_message(ann_session, "user" if "?" in text else "assistant", text)
    secret = ann_store.add_message(ann_session, "user", f"my password hint is {SECRET}")
    ann_store.add_message(ann_session, "assistant", f"I will keep {SECRET} safe")
    memory = create_memory(ann_store, "identity", "secret", f"Ann's hint {SECRET}")
    ann_image = ann_store.media_dir / "ann-photo.png"
    ann_image.write_bytes(cat_image("black"))
    bob_session = bob_store.create_session("Bob's chat").id
    bob_store.add_message(bob_session, "user", "hello from bob")
    bob_store.add_message(bob_session, "assistant", "hi bob")
    assert bob_store.get_message(secret.id) is None  # her id names nothing of his
    yield Home(
        root,
        ann,
        bob,
        ann_store,
        bob_store,
        ann_session,
        bob_session,
        secret.id,
        memory.id,
        ann_image,
    )
    ann_store.close()
    bob_store.close()


@pytest.fixture
async def people(home: Home) -> AsyncIterator[People]:
    flags = {
        "home": home.root,
        "provider": "openai-compatible",
        "base_url": "http://127.0.0.1:9/v1",
    }
    crowd = People(flags, env={}, chat_model=ScriptedChatModel(name_="scripted-chat"))
    assert crowd.hosted
    yield crowd
    for factory in crowd.factories():
        factory.store.close()


async def context_of(people: People, name: str) -> Context:
    return await people.factory(name)()


def leaked(result: dict[str, Any]) -> bool:
    return SECRET in json.dumps(result, ensure_ascii=False)


async def test_each_person_gets_their_own_database_and_media(home: Home, people: People) -> None:
    ann, bob = await context_of(people, "ann"), await context_of(people, "bob")
    assert ann.store.blocking.path == home.root / "companion.db"
    assert bob.store.blocking.path == home.root / "people" / "2" / "companion.db"
    assert bob.settings.media_dir == home.root / "people" / "2" / "media"


async def test_memory_search_as_bob_finds_nothing_of_anns(home: Home, people: People) -> None:
    as_ann = (await context_of(people, "ann")).tool_context(home.ann_session)
    found = await execute_tool("memory_search", {"query": SECRET}, ctx=as_ann)
    assert leaked(found)  # the search would find it: it is ann's to find

    bob = await context_of(people, "bob")
    for session in (home.bob_session, home.ann_session, None):
        result = await execute_tool(
            "memory_search", {"query": SECRET}, ctx=bob.tool_context(session)
        )
        assert not leaked(result)


ATTACKS = [
    pytest.param("SELECT * FROM messages", id="messages"),
    pytest.param("SELECT * FROM main.messages", id="main.messages"),
    pytest.param("SELECT * FROM memories", id="memories"),
    pytest.param("SELECT (SELECT content FROM messages WHERE id = {id})", id="subquery"),
    pytest.param("WITH messages AS (SELECT * FROM main.messages) SELECT * FROM messages", id="cte"),
    pytest.param("UPDATE messages SET content = 'x' WHERE id = {id}", id="update"),
    pytest.param("UPDATE memories SET value = 'x' WHERE key = 'secret'", id="update-memory"),
    pytest.param("ATTACH DATABASE '{db}' AS a", id="attach"),
    pytest.param("SELECT * FROM a.messages", id="attached-name"),
]


@pytest.mark.parametrize("sql", ATTACKS)
async def test_memory_sql_as_bob_reaches_nothing_of_anns(
    home: Home, people: People, sql: str
) -> None:
    before = home.ann_data()
    bob_before = [m.content for m in home.bob_store.messages(home.bob_session)]
    statement = sql.format(id=home.ann_secret_id, db=home.ann_store.path)
    bob = await context_of(people, "bob")
    result = await execute_tool("memory_sql", {"sql": statement}, ctx=bob.tool_context(None))
    assert not leaked(result)
    assert home.ann_data() == before
    if statement.startswith(("ATTACH", "SELECT * FROM a.")):
        assert "error" in result
    if statement.startswith("UPDATE messages"):
        assert result.get("updated", 0) == 0 or "error" in result
        assert [m.content for m in home.bob_store.messages(home.bob_session)] == bob_before


async def test_memory_sql_as_ann_sees_her_own_messages(home: Home, people: People) -> None:
    ann = await context_of(people, "ann")
    result = await execute_tool(
        "memory_sql", {"sql": "SELECT * FROM messages"}, ctx=ann.tool_context(None)
    )
    assert leaked(result)  # the same statement as bob's does reach her data


WRITES = [
    pytest.param("create_memory", {"category": "identity", "key": "secret", "value": "Bob"}),
    pytest.param("update_memory", {"key": "secret", "value": "changed by bob"}),
    pytest.param("update_memory", {"category": "identity", "key": "secret", "value": "x"}),
    pytest.param("delete_memory", {"key": "secret"}),
    pytest.param("delete_memory", {"category": "identity", "key": "secret"}),
    pytest.param("update_memory", {"key": "{memory_id}", "value": "changed by bob"}),
    pytest.param("delete_memory", {"key": "{memory_id}"}),
]


@pytest.mark.parametrize(("tool", "args"), WRITES)
async def test_memory_writes_as_bob_leave_anns_memory(
    home: Home, people: People, tool: str, args: dict[str, str]
) -> None:
    before = home.ann_data()
    filled = {name: value.format(memory_id=home.ann_memory_id) for name, value in args.items()}
    bob = await context_of(people, "bob")
    result = await execute_tool(tool, filled, ctx=bob.tool_context(home.bob_session))
    assert home.ann_data() == before
    assert not leaked(result)
    if tool == "create_memory":  # made in bob's own database
        assert result["success"] is True
        assert [(m.key, m.value) for m in all_memories(home.bob_store)] == [("secret", "Bob")]
    else:  # bob has no such memory: nothing to change
        assert "error" in result and result.get("memory_id") != home.ann_memory_id


def references(home: Home) -> list[str]:
    """Ways to name ann's image from bob's side."""
    path = str(home.ann_image)
    return [
        path,
        f"file://{path}",
        f"![photo]({path})",
        f"../../../media/{home.ann_image.name}",  # relative to bob's media folder
        f"{home.bob.home(home.root)}/media/../../../media/{home.ann_image.name}",
    ]


async def test_image_analyze_as_bob_cannot_read_anns_image(home: Home, people: People) -> None:
    ann = await context_of(people, "ann")
    own = await execute_tool(
        "image_analyze", {"reference": str(home.ann_image)}, ctx=ann.tool_context(None)
    )
    assert own.get("image_path") == str(home.ann_image.resolve())  # hers to read

    bob = await context_of(people, "bob")
    for reference in references(home):
        result = await execute_tool(
            "image_analyze", {"reference": reference}, ctx=bob.tool_context(home.bob_session)
        )
        assert "image_base64" not in result and result["error"].startswith("not available")


async def test_image_analyze_as_bob_in_anns_session_finds_no_image(
    home: Home, people: People
) -> None:
    home.ann_store.add_message(home.ann_session, "user", "look", image_path=str(home.ann_image))
    bob = await context_of(people, "bob")
    result = await execute_tool("image_analyze", {}, ctx=bob.tool_context(home.ann_session))
    assert "image_base64" not in result and "no image" in result["error"]
