"""memory_search over a seeded multi-week history on a fixed clock (EN and ID cues)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from config.settings import Settings
from memory.sqlite.async_store import AsyncSqliteStore
from memory.sqlite.memories import create_memory, get_memory
from memory.sqlite.store import SqliteStore
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


def seed_history(store: SqliteStore) -> None:
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
def store(tmp_path: Path) -> Iterator[SqliteStore]:
    s = SqliteStore.open_home(tmp_path, clock=lambda: NOW)
    yield s
    s.close()


@pytest.fixture
def ctx(store: SqliteStore) -> ToolContext:
    return ToolContext(
        Settings(home=store.path.parent, timezone=TZ), AsyncSqliteStore(store), "s", lambda: NOW
    )


async def search(
    ctx: ToolContext, query: str, asked_at: datetime = NOW, session: str = "s"
) -> dict[str, Any]:
    """Ask ``query`` as this turn's question in ``session``, then run the tool for it."""
    question = ctx.store.blocking.add_message(session, "user", query, created_at=asked_at)
    turn = replace(ctx, session_id=session, user_message_id=question.id)
    return await ToolRegistry(tool.TOOLS).execute("memory_search", {"query": query}, turn)


def contents(result: dict[str, Any]) -> list[str]:
    return [f"{t['speaker']}: {t['content']}" for t in result["raw_messages"]]


async def test_what_did_i_cook_last_thursday(ctx: ToolContext) -> None:
    seed_history(ctx.store.blocking)
    result = await search(ctx, "What did I cook last Thursday?")
    assert set(result) == {"structured", "raw_messages", "searched"}  # DESIGN.md's shape
    assert set(result["structured"]) == {"semantic", "episodic", "segments"}
    assert contents(result)[0] == "user: Tonight I cooked rendang for dinner, took four hours"
    first = result["raw_messages"][0]
    assert set(first) == {"id", "timestamp", "speaker", "content", "session"}
    assert first["timestamp"] == "Thu 19 Nov 2026 19:00"  # no "after": an acknowledgement
    segment = result["structured"]["segments"][0]  # spends no budget
    assert set(segment) == {
        *("id", "session_id", "session", "start", "end"),
        *("start_message_id", "end_message_id"),
    }
    assert segment["start"].startswith("Thu 19 Nov")
    summary = result["structured"]["episodic"][0]
    assert summary.startswith(f"{segment['start']} – {segment['end']}") and "rendang" in summary
    assert result["searched"] == "lexical"
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
    seed_history(ctx.store.blocking)
    result = await search(ctx, query)
    assert result["raw_messages"], result
    assert all(expected in text or text.startswith("assistant:") for text in contents(result))
    assert expected in contents(result)[0]


async def test_recent_cue_returns_newest_without_the_question(ctx: ToolContext) -> None:
    seed_history(ctx.store.blocking)
    result = await search(ctx, "terakhir kali aku masak apa?")
    assert result["raw_messages"]
    assert all("terakhir kali" not in text for text in contents(result))
    assert contents(result)[0] == "user: I went to the dentist, my tooth hurts"


async def test_structured_facts_first_and_marked_recalled(ctx: ToolContext) -> None:
    store = ctx.store.blocking
    create_memory(store, "signals", "favourite food", "rendang", now=NOW - timedelta(days=3))
    create_memory(store, "identity", "favourite city", "Yogyakarta", now=NOW - timedelta(days=3))
    seed_history(store)
    result = await search(ctx, "favourite food and city")
    semantic = result["structured"]["semantic"]
    assert {m["key"] for m in semantic} == {"favourite food", "favourite city"}
    assert {"category": "signals", "key": "favourite food", "value": "rendang"} in semantic
    # Facts do not stand in for the turns: the turns are searched all the same.
    assert "raw_messages" in result
    recalled = get_memory(store, "signals", "favourite food")
    assert recalled is not None and recalled.recall_count == 1


async def test_a_rare_word_finds_its_turn(ctx: ToolContext) -> None:
    seed_history(ctx.store.blocking)
    result = await search(ctx, "dentist")
    assert contents(result) == ["user: I went to the dentist, my tooth hurts"]


async def test_gate_and_errors(ctx: ToolContext) -> None:
    registry = ToolRegistry(tool.TOOLS)
    assert await registry.enabled(ctx) == []
    ctx.store.blocking.add_message("s", "user", "hello")
    assert [spec.name for spec in await registry.enabled(ctx)] == ["memory_search"]
    assert "error" in await registry.execute("memory_search", {"query": ""}, ctx)
    assert "error" in await registry.execute("memory_search", {}, ctx)
    assert "error" in await registry.execute("memory_search", {"query": "x", "k": 1}, ctx)


async def test_other_sessions_are_searched_and_named_by_title(ctx: ToolContext) -> None:
    store = ctx.store.blocking
    dinner = store.create_session("Dinner ideas")
    store.add_message(dinner.id, "user", "Tonight I cooked nasi goreng", created_at=evening(6))
    store.add_message(dinner.id, "memory_tool", "SECRET nasi goreng note", created_at=evening(6))
    result = await search(ctx, "What did I cook last Thursday?", session="new")
    [turn] = result["raw_messages"]
    assert (turn["timestamp"], turn["speaker"], turn["content"], turn["session"]) == (
        "Thu 19 Nov 2026 19:00",
        "user",
        "Tonight I cooked nasi goreng",
        "Dinner ideas",
    )
    # That chat was never cut into segments (the app's catch-up does it, not the tool):
    # its messages are found all the same.
    assert result["structured"]["episodic"] == result["structured"]["segments"] == []
    assert "SECRET" not in str(result)


async def test_current_session_wins_ties(ctx: ToolContext) -> None:
    store = ctx.store.blocking
    store.add_message("s", "user", "my cat Miso is orange", created_at=evening(4))
    other = store.create_session("Elsewhere")
    store.add_message(other.id, "user", "my cat Miso is orange", created_at=evening(3))
    result = await search(ctx, "Miso")  # equal BM25 scores; the other one is newer
    assert [t["session"] for t in result["raw_messages"]] == ["New chat", "Elsewhere"]
    assert result["raw_messages"][0]["timestamp"].startswith("Sat 21 Nov")


async def test_the_question_is_left_out_however_old_it_is(ctx: ToolContext) -> None:
    """The turn names its question: a turn that started 20 minutes ago (slow model,
    earlier tool calls) still does not find its own question as a memory."""
    ctx.store.blocking.add_message(
        "s", "user", "I adopted a kitten called Miso", created_at=evening(9)
    )
    result = await search(ctx, "kitten Miso", asked_at=NOW - timedelta(minutes=20))
    assert contents(result) == ["user: I adopted a kitten called Miso"]


async def test_offered_only_with_history_beyond_the_question(ctx: ToolContext) -> None:
    registry = ToolRegistry(tool.TOOLS)
    question = ctx.store.blocking.add_message("s", "user", "what did I cook?")
    turn = replace(ctx, user_message_id=question.id)
    assert await registry.enabled(turn) == []
    after = ctx.store.blocking.add_message("s", "user", "and what about Friday?")
    assert [
        spec.name for spec in await registry.enabled(replace(ctx, user_message_id=after.id))
    ] == ["memory_search"]


def test_format_search_reads_well() -> None:
    text = tool.format_search(
        {
            "structured": {
                "semantic": [{"category": "identity", "key": "name", "value": "Budi"}],
                "episodic": ['Thu 19 Nov 2026 19:00 – Thu 19 Nov 2026 19:30, in "Dinner": bikes'],
                "segments": [{"id": 1, "session": "Dinner"}],
            },
            "raw_messages": [
                {
                    "id": 7,
                    "timestamp": "Thu 19 Nov 2026 19:00",
                    "speaker": "user",
                    "content": "yes, the blue one",
                    "session": "Dinner",
                    "before": {"speaker": "assistant", "content": "The blue or the red bike?"},
                }
            ],
            "searched": "hybrid",
        }
    )
    assert text.splitlines() == [
        "Saved facts:",
        "- identity/name: Budi",
        'Past messages, best first ("you said": the user; "I said": you):',
        "    (before) I said: The blue or the red bike?",
        '- [Thu 19 Nov 2026 19:00, in "Dinner"] you said: yes, the blue one',
        "Past conversations:",
        '- Thu 19 Nov 2026 19:00 – Thu 19 Nov 2026 19:30, in "Dinner": bikes',
    ]
    empty = {"structured": {"semantic": [], "episodic": [], "segments": []}, "raw_messages": []}
    assert tool.format_search(empty).startswith("Nothing")
