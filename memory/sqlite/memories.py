"""Structured long-term memories: facts about the user, kept by category and key.

A memory is one ``(category, key) -> value`` fact, e.g. ``identity / name -> Budi``.
Categories: *identity* (who the user is), *principles* (how they want to be treated),
*focus* (what they are busy with now), *signals* (preferences and moods noticed).
Each memory carries an FSRS strength (memory.rules.scoring); recall ranks memories by
retrievability, and a recall by memory_search strengthens them. Showing memories in the
system prompt is not a recall: otherwise every turn would strengthen every memory.

Keys are compared case-insensitively and with collapsed whitespace, so "Favourite food"
and "favourite  food" are one memory. Invalid requests raise a ``MemoryRecordError``
subclass whose message is written for the model (tools return it as ``{"error": ...}``).
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
from memory.sqlite.store import Store
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


def _now(store: Store, now: datetime | None) -> datetime:
    return now if now is not None else store.clock()


def get_memory(store: Store, category: str, key: str) -> Memory | None:
    """The memory under ``category``/``key`` (key case-insensitive), or None."""
    row = store.conn.execute(
        "SELECT * FROM memories WHERE category = ? AND key = ? COLLATE NOCASE",
        (check_category(category), check_key(key)),
    ).fetchone()
    return _memory(row) if row else None


def get_memory_by_id(store: Store, memory_id: str) -> Memory | None:
    """The memory with that id, or None."""
    row = store.conn.execute("SELECT * FROM memories WHERE id = ?", (memory_id,)).fetchone()
    return _memory(row) if row else None


def find_by_key(store: Store, key: str, category: str | None = None) -> Memory:
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


def all_memories(store: Store) -> list[Memory]:
    """Every memory, in category then key order."""
    rows = store.conn.execute("SELECT * FROM memories ORDER BY category, key").fetchall()
    return [_memory(row) for row in rows]


def create_memory(
    store: Store, category: str, key: str, value: str, now: datetime | None = None
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


def _rewrite(
    store: Store,
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


def update_memory(
    store: Store, category: str | None, key: str, value: str, now: datetime | None = None
) -> Memory:
    """Change the value of an existing memory; raises MemoryNotFound when there is none."""
    value = check_value(value)
    return _rewrite(store, find_by_key(store, key, category), value, _now(store, now))


def delete_memory(store: Store, category: str | None, key: str) -> Memory:
    """Forget a memory; returns what was deleted, raises MemoryNotFound when there is none."""
    memory = find_by_key(store, key, category)
    delete_memory_by_id(store, memory.id)
    return memory


def update_memory_by_id(
    store: Store,
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


def delete_memory_by_id(store: Store, memory_id: str) -> None:
    """Delete a memory by id; raises MemoryNotFound when there is none."""
    with store.transaction() as conn:
        cursor = conn.execute("DELETE FROM memories WHERE id = ?", (memory_id,))
    if cursor.rowcount == 0:
        raise MemoryNotFound(f"no memory with id {memory_id!r}")


def mark_recalled(store: Store, ids: Iterable[str], now: datetime) -> None:
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


def ranked(store: Store, now: datetime) -> list[Memory]:
    """Every memory, most retrievable first (ties: most recently updated first)."""
    memories = all_memories(store)
    memories.sort(key=lambda m: m.updated_at, reverse=True)
    memories.sort(key=lambda m: m.retrievability(now), reverse=True)
    return memories


def search_memories(
    store: Store, query: str, now: datetime, limit: int = 5
) -> list[tuple[Memory, float]]:
    """Memories relevant to ``query``, scored relevance × retrievability, best first."""
    return best_matches(all_memories(store), query, now, limit)
