"""Structured long-term memories: facts about the user, kept by category and key.

A memory is one ``(category, key) -> value`` fact, e.g. ``identity / name -> Budi``.
Categories: *identity* (who the user is), *principles* (how they want to be treated),
*focus* (what they are busy with now), *signals* (preferences and moods noticed).
Each memory carries an FSRS strength (memory.scoring); recall ranks memories by
retrievability, and a recall by memory_search strengthens them. Showing memories in the
system prompt is not a recall: otherwise every turn would strengthen every memory.

Keys are compared case-insensitively and with collapsed whitespace, so "Favourite food"
and "favourite  food" are one memory. Invalid requests raise a ``MemoryRecordError``
subclass whose message is written for the model (tools return it as ``{"error": ...}``).
"""

from __future__ import annotations

import re
import sqlite3
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from memory import scoring
from memory.store import Store, StoreError, format_time, parse_time
from memory.text import content_words, stem, words

CATEGORIES = ("identity", "principles", "focus", "signals")
CATEGORY_TITLES = {
    "identity": "Identity",
    "principles": "Principles",
    "focus": "Focus",
    "signals": "Signals",
}
PROMPT_HEADING = "Your current memories"
MAX_KEY_CHARS = 100
MAX_VALUE_CHARS = 2000


class MemoryRecordError(StoreError):
    """A memory request that cannot be done; the message says why."""


class InvalidMemory(MemoryRecordError):
    """Unknown category, empty key or value, or a value too long."""


class MemoryNotFound(MemoryRecordError):
    """No memory under that category/key or id."""


class MemoryExists(MemoryRecordError):
    """Create was asked for a key that already holds a memory."""


@dataclass(frozen=True)
class Memory:
    """One stored memory with its FSRS state."""

    id: str
    category: str
    key: str
    value: str
    created_at: str
    updated_at: str
    stability: float
    difficulty: float
    last_recalled_at: str | None
    recall_count: int

    @property
    def strength(self) -> scoring.Strength:
        """The FSRS state as a value object."""
        return scoring.Strength(self.stability, self.difficulty, self.recall_count)

    def retrievability(self, now: datetime) -> float:
        """R now: decays from the last recall, or from creation if never recalled."""
        anchor = parse_time(self.last_recalled_at or self.created_at)
        return scoring.retrievability_at(self.strength, anchor, now)


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


def _category(category: str) -> str:
    normal = (category or "").strip().lower()
    if normal not in CATEGORIES:
        raise InvalidMemory(f"unknown category {category!r}; use one of: {', '.join(CATEGORIES)}")
    return normal


def _key(key: str) -> str:
    normal = re.sub(r"\s+", " ", key or "").strip()
    if not normal:
        raise InvalidMemory("a memory key cannot be empty")
    if len(normal) > MAX_KEY_CHARS:
        raise InvalidMemory(f"a memory key is at most {MAX_KEY_CHARS} characters")
    return normal


def _value(value: str) -> str:
    normal = (value or "").strip()
    if not normal:
        raise InvalidMemory("a memory value cannot be empty (use delete_memory to forget)")
    if len(normal) > MAX_VALUE_CHARS:
        raise InvalidMemory(f"a memory value is at most {MAX_VALUE_CHARS} characters")
    return normal


def _now(store: Store, now: datetime | None) -> datetime:
    return now if now is not None else store.clock()


def get_memory(store: Store, category: str, key: str) -> Memory | None:
    """The memory under ``category``/``key`` (key case-insensitive), or None."""
    row = store.conn.execute(
        "SELECT * FROM memories WHERE category = ? AND key = ? COLLATE NOCASE",
        (_category(category), _key(key)),
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
            raise MemoryNotFound(f"no memory {_category(category)}/{_key(key)} to change")
        return found
    rows = store.conn.execute(
        "SELECT * FROM memories WHERE key = ? COLLATE NOCASE ORDER BY category", (_key(key),)
    ).fetchall()
    if not rows:
        raise MemoryNotFound(f"no memory with key {_key(key)!r} to change")
    if len(rows) > 1:
        where = ", ".join(row["category"] for row in rows)
        raise MemoryNotFound(
            f"key {_key(key)!r} exists in several categories ({where}); say which category"
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
    category, key, value = _category(category), _key(key), _value(value)
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
    new_category = _category(category) if category else memory.category
    new_key = _key(key) if key else memory.key
    strength = recalled_strength(memory, now)
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
    value = _value(value)
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
    return _rewrite(store, memory, _value(value), _now(store, now), category, key)


def delete_memory_by_id(store: Store, memory_id: str) -> None:
    """Delete a memory by id; raises MemoryNotFound when there is none."""
    with store.transaction() as conn:
        cursor = conn.execute("DELETE FROM memories WHERE id = ?", (memory_id,))
    if cursor.rowcount == 0:
        raise MemoryNotFound(f"no memory with id {memory_id!r}")


def recalled_strength(memory: Memory, now: datetime) -> scoring.Strength:
    """The FSRS state of ``memory`` after a recall at ``now`` (from its last recall, or
    its creation when never recalled)."""
    anchor = parse_time(memory.last_recalled_at or memory.created_at)
    return scoring.recall(memory.strength, scoring.elapsed_days(anchor, now))


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


def relevance(query: str, memory: Memory) -> float:
    """Share of the query's content words found in the memory (prefix match on stems)."""
    wanted = content_words(query, drop_time_words=False)
    if not wanted:
        return 0.0
    have = words(f"{memory.category} {memory.key} {memory.value}".replace("_", " "))
    hits = sum(1 for word in wanted if any(token.startswith(stem(word)) for token in have))
    return hits / len(wanted)


def search_memories(
    store: Store, query: str, now: datetime, limit: int = 5
) -> list[tuple[Memory, float]]:
    """Memories relevant to ``query``, scored relevance × retrievability, best first."""
    return best_matches(all_memories(store), query, now, limit)


def best_matches(
    memories: Iterable[Memory], query: str, now: datetime, limit: int = 5
) -> list[tuple[Memory, float]]:
    """Of ``memories`` (in category, key order), those relevant to ``query``, scored
    relevance × retrievability, best first (ties keep the given order)."""
    scored = []
    for memory in memories:
        rel = relevance(query, memory)
        if rel > 0:
            scored.append((memory, rel * memory.retrievability(now)))
    scored.sort(key=lambda pair: pair[1], reverse=True)
    return scored[:limit]


def prompt_block(memories: Iterable[Memory], budget_chars: int = 1500) -> str:
    """The "Your current memories" section of the system message, within ``budget_chars``.

    ``memories`` come most retrievable first (``ranked``) and are chosen in that order
    until the budget is spent, then shown grouped by category in a fixed order. Returns ""
    when there is nothing to show.
    """
    chosen: dict[str, list[str]] = {category: [] for category in CATEGORIES}
    # Fixed cost: the heading, and one title line per category that gets a memory.
    used = len(PROMPT_HEADING)
    for memory in memories:
        line = f"- {memory.key}: {memory.value}"
        cost = len(line) + 1
        if not chosen[memory.category]:
            cost += len(CATEGORY_TITLES[memory.category]) + 2
        if used + cost > budget_chars:
            continue
        chosen[memory.category].append(line)
        used += cost
    parts = [PROMPT_HEADING]
    for category in CATEGORIES:
        if chosen[category]:
            parts.append(f"{CATEGORY_TITLES[category]}:")
            parts.extend(chosen[category])
    return "\n".join(parts) if len(parts) > 1 else ""
