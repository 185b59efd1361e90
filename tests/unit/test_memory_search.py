"""memory_search over a seeded multi-week history on a fixed clock (EN and ID cues)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from graph.context import Settings
from memory.memories import create_memory, get_memory
from memory.store import Store
from tools import memory_search as tool
from tools.base import ToolContext
from tools.registry import ToolRegistry

# Wednesday 25 November 2026, 16:30 in Jakarta.
NOW = datetime(2026, 11, 25, 9, 30, tzinfo=UTC)
TZ = "Asia/Jakarta"
DISHES = [
    "soto ayam",
    "gado-gado",
    "mie goreng",
    "pepes ikan",
    "sayur asem",
    "opor ayam",
    "rawon",
    "bakso",
    "nasi uduk",
    "sate ayam",
    "ayam bakar",
    "tempe orek",
    "capcay",
]


def evening(days_ago: int) -> datetime:
    """19:00 Jakarta time, ``days_ago`` days before NOW's date."""
    return datetime(2026, 11, 25, 12, 0, tzinfo=UTC) - timedelta(days=days_ago)


def seed_history(store: Store) -> None:
    for days_ago in range(21, 0, -1):
        when = evening(days_ago)
        if when.date().isoformat() == "2026-11-19":  # last Thursday
            text = "Tonight I cooked rendang for dinner, took four hours"
        elif days_ago == 1:  # yesterday (kemarin)
            text = "I went to the dentist, my tooth hurts"
        else:
            text = f"Tonight I cooked {DISHES[days_ago % len(DISHES)]}"
        store.add_message("s", "user", text, created_at=when)
        store.add_message(
            "s", "assistant", "Nice! How did it turn out?", created_at=when + timedelta(minutes=1)
        )
        store.add_message(
            "s",
            "memory_tool",
            f"SECRET tool note about {text}",
            created_at=when + timedelta(minutes=2),
        )


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store.open_home(tmp_path, clock=lambda: NOW)
    yield s
    s.close()


@pytest.fixture
def ctx(store: Store) -> ToolContext:
    return ToolContext(Settings(home=store.path.parent, timezone=TZ), store, "s", lambda: NOW)


async def search(ctx: ToolContext, query: str) -> dict[str, Any]:
    ctx.store.add_message("s", "user", query, created_at=NOW)  # the turn's question
    return await ToolRegistry(tool.TOOLS).execute("memory_search", {"query": query}, ctx)


def contents(result: dict[str, Any]) -> list[str]:
    return [m["content"] for m in result["raw_messages"]]


async def test_what_did_i_cook_last_thursday(ctx: ToolContext) -> None:
    seed_history(ctx.store)
    result = await search(ctx, "What did I cook last Thursday?")
    assert set(result) == {"structured", "raw_messages"}
    assert set(result["structured"]) == {"semantic", "episodic", "segments"}
    assert contents(result) == ["user: Tonight I cooked rendang for dinner, took four hours"]
    assert result["raw_messages"][0]["timestamp"] == "Thu 19 Nov 2026 19:00"
    assert any("rendang" in summary for summary in result["structured"]["episodic"])
    assert result["structured"]["episodic"][0].startswith("Thu 19 Nov, evening:")
    segment = result["structured"]["segments"][0]
    assert {"id", "start", "end", "lines"} <= set(segment)
    assert "rendang" in segment["lines"][0]
    assert "SECRET" not in str(result)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("kemarin aku ngapain?", "dentist"),
        ("aku masak apa kamis lalu?", "rendang"),
        ("what did I cook 2 days ago", "cooked"),
    ],
)
async def test_indonesian_and_relative_cues(ctx: ToolContext, query: str, expected: str) -> None:
    seed_history(ctx.store)
    result = await search(ctx, query)
    assert result["raw_messages"], result
    assert all(
        expected in m["content"] or m["content"].startswith("assistant:")
        for m in result["raw_messages"]
    )
    assert any(expected in m["content"] for m in result["raw_messages"])


async def test_recent_cue_returns_newest_without_the_question(ctx: ToolContext) -> None:
    seed_history(ctx.store)
    result = await search(ctx, "terakhir kali aku masak apa?")
    assert result["raw_messages"]
    assert all("terakhir kali" not in m["content"] for m in result["raw_messages"])
    assert result["raw_messages"][-1]["content"] == "assistant: Nice! How did it turn out?"


async def test_structured_facts_first_and_marked_recalled(ctx: ToolContext) -> None:
    store = ctx.store
    create_memory(store, "signals", "favourite food", "rendang", now=NOW - timedelta(days=3))
    create_memory(store, "identity", "favourite city", "Yogyakarta", now=NOW - timedelta(days=3))
    seed_history(store)
    result = await search(ctx, "favourite food and city")
    semantic = result["structured"]["semantic"]
    assert {m["key"] for m in semantic} == {"favourite food", "favourite city"}
    assert {"category": "signals", "key": "favourite food", "value": "rendang"} in semantic
    # Two structured hits and no time cue: raw search is skipped.
    assert result["raw_messages"] == []
    recalled = get_memory(store, "signals", "favourite food")
    assert recalled is not None and recalled.recall_count == 1


async def test_thin_structured_results_fall_back_to_raw(ctx: ToolContext) -> None:
    seed_history(ctx.store)
    result = await search(ctx, "dentist")
    assert contents(result) == ["user: I went to the dentist, my tooth hurts"]


async def test_gate_and_errors(ctx: ToolContext) -> None:
    registry = ToolRegistry(tool.TOOLS)
    assert registry.enabled(ctx) == []
    ctx.store.add_message("s", "user", "hello")
    assert [spec.name for spec in registry.enabled(ctx)] == ["memory_search"]
    assert "error" in await registry.execute("memory_search", {"query": ""}, ctx)
    assert "error" in await registry.execute("memory_search", {}, ctx)
    assert "error" in await registry.execute("memory_search", {"query": "x", "k": 1}, ctx)


def test_format_search_reads_well() -> None:
    text = tool.format_search(
        {
            "structured": {
                "semantic": [{"category": "identity", "key": "name", "value": "Budi"}],
                "episodic": ["Thu 19 Nov, evening: cooked rendang"],
                "segments": [],
            },
            "raw_messages": [{"timestamp": "Thu 19 Nov 2026 19:00", "content": "user: hi"}],
        }
    )
    assert "identity/name: Budi" in text and "[Thu 19 Nov 2026 19:00] user: hi" in text
    assert tool.format_search({"structured": {}, "raw_messages": []}).startswith("Nothing")
