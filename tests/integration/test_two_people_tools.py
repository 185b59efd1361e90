"""Two people in one home: every tool, run as the second person (bob), finds and changes
nothing of the first person's (ann's) data — her messages, memories and images — on both
backends: SQLite (a database file per person) and a real Postgres server (one shared
database, each row a person's, memory_sql as a restricted role under row-level security).

Each person's Context comes from ``People.factory`` over a home with two accounts, as the
app builds them, and each person is seeded through their own store's async interface.
Ann is seeded with more messages than bob, so on SQLite the id of her message with the
secret word does not exist in bob's database (on Postgres ids are shared: only row-level
security keeps it from him); every check looks for her words and values, not ids.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from evals.fixtures import cat_image
from graph.context import Context
from graph.setup import People
from memory import OWNER, AsyncStore, release_connections, utc_now
from memory.postgres.store import PgStore
from tests.support.chat_model import ScriptedChatModel
from tests.support.embedders import FakeEmbedder
from tests.support.pg_people import (
    BACKENDS,
    Backend,
    forget_everyone,
    migrated_postgres,
    open_accounts,
)
from tests.support.postgres import PostgresServer
from tools.registry import aexecute_tool

SECRET = "zanzibarquokka"  # in ann's messages and memory, nowhere in bob's
FORGED_TOKEN = "bob-owns-ann"  # a login token an attack tries to plant for ann
PASSWORD = "correct horse battery"


@dataclass
class Home:
    """A home with ann (the home's own data) and bob (``people/2``), both seeded."""

    backend: Backend
    root: Path
    people: People
    bob_id: int
    ann_store: AsyncStore  # the stores the people's Contexts use
    bob_store: AsyncStore
    ann_session: str
    bob_session: str
    ann_secret_id: int  # ann's message with SECRET: no message of bob's has this id
    ann_memory_id: str
    ann_image: Path  # in ann's media folder

    async def ann_data(self) -> tuple[list[tuple[str, str]], list[tuple[str, str, str]]]:
        """Everything of ann's a tool could leak or change: messages and memories."""
        messages = [(m.role, m.content) for m in await self.ann_store.messages(self.ann_session)]
        return messages, await memories_of(self.ann_store)


async def memories_of(store: AsyncStore) -> list[tuple[str, str, str]]:
    return sorted((m.category, m.key, m.value) for m in await store.ranked_memories(utc_now()))


@pytest.fixture(scope="module")
def postgres() -> Iterator[PostgresServer]:
    with migrated_postgres() as server:
        yield server


@dataclass
class Registered:
    """A home whose accounts ann and bob were just added, and the env selecting it."""

    backend: Backend
    root: Path
    env: dict[str, str]
    bob_id: int


@pytest.fixture(params=BACKENDS)
def registered(request: pytest.FixtureRequest, tmp_path: Path) -> Registered:
    backend: Backend = request.param
    server = None
    if backend == "postgres":
        server = request.getfixturevalue("postgres")
        forget_everyone(server)
    root = tmp_path / "home"
    env, accounts = open_accounts(backend, root, server)
    accounts.add("ann", PASSWORD)
    bob = accounts.add("bob", PASSWORD)
    assert bob.folder == "people/2"
    return Registered(backend, root, env, bob.id)


@pytest.fixture
async def home(registered: Registered) -> AsyncIterator[Home]:
    flags = {
        "home": registered.root,
        "provider": "openai-compatible",
        "base_url": "http://127.0.0.1:9/v1",
    }
    people = People(flags, env=registered.env, chat_model=ScriptedChatModel(name_="scripted-chat"))
    assert people.accounts_on
    ann_store, bob_store = people.factory("ann").store, people.factory("bob").store
    ann_session = (await ann_store.create_session("Ann's plans")).id
    for text in ("good morning", "hello Ann", "what is new?", "not much"):
        await ann_store.add_message(ann_session, "user" if "?" in text else "assistant", text)
    secret = await ann_store.add_message(ann_session, "user", f"my password hint is {SECRET}")
    await ann_store.add_message(ann_session, "assistant", f"I will keep {SECRET} safe")
    memory = await ann_store.create_memory("identity", "secret", f"Ann's hint: {SECRET}")
    edit = f"UPDATE memories SET value = 'Ann''s hint {SECRET}' WHERE key = 'secret'"
    assert await ann_store.run_sql(edit, now=utc_now()) == {"updated": 1}  # her journal
    ann_image = ann_store.media_dir / "ann-photo.png"
    ann_image.write_bytes(cat_image("black"))
    bob_session = (await bob_store.create_session("Bob's chat")).id
    await bob_store.add_message(bob_session, "user", "hello from bob")
    await bob_store.add_message(bob_session, "assistant", "hi bob")
    assert secret.id not in [m.id for m in await bob_store.messages(bob_session)]
    yield Home(
        registered.backend,
        registered.root,
        people,
        registered.bob_id,
        ann_store,
        bob_store,
        ann_session,
        bob_session,
        secret.id,
        memory.id,
        ann_image,
    )
    for store in (ann_store, bob_store):  # the only factories opened: ann's is the default
        await store.close()
    await release_connections()  # this test's loop's Postgres pool


async def context_of(home: Home, name: str) -> Context:
    return await home.people.factory(name)()


def leaked(result: dict[str, Any]) -> bool:
    return SECRET in json.dumps(result, ensure_ascii=False)


async def test_each_person_gets_their_own_data_and_media(home: Home) -> None:
    ann, bob = await context_of(home, "ann"), await context_of(home, "bob")
    if home.backend == "sqlite":
        assert ann.store.location == str(home.root / "companion.db")
        assert bob.store.location == str(home.root / "people" / "2" / "companion.db")
    else:  # one database: the owner's rows, and bob's id's
        assert isinstance(ann.store, PgStore) and isinstance(bob.store, PgStore)
        assert (ann.store.person, bob.store.person) == (OWNER, str(home.bob_id))
    assert ann.settings.media_dir == ann.store.media_dir == home.root / "media"
    bobs = home.root / "people" / "2" / "media"
    assert bob.settings.media_dir == bob.store.media_dir == bobs


async def test_memory_search_as_bob_finds_nothing_of_anns(home: Home) -> None:
    as_ann = (await context_of(home, "ann")).tool_context(home.ann_session)
    found = await aexecute_tool("memory_search", {"query": SECRET}, ctx=as_ann)
    assert leaked(found)  # the search would find it: it is ann's to find

    bob = await context_of(home, "bob")
    for session in (home.bob_session, home.ann_session, None):
        result = await aexecute_tool(
            "memory_search", {"query": SECRET}, ctx=bob.tool_context(session)
        )
        assert not leaked(result)


async def embed_everything(store: AsyncStore, embedder: FakeEmbedder) -> None:
    """Give every message of the store's person a vector, as the background job does."""
    while rows := await store.unembedded(embedder.model, 100):
        vectors = embedder.passages([text for _, text in rows])
        await store.add_vectors(
            embedder.model, list(zip([i for i, _ in rows], vectors, strict=True))
        )


async def test_memory_search_by_meaning_as_bob_finds_nothing_of_anns(home: Home) -> None:
    embedder = FakeEmbedder()
    for store in (home.ann_store, home.bob_store):
        await embed_everything(store, embedder)
    asked = f"my password hint is {SECRET}"  # ann's own words: her vector, exactly
    ann = (await context_of(home, "ann")).tool_context(home.ann_session)
    found = await aexecute_tool(
        "memory_search", {"query": asked}, ctx=replace(ann, embedder=embedder)
    )
    assert leaked(found)

    bob = await context_of(home, "bob")
    for session in (home.bob_session, home.ann_session, None):
        ctx = replace(bob.tool_context(session), embedder=embedder)
        assert not leaked(await aexecute_tool("memory_search", {"query": asked}, ctx=ctx))
        nearest = await bob.store.recall(
            asked, now=utc_now(), tz="UTC", session_id=session, question_id=None,
            vector=embedder.query(asked), vector_model=embedder.model, mode="dense",
        )  # fmt: skip
        assert nearest.turns and {t.message.session_id for t in nearest.turns} == {home.bob_session}
    assert await bob.store.vector_status(embedder.model) == (2, 2)


BOTH: tuple[Backend, ...] = BACKENDS
ATTACKS = [  # (statement, the backends that must refuse it)
    pytest.param("SELECT * FROM messages", (), id="messages"),
    pytest.param("SELECT * FROM main.messages", BOTH, id="main.messages"),
    pytest.param("SELECT * FROM public.messages", ("sqlite",), id="public.messages"),
    pytest.param("SELECT * FROM memories", (), id="memories"),
    pytest.param("SELECT (SELECT content FROM messages WHERE id = {id})", (), id="subquery"),
    pytest.param(
        "WITH messages AS (SELECT * FROM main.messages) SELECT * FROM messages",
        BOTH,
        id="cte",
    ),
    pytest.param(
        "WITH messages AS (SELECT * FROM public.messages) SELECT * FROM messages",
        ("sqlite",),
        id="cte-public",
    ),
    pytest.param("UPDATE messages SET content = 'x' WHERE id = {id}", (), id="update"),
    pytest.param(
        "UPDATE public.messages SET content = 'x' WHERE id = {id}", ("sqlite",), id="update-public"
    ),
    pytest.param("UPDATE memories SET value = 'x' WHERE key = 'secret'", (), id="update-memory"),
    pytest.param("SELECT * FROM sql_edits", BOTH, id="journal"),  # ann's edit, old and new
    pytest.param("SELECT * FROM users", BOTH, id="users"),  # Postgres's accounts
    pytest.param("SELECT * FROM message_vectors", BOTH, id="vectors"),
    pytest.param("ATTACH DATABASE '{db}' AS a", BOTH, id="attach"),
    pytest.param("SELECT * FROM a.messages", BOTH, id="attached-name"),
    # Postgres's person policy trusts app.person: memory_sql may not set it.
    pytest.param(f"SET app.person = '{OWNER}'", BOTH, id="set"),
    pytest.param(
        f"SELECT set_config('app.person', '{OWNER}', true), "
        "(SELECT content FROM messages WHERE id = {id})",
        BOTH,
        id="set_config",
    ),
    pytest.param(
        f"SELECT * FROM (SELECT set_config('app.person', '{OWNER}', true)) AS o, messages",
        BOTH,
        id="set_config-join",
    ),
    pytest.param(  # Postgres's parse allows no function that runs SQL text (issue 19)
        "SELECT query_to_xml('SELECT content FROM messages', true, false, '')",
        BOTH,
        id="query_to_xml",
    ),
    # Issue 19, C1: Postgres nests comments, sqlparse does not; the DO block behind the
    # comment switched to the app's role and read (or forged a login for) ann.
    pytest.param(
        "/* /* */ SELECT 1 */ DO $x$ DECLARE v text; BEGIN SET LOCAL ROLE companion; "
        f"PERFORM set_config('app.person','{OWNER}',true); "
        "SELECT string_agg(key||'='||value,' | ') INTO v FROM memories; "
        "RAISE EXCEPTION 'LEAK %', v; END $x$",
        BOTH,
        id="c1-nested-comment-do-read",
    ),
    pytest.param(
        "/* /* */ UPDATE sessions SET title='x' WHERE id='' */ DO $x$ BEGIN "
        "SET LOCAL ROLE companion; INSERT INTO logins(token_hash,name) VALUES "
        f"(encode(sha256('{FORGED_TOKEN}'::bytea),'hex'),'ann'); END $x$",
        BOTH,
        id="c1-nested-comment-do-login",
    ),
    # Issue 19, C2: set_config inside the statement itself, where the README's
    # non-superuser owner could not revoke it.
    pytest.param(
        f"SELECT (SELECT set_config('app.person','{OWNER}',true)), "
        "(SELECT string_agg(key||'='||value,' | ') FROM memories)",
        BOTH,
        id="c2-set-config-read",
    ),
    pytest.param(
        "UPDATE memories SET value='bob was here' WHERE key='secret' AND "
        f"(SELECT set_config('app.person','{OWNER}',true)) IS NOT NULL",
        BOTH,
        id="c2-set-config-update",
    ),
]


@pytest.mark.parametrize(("sql", "refused_on"), ATTACKS)
async def test_memory_sql_as_bob_reaches_nothing_of_anns(
    home: Home, sql: str, refused_on: tuple[Backend, ...]
) -> None:
    before = await home.ann_data()
    bob_before = [m.content for m in await home.bob_store.messages(home.bob_session)]
    statement = sql.format(id=home.ann_secret_id, db=home.ann_store.location)
    bob = await context_of(home, "bob")
    result = await aexecute_tool("memory_sql", {"sql": statement}, ctx=bob.tool_context(None))
    assert not leaked(result)
    assert await home.ann_data() == before
    assert ("error" in result) == (home.backend in refused_on), result
    if statement.startswith("UPDATE") and "error" not in result:
        assert result == {"updated": 0}
    assert [m.content for m in await home.bob_store.messages(home.bob_session)] == bob_before
    assert home.people.accounts.login_name(FORGED_TOKEN) is None


async def test_memory_sql_as_ann_sees_her_own_messages(home: Home) -> None:
    ann = await context_of(home, "ann")
    result = await aexecute_tool(
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
    home: Home, tool: str, args: dict[str, str]
) -> None:
    before = await home.ann_data()
    filled = {name: value.format(memory_id=home.ann_memory_id) for name, value in args.items()}
    bob = await context_of(home, "bob")
    result = await aexecute_tool(tool, filled, ctx=bob.tool_context(home.bob_session))
    assert await home.ann_data() == before
    assert not leaked(result)
    if tool == "create_memory":  # made in bob's own database
        assert result["success"] is True
        assert await memories_of(home.bob_store) == [("identity", "secret", "Bob")]
    else:  # bob has no such memory: nothing to change
        assert "error" in result and result.get("memory_id") != home.ann_memory_id


def references(home: Home) -> list[str]:
    """Ways to name ann's image from bob's side."""
    path = str(home.ann_image)
    bobs = home.bob_store.media_dir
    return [
        path,
        f"file://{path}",
        f"![photo]({path})",
        f"../../../media/{home.ann_image.name}",  # relative to bob's media folder
        f"{bobs}/../../../media/{home.ann_image.name}",
    ]


async def test_image_analyze_as_bob_cannot_read_anns_image(home: Home) -> None:
    ann = await context_of(home, "ann")
    own = await aexecute_tool(
        "image_analyze", {"reference": str(home.ann_image)}, ctx=ann.tool_context(None)
    )
    assert own.get("image_path") == str(home.ann_image.resolve())  # hers to read

    bob = await context_of(home, "bob")
    for reference in references(home):
        result = await aexecute_tool(
            "image_analyze", {"reference": reference}, ctx=bob.tool_context(home.bob_session)
        )
        assert "image_base64" not in result and result["error"].startswith("not available")


async def test_image_analyze_as_bob_in_anns_session_finds_no_image(home: Home) -> None:
    await home.ann_store.add_message(
        home.ann_session, "user", "look", image_path=str(home.ann_image)
    )
    bob = await context_of(home, "bob")
    result = await aexecute_tool("image_analyze", {}, ctx=bob.tool_context(home.ann_session))
    assert "image_base64" not in result and "no image" in result["error"]
