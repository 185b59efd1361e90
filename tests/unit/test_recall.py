"""Recall across sessions, end to end: a new chat answers from an older one through the
real graph, the real memory_search tool and a real store (memory.recall underneath)."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from langchain_core.messages import BaseMessage, ToolMessage

from graph.context import Context
from graph.runner import run_turn
from memory.sqlite.recall import recall
from memory.sqlite.segments import catch_up_segments, pending_sessions
from memory.sqlite.store import SqliteStore
from tests.support.chat_model import ScriptedChatModel, tool_call
from tools import memory_search
from tools.registry import ToolRegistry

THURSDAY_EVENING = datetime(2026, 11, 19, 19, 0, tzinfo=UTC)  # FIXED_NOW is Wed 25 Nov
QUESTION = "What did I cook last Thursday?"


def seed_dinner_chat(store: SqliteStore) -> str:
    """Session A: last Thursday's chat about dinner, titled as the app titles it."""
    dinner = store.create_session("Dinner ideas").id
    store.add_message(dinner, "user", "Tonight I cooked nasi goreng", created_at=THURSDAY_EVENING)
    store.add_message(
        dinner,
        "assistant",
        "Sounds delicious! Extra chili?",
        created_at=THURSDAY_EVENING + timedelta(minutes=1),
    )
    return dinner


def answers_from_memory(messages: list[BaseMessage], _: dict[str, Any]) -> Any:
    """Ask memory first; then answer only from what the tool result says."""
    results = [m for m in messages if isinstance(m, ToolMessage)]
    if not results:
        return tool_call("memory_search", {"query": QUESTION}, "recall-1")
    said = re.search(
        r'in "([^"]+)"\] you said: Tonight I cooked ([a-z ]+)', str(results[-1].content)
    )
    if said is None:
        return "I don't remember."
    return f"You cooked {said.group(2)} (in our chat about {said.group(1)})."


async def test_a_new_chat_answers_from_an_older_one(
    make_context: Callable[..., Context],
) -> None:
    ctx = make_context(answers_from_memory, registry=ToolRegistry(memory_search.TOOLS))
    seed_dinner_chat(ctx.store.blocking)
    new_chat = ctx.store.blocking.create_session("New chat").id

    result = await run_turn(ctx, new_chat, QUESTION)

    assert result.answer == "You cooked nasi goreng (in our chat about Dinner ideas)."
    assert result.tool_names == ["memory_search"]
    stored = next(m for m in ctx.store.blocking.messages(new_chat) if m.role == "memory_tool")
    turns = stored.meta["result"]["raw_messages"]
    assert {k: turns[0][k] for k in ("timestamp", "speaker", "content", "session")} == {
        "timestamp": "Thu 19 Nov 2026 19:00",
        "speaker": "user",
        "content": "Tonight I cooked nasi goreng",
        "session": "Dinner ideas",
    }
    assert all(QUESTION not in t["content"] for t in turns)  # the question is not a memory


async def test_memory_search_is_not_offered_for_the_first_message_ever(
    make_context: Callable[..., Context],
) -> None:
    ctx = make_context(["Hello!"], registry=ToolRegistry(memory_search.TOOLS))
    await run_turn(ctx, "first", "hi there")
    assert isinstance(ctx.chat_model, ScriptedChatModel)
    assert ctx.chat_model.calls[0]["tools"] == []  # only the question exists


async def test_after_catch_up_the_older_chat_is_an_episode(store: SqliteStore) -> None:
    dinner = seed_dinner_chat(store)
    assert pending_sessions(store) == [dinner]
    assert await catch_up_segments(store) == 1  # app start
    assert await catch_up_segments(store) == 0
    question = store.add_message("new", "user", QUESTION)
    found = recall(
        store,
        QUESTION,
        now=store.clock(),
        session_id="new",
        question_id=question.id,
    )
    assert [e.session_title for e in found.segments] == ["Dinner ideas"]
    assert "nasi goreng" in found.segments[0].segment.summary
    assert [(r.message.content, r.session_title) for r in found.turns][:1] == [
        ("Tonight I cooked nasi goreng", "Dinner ideas")
    ]
