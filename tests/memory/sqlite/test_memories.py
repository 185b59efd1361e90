"""Structured memories: CRUD, clear errors, FSRS ranking and the system-prompt block."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memory import InvalidMemory
from memory.rules.memories import prompt_block
from memory.sqlite import memories as mem
from memory.sqlite.store import SqliteStore

NOW = datetime(2026, 11, 25, 9, 30, tzinfo=UTC)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteStore]:
    s = SqliteStore.open_home(tmp_path, clock=lambda: NOW)
    yield s
    s.close()


def test_create_get_update_delete(store: SqliteStore) -> None:
    created = mem.create_memory(store, "identity", "name", "Budi")
    assert created.category == "identity" and created.value == "Budi"
    assert mem.get_memory(store, "identity", "NAME") == created
    updated = mem.revise(store, "identity", "name", "Budi Santoso")
    assert updated.id == created.id and updated.value == "Budi Santoso"
    deleted = mem.forget(store, "identity", "name")
    assert deleted.id == created.id
    assert mem.get_memory(store, "identity", "name") is None


def test_key_whitespace_and_case_are_one_memory(store: SqliteStore) -> None:
    mem.create_memory(store, "signals", "Favourite  food", "rendang")
    with pytest.raises(mem.MemoryExists, match="already exists"):
        mem.create_memory(store, "signals", "favourite food", "sate")
    assert mem.get_memory(store, "signals", "favourite food").value == "rendang"


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (
            lambda s: mem.create_memory(s, "hobbies", "k", "v"),
            InvalidMemory,
            "unknown category",
        ),
        (lambda s: mem.create_memory(s, "focus", "k", "   "), InvalidMemory, "cannot be empty"),
        (
            lambda s: mem.create_memory(s, "focus", " ", "v"),
            InvalidMemory,
            "key cannot be empty",
        ),
        (lambda s: mem.create_memory(s, "focus", "k", "x" * 2001), InvalidMemory, "at most"),
        (lambda s: mem.revise(s, "focus", "missing", "v"), mem.MemoryNotFound, "no memory"),
        (lambda s: mem.revise(s, None, "missing", "v"), mem.MemoryNotFound, "no memory"),
        (lambda s: mem.forget(s, "focus", "missing"), mem.MemoryNotFound, "no memory"),
        (lambda s: mem.delete_memory(s, "nope"), mem.MemoryNotFound, "no memory"),
        (lambda s: mem.update_memory(s, "nope", "v"), mem.MemoryNotFound, "no memory"),
    ],
)
def test_invalid_requests_raise_clear_errors(store: SqliteStore, call, error, message) -> None:
    with pytest.raises(error, match=message):
        call(store)


def test_update_without_category_needs_an_unambiguous_key(store: SqliteStore) -> None:
    mem.create_memory(store, "focus", "project", "thesis")
    assert mem.revise(store, None, "project", "app").value == "app"
    mem.create_memory(store, "signals", "project", "likes it")
    with pytest.raises(mem.MemoryNotFound, match="several categories"):
        mem.revise(store, None, "project", "x")


def test_by_id_edits_for_the_app(store: SqliteStore) -> None:
    memory = mem.create_memory(store, "focus", "goal", "run 5k")
    edited = mem.update_memory(store, memory.id, "run 10k", key="running goal")
    assert (edited.key, edited.value) == ("running goal", "run 10k")
    mem.delete_memory(store, memory.id)
    assert mem.get_memory_by_id(store, memory.id) is None


def test_mark_recalled_strengthens_and_resets_the_clock(store: SqliteStore) -> None:
    memory = mem.create_memory(store, "identity", "city", "Bandung", now=NOW - timedelta(days=10))
    mem.mark_recalled(store, [memory.id, memory.id, "unknown-id"], NOW)
    after = mem.get_memory_by_id(store, memory.id)
    assert after.recall_count == 1
    assert after.stability > memory.stability
    assert after.last_recalled_at == "2026-11-25 09:30:00"
    assert after.retrievability(NOW) == 1.0


def test_ranking_puts_the_most_retrievable_first(store: SqliteStore) -> None:
    old = mem.create_memory(store, "focus", "old", "stale", now=NOW - timedelta(days=60))
    new = mem.create_memory(store, "focus", "new", "fresh", now=NOW - timedelta(days=1))
    assert [m.id for m in mem.ranked(store, NOW)] == [new.id, old.id]
    assert 0 < old.retrievability(NOW) < new.retrievability(NOW) <= 1


def test_search_scores_relevance_times_retrievability(store: SqliteStore) -> None:
    mem.create_memory(store, "signals", "favourite food", "nasi goreng")
    mem.create_memory(store, "identity", "name", "Budi")
    found = mem.search_memories(store, "what food do I like?", NOW)
    assert [m.key for m, _ in found] == ["favourite food"]
    assert mem.search_memories(store, "weather tomorrow", NOW) == []


def test_prompt_block_empty_when_no_memories(store: SqliteStore) -> None:
    assert prompt_block(mem.ranked(store, NOW)) == ""


def test_prompt_block_groups_by_category_and_respects_budget(store: SqliteStore) -> None:
    mem.create_memory(store, "signals", "drink", "kopi susu", now=NOW - timedelta(days=1))
    mem.create_memory(store, "identity", "name", "Budi", now=NOW - timedelta(days=2))
    mem.create_memory(store, "identity", "city", "Bandung", now=NOW - timedelta(days=90))
    block = prompt_block(mem.ranked(store, NOW), budget_chars=1500)
    assert block.splitlines() == [
        "Your current memories",
        "Identity:",
        "- name: Budi",
        "- city: Bandung",
        "Signals:",
        "- drink: kopi susu",
    ]
    small = prompt_block(mem.ranked(store, NOW), budget_chars=60)
    assert len(small) <= 60
    assert "kopi susu" in small and "Bandung" not in small
    assert prompt_block(mem.ranked(store, NOW), budget_chars=10) == ""


def test_prompt_block_never_exceeds_budget(store: SqliteStore) -> None:
    for i in range(40):
        mem.create_memory(store, "focus", f"item {i}", "x" * (i * 7 % 90 + 1))
    for budget in (0, 25, 100, 333, 1500):
        assert len(prompt_block(mem.ranked(store, NOW), budget)) <= budget


async def test_a_memory_added_by_hand_through_the_async_store(async_store) -> None:
    added = await async_store.create_memory("focus", "project", "thesis")
    assert added.recall_count == 0 and added.last_recalled_at is None
    (ranked_now,) = await async_store.ranked_memories(async_store.clock())
    assert ranked_now.id == added.id and "- project: thesis" in prompt_block([ranked_now])
    with pytest.raises(mem.MemoryExists):
        await async_store.create_memory("focus", "Project", "novel")
    with pytest.raises(InvalidMemory):
        await async_store.create_memory("hobbies", "music", "jazz")
