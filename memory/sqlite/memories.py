"""Structured long-term memories: facts about the user, kept by category and key.

A memory is one ``(category, key) -> value`` fact, e.g. ``identity / name -> Budi``.
Categories: *identity* (who the user is), *principles* (how they want to be treated),
*focus* (what they are busy with now), *signals* (preferences and moods noticed).
Each memory carries an FSRS strength (memory.rules.scoring); recall ranks memories by
retrievability, and a recall by memory_search strengthens them. Showing memories in the
system prompt is not a recall: otherwise every turn would strengthen every memory.

Writes by id are ``update_memory`` / ``delete_memory`` (the Memories tab), by key
``revise`` / ``forget`` (the tools); ``create_memory`` serves both. Keys compare ignoring
case and repeated spaces. Invalid requests raise a ``MemoryRecordError`` written for the
model.
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Iterable
from datetime import datetime

from memory.errors import MemoryExists, MemoryNotFound
from memory.rules import scoring
from memory.rules.memories import (
    best_matches,
    check_category,
    check_key,
    check_value,
    recalled_strength,
    rewritten,
)
from memory.sqlite.store import SqliteStore
from memory.types import Memory, format_time


def _memory(row: sqlite3.Row) -> Memory:
    return Memory(
        id=row["id"],
        category=row["category"],
        key=row["key"],
        value=row["value"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        stability=row["stability"],
        difficulty=row["difficulty"],
        last_recalled_at=row["last_recalled_at"],
        recall_count=row["recall_count"],
    )


def _now(store: SqliteStore, now: datetime | None) -> datetime:
    return now if now is not None else store.clock()


def get_memory(store: SqliteStore, category: str, key: str) -> Memory | None:
    """The memory under ``category``/``key`` (key case-insensitive), or None."""
    row = store.conn.execute(
        "SELECT * FROM memories WHERE category = ? AND key = ? COLLATE NOCASE",
        (check_category(category), check_key(key)),
    ).fetchone()
    return _memory(row) if row else None


def get_memory_by_id(store: SqliteStore, memory_id: str) -> Memory | None:
    """The memory with that id, or None."""
    row = store.conn.execute("SELECT * FROM memories WHERE id = ?", (memory_id,)).fetchone()
    return _memory(row) if row else None


def find_by_key(store: SqliteStore, key: str, category: str | None = None) -> Memory:
    """The one memory a key names; the category is needed only when the key is ambiguous."""
    if category:
        found = get_memory(store, category, key)
        if found is None:
            raise MemoryNotFound(f"no memory {check_category(category)}/{check_key(key)} to change")
        return found
    rows = store.conn.execute(
        "SELECT * FROM memories WHERE key = ? COLLATE NOCASE ORDER BY category", (check_key(key),)
    ).fetchall()
    if not rows:
        raise MemoryNotFound(f"no memory with key {check_key(key)!r} to change")
    if len(rows) > 1:
        where = ", ".join(row["category"] for row in rows)
        raise MemoryNotFound(
            f"key {check_key(key)!r} exists in several categories ({where}); say which category"
        )
    return _memory(rows[0])


def all_memories(store: SqliteStore) -> list[Memory]:
    """Every memory, in category then key order."""
    rows = store.conn.execute("SELECT * FROM memories ORDER BY category, key").fetchall()
    return [_memory(row) for row in rows]


def create_memory(
    store: SqliteStore, category: str, key: str, value: str, now: datetime | None = None
) -> Memory:
    """Store a new fact; raises MemoryExists when the key is taken (update it instead)."""
    category, key, value = check_category(category), check_key(key), check_value(value)
    stamp = format_time(_now(store, now))
    strength = scoring.initial_strength()
    memory_id = str(uuid.uuid4())
    with store.transaction() as conn:
        existing = conn.execute(
            "SELECT value FROM memories WHERE category = ? AND key = ? COLLATE NOCASE",
            (category, key),
        ).fetchone()
        if existing is not None:
            raise MemoryExists(
                f"memory {category}/{key} already exists (value: {existing['value']!r}); "
                "use update_memory to change it"
            )
        conn.execute(
            """INSERT INTO memories (id, category, key, value, created_at, updated_at,
                                     stability, difficulty, last_recalled_at, recall_count)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL, 0)""",
            (
                memory_id,
                category,
                key,
                value,
                stamp,
                stamp,
                strength.stability,
                strength.difficulty,
            ),
        )
    created = get_memory_by_id(store, memory_id)
    assert created is not None
    return created


def import_memory(store: SqliteStore, memory: Memory) -> bool:
    """Keep a memory brought from a Companion export as it was (its id, times and
    strength); False, and nothing added, when its id or its key is here already
    (InvalidMemory: not a valid memory)."""
    category, key = check_category(memory.category), check_key(memory.key)
    value = check_value(memory.value)
    with store.transaction() as conn:
        known = conn.execute(
            "SELECT 1 FROM memories WHERE id = ? OR (category = ? AND key = ? COLLATE NOCASE)",
            (memory.id, category, key),
        ).fetchone()
        if known is not None:
            return False
        conn.execute(
            """INSERT INTO memories (id, category, key, value, created_at, updated_at,
                                     stability, difficulty, last_recalled_at, recall_count)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
            (
                memory.id,
                category,
                key,
                value,
                memory.created_at,
                memory.updated_at,
                memory.stability,
                memory.difficulty,
                memory.last_recalled_at,
                memory.recall_count,
            ),
        )
    return True


def _rewrite(
    store: SqliteStore,
    memory: Memory,
    value: str,
    now: datetime,
    category: str | None = None,
    key: str | None = None,
) -> Memory:
    """Save a changed memory; restating a fact counts as a recall (it strengthens it)."""
    new_category, new_key, strength = rewritten(memory, now, category, key)
    stamp = format_time(now)
    with store.transaction() as conn:
        clash = conn.execute(
            """SELECT 1 FROM memories WHERE category = ? AND key = ? COLLATE NOCASE
               AND id != ?""",
            (new_category, new_key, memory.id),
        ).fetchone()
        if clash:
            raise MemoryExists(f"memory {new_category}/{new_key} already exists")
        cursor = conn.execute(
            """UPDATE memories SET category = ?, key = ?, value = ?, updated_at = ?,
                      stability = ?, difficulty = ?, last_recalled_at = ?, recall_count = ?
               WHERE id = ?""",
            (
                new_category,
                new_key,
                value,
                stamp,
                strength.stability,
                strength.difficulty,
                stamp,
                strength.recall_count,
                memory.id,
            ),
        )
    if cursor.rowcount == 0:
        raise MemoryNotFound(f"memory {memory.category}/{memory.key} no longer exists")
    updated = get_memory_by_id(store, memory.id)
    assert updated is not None
    return updated


def revise(
    store: SqliteStore, category: str | None, key: str, value: str, now: datetime | None = None
) -> Memory:
    """By key (the tools' revise): change the value of the memory ``key`` names (in
    ``category`` when several share it); MemoryNotFound when there is none."""
    value = check_value(value)
    return _rewrite(store, find_by_key(store, key, category), value, _now(store, now))


def forget(store: SqliteStore, category: str | None, key: str) -> Memory:
    """By key (the tools' forget): delete the memory ``key`` names; what was deleted,
    MemoryNotFound when there is none."""
    memory = find_by_key(store, key, category)
    delete_memory(store, memory.id)
    return memory


def update_memory(
    store: SqliteStore,
    memory_id: str,
    value: str,
    *,
    key: str | None = None,
    category: str | None = None,
    now: datetime | None = None,
) -> Memory:
    """Edit a memory from the app's Memories tab (value, and optionally key/category)."""
    memory = get_memory_by_id(store, memory_id)
    if memory is None:
        raise MemoryNotFound(f"no memory with id {memory_id!r}")
    return _rewrite(store, memory, check_value(value), _now(store, now), category, key)


def delete_memory(store: SqliteStore, memory_id: str) -> None:
    """Delete a memory by id; raises MemoryNotFound when there is none."""
    with store.transaction() as conn:
        cursor = conn.execute("DELETE FROM memories WHERE id = ?", (memory_id,))
    if cursor.rowcount == 0:
        raise MemoryNotFound(f"no memory with id {memory_id!r}")


def mark_recalled(store: SqliteStore, ids: Iterable[str], now: datetime) -> None:
    """Record that these memories were recalled at ``now`` (FSRS stability update)."""
    wanted = list(dict.fromkeys(ids))
    if not wanted:
        return
    stamp = format_time(now)
    with store.transaction() as conn:
        for memory_id in wanted:
            row = conn.execute("SELECT * FROM memories WHERE id = ?", (memory_id,)).fetchone()
            if row is None:
                continue
            strength = recalled_strength(_memory(row), now)
            conn.execute(
                """UPDATE memories SET stability = ?, difficulty = ?, last_recalled_at = ?,
                          recall_count = ? WHERE id = ?""",
                (strength.stability, strength.difficulty, stamp, strength.recall_count, memory_id),
            )


def ranked(store: SqliteStore, now: datetime) -> list[Memory]:
    """Every memory, most retrievable first (ties: most recently updated first)."""
    memories = all_memories(store)
    memories.sort(key=lambda m: m.updated_at, reverse=True)
    memories.sort(key=lambda m: m.retrievability(now), reverse=True)
    return memories


def search_memories(
    store: SqliteStore, query: str, now: datetime, limit: int = 5
) -> list[tuple[Memory, float]]:
    """Memories relevant to ``query``, scored relevance × retrievability, best first."""
    return best_matches(all_memories(store), query, now, limit)
