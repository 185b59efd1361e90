"""Memories: by id (the Memories tab) and by key (the tools), ranked alike on both backends."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from memory import AsyncStore, InvalidMemory, Memory, MemoryExists, MemoryNotFound, format_time
from memory.postgres.store import PgStore
from memory.rules import scoring
from memory.sqlite.async_store import AsyncSqliteStore
from memory.sqlite.store import SqliteStore
from tests.conftest import FIXED_NOW
from tests.memory.backends import new_person, ticking, without_id
from tests.support.postgres import PostgresServer


async def test_memories_are_created_updated_and_deleted_with_sqlites_errors(
    store: AsyncStore,
) -> None:
    name = await store.create_memory(" Identity ", "  name ", " Budi ", now=FIXED_NOW)
    assert replace(name, id="") == Memory(
        "",
        "identity",
        "name",
        "Budi",
        format_time(FIXED_NOW),
        format_time(FIXED_NOW),
        scoring.INITIAL_STABILITY,
        scoring.INITIAL_DIFFICULTY,
        None,
        0,
    )
    with pytest.raises(MemoryExists, match=r"identity/NAME already exists \(value: 'Budi'\)"):
        await store.create_memory("identity", "NAME", "Other")
    with pytest.raises(InvalidMemory, match="unknown category 'hobbies'; use one of"):
        await store.create_memory("hobbies", "chess", "yes")
    with pytest.raises(InvalidMemory, match="key cannot be empty"):
        await store.create_memory("identity", "  ", "yes")
    with pytest.raises(InvalidMemory, match="value cannot be empty"):
        await store.create_memory("identity", "age", " ")
    # Keys fold ASCII letters only, as SQLite's NOCASE does.
    await store.create_memory("signals", "café", "quiet", now=FIXED_NOW)
    await store.create_memory("signals", "CAFÉ", "loud", now=FIXED_NOW)

    later = FIXED_NOW + timedelta(days=3)
    renamed = await store.update_memory(
        name.id, " Budi Santoso ", key="Full  name", category="IDENTITY", now=later
    )
    assert (renamed.id, renamed.key, renamed.value) == (name.id, "Full name", "Budi Santoso")
    assert renamed.updated_at == renamed.last_recalled_at == format_time(later)
    assert renamed.created_at == name.created_at and renamed.recall_count == 1
    assert renamed.stability > name.stability
    work = await store.create_memory("focus", "work", "thesis")
    with pytest.raises(MemoryExists, match="memory identity/full name already exists"):
        await store.update_memory(work.id, "thesis", key="full name", category="identity")
    with pytest.raises(InvalidMemory, match="value cannot be empty"):
        await store.update_memory(work.id, "  ", key=None, category=None)
    with pytest.raises(MemoryNotFound, match="no memory with id 'nope'"):
        await store.update_memory("nope", "value", key=None, category=None)
    with pytest.raises(MemoryNotFound, match="no memory with id 'nope'"):
        await store.delete_memory("nope")
    await store.delete_memory(work.id)
    with pytest.raises(MemoryNotFound):
        await store.delete_memory(work.id)
    assert sorted(m.key for m in await store.ranked_memories(later)) == [
        "CAFÉ",
        "Full name",
        "café",
    ]


async def test_memories_rank_by_retrievability_then_last_update_then_key(
    store: AsyncStore,
) -> None:
    hour = timedelta(hours=1)
    mood = await store.create_memory("signals", "mood", "calm", now=FIXED_NOW)
    name = await store.create_memory("identity", "name", "Budi", now=FIXED_NOW + hour)
    work = await store.create_memory("focus", "work", "thesis", now=FIXED_NOW + 2 * hour)

    async def order(now: datetime) -> list[str]:
        return [m.key for m in await store.ranked_memories(now)]

    assert await order(FIXED_NOW + 2 * hour) == ["work", "name", "mood"]
    await store.update_memory(
        mood.id, "cheerful", key=None, category=None, now=FIXED_NOW + 3 * hour
    )
    assert await order(FIXED_NOW + 3 * hour) == ["mood", "work", "name"]
    assert await order(FIXED_NOW + timedelta(days=30)) == ["mood", "work", "name"]
    await store.create_memory("focus", "apple", "x", now=FIXED_NOW + 4 * hour)
    await store.create_memory("focus", "Zed", "y", now=FIXED_NOW + 4 * hour)
    # A skewed clock: every memory is fully retrievable, so the last update decides, then
    # category and key in code point order ("Zed" before "apple", as in SQLite).
    assert await order(FIXED_NOW - timedelta(days=1)) == ["Zed", "apple", "mood", "work", "name"]
    assert {m.id for m in await store.ranked_memories(FIXED_NOW)} >= {name.id, work.id}


async def test_both_backends_rank_the_same_memories_alike(
    tmp_path: Path, postgres: PostgresServer
) -> None:
    sqlite = AsyncSqliteStore(SqliteStore.open_home(tmp_path / "home", clock=ticking()))
    pg = await PgStore.open(postgres.url, new_person(), clock=ticking())
    try:
        both: tuple[AsyncStore, ...] = (sqlite, pg)
        for store in both:
            made = [
                await store.create_memory(category, key, value)
                for category, key, value in [
                    ("identity", "name", "Budi"),
                    ("focus", "thesis", "FSRS"),
                    ("signals", "mood", "calm"),
                    ("principles", "tone", "gentle"),
                    ("focus", "Trip", "Bali"),
                ]
            ]
            await store.update_memory(made[0].id, "Budi S.", key=None, category=None)
            await store.update_memory(made[2].id, "tired", key="energy", category="focus")
            await store.update_memory(made[0].id, "Budi Santoso", key=None, category=None)
            await store.delete_memory(made[3].id)
        for now in (
            FIXED_NOW - timedelta(days=1),
            FIXED_NOW,
            FIXED_NOW + timedelta(seconds=5),
            FIXED_NOW + timedelta(days=2),
            FIXED_NOW + timedelta(days=400),
        ):
            on_sqlite = without_id(await sqlite.ranked_memories(now))
            assert on_sqlite == without_id(await pg.ranked_memories(now)), now
            assert len(on_sqlite) == 4
    finally:
        await sqlite.close()
        await pg.close()


async def test_remember_revise_and_forget_find_a_fact_by_key_with_sqlites_errors(
    store: AsyncStore,
) -> None:
    made = await store.remember(" Identity ", " name ", " Budi ", FIXED_NOW)
    assert (made.category, made.key, made.value, made.recall_count) == (
        "identity",
        "name",
        "Budi",
        0,
    )
    with pytest.raises(MemoryExists, match=r"identity/NAME already exists \(value: 'Budi'\)"):
        await store.remember("identity", "NAME", "Other", FIXED_NOW)
    with pytest.raises(InvalidMemory, match="unknown category 'hobbies'"):
        await store.remember("hobbies", "chess", "yes", FIXED_NOW)

    later = FIXED_NOW + timedelta(days=2)
    revised = await store.revise(None, "NAME", " Budi Santoso ", later)
    assert (revised.id, revised.key, revised.value) == (made.id, "name", "Budi Santoso")
    assert revised.updated_at == revised.last_recalled_at == format_time(later)
    assert revised.recall_count == 1 and revised.stability > made.stability
    with pytest.raises(MemoryNotFound, match="no memory focus/name to change"):
        await store.revise("focus", "name", "x", later)
    with pytest.raises(MemoryNotFound, match="no memory with key 'nope' to change"):
        await store.revise(None, " nope ", "x", later)
    with pytest.raises(InvalidMemory, match="value cannot be empty"):
        await store.revise(None, "name", "  ", later)
    with pytest.raises(InvalidMemory, match="unknown category 'hobbies'"):
        await store.revise("hobbies", "name", "x", later)

    await store.remember("focus", "Name", "the thesis", later)
    several = r"key 'name' exists in several categories \(focus, identity\); say which"
    with pytest.raises(MemoryNotFound, match=several):
        await store.revise(None, "name", "x", later)
    with pytest.raises(MemoryNotFound, match=several):
        await store.forget(None, "name")
    assert await store.forget("identity", "NAME") == revised
    with pytest.raises(MemoryNotFound, match="no memory identity/name to change"):
        await store.forget("identity", "name")
    assert [(m.category, m.key) for m in await store.ranked_memories(later)] == [("focus", "Name")]
    gone = await store.forget(None, "name")
    assert gone.value == "the thesis"
    assert await store.ranked_memories(later) == []
