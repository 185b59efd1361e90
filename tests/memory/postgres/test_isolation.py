"""What only Postgres has to prove: people sharing one database never see each
other's rows, whatever SQL the app role runs."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import psycopg
import pytest
from psycopg import errors
from psycopg_pool import AsyncConnectionPool

from memory import ImportedChat, MemoryGates, MemoryNotFound, Session, StoreError, TurnReads
from memory.postgres.schema import APP_TABLES, PG_MIGRATIONS, migrate
from memory.postgres.store import PgStore
from tests.conftest import FIXED_NOW
from tests.memory.backends import new_person, one_segment
from tests.support.postgres import APP_ROLE, PostgresServer


@pytest.fixture
async def shared_pool(postgres: PostgresServer) -> AsyncIterator[AsyncConnectionPool]:
    pool = AsyncConnectionPool(
        postgres.url, min_size=2, max_size=4, open=False, kwargs={"autocommit": True}
    )
    await pool.open(wait=True)
    yield pool
    await pool.close()


async def test_two_people_on_one_database_never_see_each_other(
    shared_pool: AsyncConnectionPool,
) -> None:
    alice = PgStore.for_person(shared_pool, new_person())
    bob = PgStore.for_person(shared_pool, new_person())
    session = await alice.create_session("Alice's")
    asked = await alice.add_message(session.id, "user", "my secret")
    turn_id = await alice.begin_turn(session.id, asked.id, "owner")
    await alice.save_partial(turn_id, "alice's partial")
    await alice.set_profile({"persona": "alice"})
    await alice.set_style_note(session.id, "alice's note")

    assert await bob.list_sessions() == []
    assert await bob.get_session(session.id) is None
    assert await bob.messages(session.id) == []
    assert await bob.count_messages() == 0
    assert await bob.running_turns() == []
    assert await bob.profile() == {}
    assert await bob.style_note(session.id) is None
    assert await bob.search_messages("secret") == []
    # What bob does to alice's ids touches nothing of hers.
    with pytest.raises(StoreError):
        await bob.rename_session(session.id, "Bob's now")
    with pytest.raises(StoreError):
        await bob.set_style_note(session.id, "bob's note")
    assert await bob.delete_messages_from(session.id, 0) == 0
    await bob.save_partial(turn_id, "bob was here")
    await bob.end_turn(turn_id)
    (turn,) = await alice.running_turns()
    assert await bob.close_interrupted(turn, {}) is None
    await bob.delete_session(session.id)
    await bob.set_profile({"persona": None})
    # The same session id is bob's own session, apart from alice's.
    await bob.add_message(session.id, "user", "bob's words")
    assert [m.content for m in await bob.messages(session.id)] == ["bob's words"]

    assert await alice.messages(session.id) == [asked]
    assert await alice.list_sessions() == [
        Session(session.id, "Alice's", None, session.created_at, asked.created_at)
    ]
    assert turn.partial == "alice's partial"
    assert await alice.profile() == {"persona": "alice"}
    assert await alice.style_note(session.id) == "alice's note"


async def test_two_people_never_see_each_others_memories_or_segments(
    shared_pool: AsyncConnectionPool,
) -> None:
    alice = PgStore.for_person(shared_pool, new_person())
    bob = PgStore.for_person(shared_pool, new_person())
    asked = await alice.add_message("s", "user", "my secret trip")
    segment = await one_segment(alice, "s", "alice's trip")
    memory = await alice.create_memory("identity", "name", "Alice", now=FIXED_NOW)

    assert await bob.ranked_memories(FIXED_NOW) == []
    assert await bob.recent_segments() == []
    nothing = TurnReads([], [], None, [], MemoryGates(history=False, memories=False))
    # (alice's message is older than the id asked about: bob's gates do not see it)
    assert await bob.read_turn("s", asked.id + 1, history=10, now=FIXED_NOW) == nothing
    with pytest.raises(MemoryNotFound):
        await bob.update_memory(memory.id, "Bob", key=None, category=None)
    with pytest.raises(MemoryNotFound):
        await bob.delete_memory(memory.id)
    assert await bob.delete_messages_from("s", 0) == 0
    # The same category and key, and the same session id, are bob's own.
    bobs = await bob.create_memory("identity", "name", "Bob", now=FIXED_NOW)
    await bob.add_message("s", "user", "bob's words")
    await one_segment(bob, "s", "bob's words")
    assert [m.value for m in await bob.ranked_memories(FIXED_NOW)] == ["Bob"]
    assert [s.summary for s in await bob.recent_segments()] == ["bob's words"]
    await bob.delete_memory(bobs.id)

    assert await alice.ranked_memories(FIXED_NOW) == [memory]
    assert await alice.recent_segments() == [segment]
    reads = await alice.read_turn("s", asked.id, history=5, now=FIXED_NOW)
    assert reads == TurnReads([], [asked], None, [memory], MemoryGates(True, True))


async def test_raw_sql_as_the_app_role_sees_only_the_person_it_names(
    shared_pool: AsyncConnectionPool,
) -> None:
    alice, bob = new_person(), new_person()
    for person in (alice, bob):
        store = PgStore.for_person(shared_pool, person)
        asked = await store.add_message("s", "user", f"{person} speaks")
        await store.begin_turn("s", asked.id, "owner")
        await store.set_profile({"name": person})
        await store.create_memory("identity", "name", person)
        await one_segment(store, "s", f"{person} spoke")
        await store.claim("sweep", "owner", 60)
        await store.import_chat(ImportedChat("chatgpt", "c1", person, FIXED_NOW, ()))
        answer = await store.add_message("s", "assistant", f"to {person}")
        await store.save_trace(answer.id, {"person": person})
        await store.set_feedback(answer.id, 1)
        edit = f"UPDATE messages SET content = '{person} edited' WHERE id = {asked.id}"
        assert await store.run_sql(edit, now=FIXED_NOW) == {"updated": 1}

    async with shared_pool.connection() as conn, conn.transaction():
        await conn.execute("SELECT set_config('app.person', %s, true)", (bob,))
        for table in APP_TABLES:
            cursor = await conn.execute(f"SELECT DISTINCT person FROM {table}")
            assert await cursor.fetchall() == [(bob,)], table
        cursor = await conn.execute("SELECT content FROM messages WHERE person = %s", (alice,))
        assert await cursor.fetchall() == []
        cursor = await conn.execute(
            "UPDATE messages SET content = 'hacked' WHERE person = %s", (alice,)
        )
        assert cursor.rowcount == 0
        cursor = await conn.execute("DELETE FROM profile WHERE person = %s", (alice,))
        assert cursor.rowcount == 0
    async with shared_pool.connection() as conn:
        with pytest.raises(errors.InsufficientPrivilege, match="row-level security"):
            async with conn.transaction():
                await conn.execute("SELECT set_config('app.person', %s, true)", (bob,))
                await conn.execute(
                    "INSERT INTO profile (person, key, value) VALUES (%s, 'k', 'v')", (alice,)
                )
        with pytest.raises(errors.InsufficientPrivilege, match="row-level security"):
            async with conn.transaction():
                await conn.execute("SELECT set_config('app.person', %s, true)", (bob,))
                await conn.execute("UPDATE profile SET person = %s", (alice,))
        # Without app.person (and after it, on the same pooled connection): nothing.
        for table in APP_TABLES:
            cursor = await conn.execute(f"SELECT COUNT(*) FROM {table}")
            assert await cursor.fetchone() == (0,), table
        with pytest.raises((errors.CheckViolation, errors.UndefinedObject)):
            await conn.execute("INSERT INTO profile (key, value) VALUES ('k', 'v')")
    assert await PgStore.for_person(shared_pool, alice).profile() == {"name": alice}


async def test_the_app_role_cannot_turn_row_level_security_off(
    shared_pool: AsyncConnectionPool, postgres: PostgresServer
) -> None:
    await PgStore.for_person(shared_pool, new_person()).set_profile({"k": "v"})
    async with await psycopg.AsyncConnection.connect(postgres.url, autocommit=True) as conn:
        cursor = await conn.execute(
            "SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = current_user"
        )
        assert await cursor.fetchone() == (False, False)
        for table in APP_TABLES:
            for change in ("DISABLE ROW LEVEL SECURITY", "NO FORCE ROW LEVEL SECURITY"):
                with pytest.raises(errors.InsufficientPrivilege, match="must be owner"):
                    await conn.execute(f"ALTER TABLE {table} {change}")
            with pytest.raises(errors.InsufficientPrivilege, match="must be owner"):
                await conn.execute(f"DROP POLICY {table}_person ON {table}")
        await conn.execute("SET row_security = off")
        with pytest.raises(errors.InsufficientPrivilege, match="row-level security policy"):
            await conn.execute("SELECT * FROM profile")
        await conn.execute("RESET row_security")
        with pytest.raises(errors.InsufficientPrivilege, match="permission denied"):
            await conn.execute("SET ROLE postgres")
        with pytest.raises(errors.InsufficientPrivilege, match="permission denied"):
            await conn.execute("SELECT * FROM schema_version")


async def test_full_text_search_finds_english_and_indonesian_words_of_its_person(
    shared_pool: AsyncConnectionPool,
) -> None:
    alice = PgStore.for_person(shared_pool, new_person())
    bob = PgStore.for_person(shared_pool, new_person())
    hiking = await alice.add_message("a", "user", "We went hiking near the volcano")
    cat = await alice.add_message("a", "user", "Kucing saya suka makan ikan")
    lunch = await alice.add_message("b", "assistant", "Jangan lupa makan siang!")
    bobs = await bob.add_message("a", "user", "Aku makan bakso, kucingnya tidur; hiking later")

    assert await alice.search_messages("hiking") == [hiking]
    assert await alice.search_messages("kucing") == [cat]
    assert await alice.search_messages("KUCING makan") == [cat]
    assert await alice.search_messages("makan") == [lunch, cat]
    assert await alice.search_messages("makan", limit=1) == [lunch]
    assert await alice.search_messages("makan -ikan") == [lunch]
    assert await alice.search_messages('"makan siang"') == [lunch]
    assert await alice.search_messages("rendang") == []
    assert await bob.search_messages("makan") == [bobs]
    assert await bob.search_messages("hiking") == [bobs]


async def test_migrating_again_changes_nothing_and_the_location_hides_the_password(
    postgres: PostgresServer, shared_pool: AsyncConnectionPool
) -> None:
    person = new_person()
    await PgStore.for_person(shared_pool, person).set_profile({"kept": "yes"})
    assert await migrate(postgres.admin_url, APP_ROLE) == len(PG_MIGRATIONS)
    async with await psycopg.AsyncConnection.connect(postgres.admin_url) as conn:
        cursor = await conn.execute("SELECT version FROM schema_version ORDER BY version")
        assert await cursor.fetchall() == [(v,) for v in range(1, len(PG_MIGRATIONS) + 1)]
    assert await PgStore.for_person(shared_pool, person).profile() == {"kept": "yes"}
    store = await PgStore.open(postgres.url.replace("companion@", "companion:secret@"), person)
    try:
        assert "secret" not in store.location and "companion" in store.location
    finally:
        await store.close()
    with pytest.raises(ValueError, match="person"):
        PgStore.for_person(shared_pool, "")


async def test_two_people_never_reach_each_other_through_the_tools_calls(
    shared_pool: AsyncConnectionPool, tmp_path: Path
) -> None:
    alice = PgStore.for_person(shared_pool, new_person(), media_dir=tmp_path / "alice")
    bob = PgStore.for_person(shared_pool, new_person(), media_dir=tmp_path / "bob")
    photo = await alice.add_message("s", "user", "my photo", image_path="alice.png")
    turn_id = await alice.begin_turn("s", photo.id, "owner")
    memory = await alice.remember("identity", "name", "Alice", FIXED_NOW)
    await alice.set_profile({"persona": "alice's persona"})
    edit = f"UPDATE messages SET content = 'alice edited' WHERE id = {photo.id}"
    assert await alice.run_sql(edit, now=FIXED_NOW) == {"updated": 1}
    assert await alice.claim("sweep", "process-a", 60) is True

    assert await bob.has_history() is False
    assert await bob.has_memories() is False
    assert await bob.latest_image("s") is None
    assert await bob.request_stop("s") is False
    assert await bob.stop_requested(turn_id) is False
    assert await bob.claim("sweep", "process-b", 60) is True  # bob's own lease
    with pytest.raises(MemoryNotFound):
        await bob.revise(None, "name", "Bob", FIXED_NOW)
    with pytest.raises(MemoryNotFound):
        await bob.forget("identity", "name")
    for sql in (
        "SELECT * FROM messages",
        "SELECT * FROM sessions",
        "SELECT * FROM memories",
        "SELECT * FROM profile",
        "SELECT * FROM segments",
    ):
        assert (await bob.run_sql(sql, now=FIXED_NOW))["rows"] == [], sql
    for sql in (
        "UPDATE messages SET content = 'bob was here'",
        "UPDATE memories SET value = 'bob was here'",
        "UPDATE sessions SET title = 'bob was here'",
    ):
        assert await bob.run_sql(sql, now=FIXED_NOW) == {"updated": 0}, sql
    assert await bob.undo_last_sql_edit() is None
    bobs = await bob.remember("identity", "name", "Bob", FIXED_NOW)  # his own fact
    assert await bob.forget(None, "name") == bobs

    assert await alice.stop_requested(turn_id) is False
    assert await alice.claim("sweep", "process-c", 60) is False  # still process-a's
    assert await alice.latest_image("s") == replace(photo, content="alice edited")
    assert await alice.ranked_memories(FIXED_NOW) == [memory]
    undone = await alice.undo_last_sql_edit()
    assert undone is not None and undone.edits[0].row_id == photo.id
    assert await alice.messages("s") == [photo]
    assert alice.media_dir == tmp_path / "alice" and alice.media_dir.is_dir()
    assert bob.media_dir == tmp_path / "bob"
    with pytest.raises(StoreError, match="without a media folder"):
        _ = PgStore.for_person(shared_pool, new_person()).media_dir
