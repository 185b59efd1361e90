"""The person's time zone through the real graph: the clock the model is told, and the
windows of "this morning" in memory_search (issue 13, item 4)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from graph.runner import run_turn
from tests.support.chat_model import tool_call
from tools.memory_search import TOOLS as MEMORY_SEARCH_TOOLS
from tools.registry import ToolRegistry


def system_text(ctx) -> str:
    """The system message of the scripted model's first call."""
    return str(ctx.chat_model.calls[0]["messages"][0].content)


@pytest.mark.parametrize(
    ("tz", "clock"),
    [
        # FIXED_NOW is Wednesday 25 November 2026, 09:30 UTC.
        ("Asia/Tokyo", "Wednesday 25 November 2026, 18:30 (Asia/Tokyo, UTC+09:00)"),
        (
            "America/Los_Angeles",
            "Wednesday 25 November 2026, 01:30 (America/Los_Angeles, UTC-08:00)",
        ),
        ("UTC", "Wednesday 25 November 2026, 09:30 (UTC)"),
    ],
)
async def test_the_model_is_told_the_time_in_the_persons_zone(make_context, tz, clock) -> None:
    ctx = make_context(["Evening!"], timezone=tz)
    await run_turn(ctx, "s1", "what time is it for me?")
    assert f"Current date and time: {clock}." in system_text(ctx)


async def test_this_morning_is_searched_in_the_persons_zone(make_context) -> None:
    # Tuesday 16:00 UTC is Wednesday 01:00 in Tokyo ("this morning" there); Tuesday 10:00
    # UTC is Tuesday 19:00 in Tokyo (yesterday evening). In UTC, neither is this morning.
    registry = ToolRegistry(MEMORY_SEARCH_TOOLS)
    script = [tool_call("memory_search", {"query": "what did I eat this morning"}), "Natto."]
    ctx = make_context(script, timezone="Asia/Tokyo", registry=registry)
    blocking = ctx.store.blocking
    blocking.add_message(
        "s0", "user", "I had ramen for dinner", created_at=datetime(2026, 11, 24, 10, tzinfo=UTC)
    )
    blocking.add_message(
        "s0", "user", "I ate natto for breakfast", created_at=datetime(2026, 11, 24, 16, tzinfo=UTC)
    )
    result = await run_turn(ctx, "s1", "what did I eat this morning?")
    assert result.answer == "Natto."
    tool = next(m for m in await ctx.store.messages("s1") if m.tool_name == "memory_search")
    turns = tool.meta["result"]["raw_messages"]
    assert [(t["timestamp"], t["speaker"], t["content"]) for t in turns] == [
        ("Wed 25 Nov 2026 01:00", "user", "I ate natto for breakfast")
    ]
