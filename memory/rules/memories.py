"""Memory rules."""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime

from memory.errors import InvalidMemory
from memory.rules import scoring
from memory.rules.text import content_words, stem, words
from memory.types import Memory, parse_time

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


def check_category(category: str) -> str:
    normal = (category or "").strip().lower()
    if normal not in CATEGORIES:
        raise InvalidMemory(f"unknown category {category!r}; use one of: {', '.join(CATEGORIES)}")
    return normal


def check_key(key: str) -> str:
    normal = re.sub(r"\s+", " ", key or "").strip()
    if not normal:
        raise InvalidMemory("a memory key cannot be empty")
    if len(normal) > MAX_KEY_CHARS:
        raise InvalidMemory(f"a memory key is at most {MAX_KEY_CHARS} characters")
    return normal


def check_value(value: str) -> str:
    normal = (value or "").strip()
    if not normal:
        raise InvalidMemory("a memory value cannot be empty (use delete_memory to forget)")
    if len(normal) > MAX_VALUE_CHARS:
        raise InvalidMemory(f"a memory value is at most {MAX_VALUE_CHARS} characters")
    return normal


def rewritten(
    memory: Memory, now: datetime, category: str | None, key: str | None
) -> tuple[str, str, scoring.Strength]:
    """Where a changed memory goes, and its strength: the category and key checked (its
    own when not given), and the FSRS state of a restated fact (it counts as a recall)."""
    new_category = check_category(category) if category else memory.category
    new_key = check_key(key) if key else memory.key
    return new_category, new_key, recalled_strength(memory, now)


def recalled_strength(memory: Memory, now: datetime) -> scoring.Strength:
    """The FSRS state of ``memory`` after a recall at ``now`` (from its last recall, or
    its creation when never recalled)."""
    anchor = parse_time(memory.last_recalled_at or memory.created_at)
    return scoring.recall(memory.strength, scoring.elapsed_days(anchor, now))


def relevance(query: str, memory: Memory) -> float:
    """Share of the query's content words found in the memory (prefix match on stems)."""
    wanted = content_words(query, drop_time_words=False)
    if not wanted:
        return 0.0
    have = words(f"{memory.category} {memory.key} {memory.value}".replace("_", " "))
    hits = sum(1 for word in wanted if any(token.startswith(stem(word)) for token in have))
    return hits / len(wanted)


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
