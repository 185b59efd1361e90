"""Turns owned by the server (app.turns): followers, the queue, Stop, partial answers,
failures, and the recovery of turns whose process died."""

from __future__ import annotations

import asyncio
import os
import socket
import sqlite3
import subprocess
import time
from collections.abc import Callable
from typing import Any

import pytest

from app.turns import (
    INTERRUPTED,
    OWNER,
    STOPPED,
    LiveTurn,
    Turns,
    owner_alive,
    recover_interrupted,
)
from graph.context import Context
from graph.events import Answer, ModelDone, TextDelta, TurnError, TurnEvent, TurnStopped, UserStored
from memory import Message
from memory.sqlite.async_store import AsyncSqliteStore
from tests.support.chat_model import ScriptedChatModel, slow

HOST = socket.gethostname()
STORY = " ".join(f"word{i}" for i in range(30))  # 30 words: 1.5 s at 0.05 s a word
TALE = " ".join(f"line{i}" for i in range(12))  # 12 words: 0.6 s at 0.05 s a word
DEADLINE = 3.0  # seconds any one wait of these tests may take


async def events_of(turn: LiveTurn) -> list[TurnEvent]:
    """Follow a turn to its end."""
    return [event async for event in turn.follow()]


async def until(condition: Callable[[], bool], what: str) -> None:
    """Poll ``condition`` on the loop until it holds (fails after ``DEADLINE``)."""
    deadline = time.monotonic() + DEADLINE
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        await asyncio.sleep(0.005)


def deltas(events: list[TurnEvent]) -> list[str]:
    return [event.text for event in events if isinstance(event, TextDelta)]


def dead_pid() -> int:
    """The pid of a process of this host that has exited (and been reaped)."""
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


async def test_followers_each_see_every_event_from_the_first(make_context) -> None:
    ctx: Context = make_context([slow("Hello there, my friend.", 0.02)])
    turns = Turns()
    turn = turns.start(ctx, "s1", "hi")
    early = asyncio.create_task(events_of(turn))
    await until(lambda: len(deltas(turn.events)) >= 2, "two words streamed")
    midway = asyncio.create_task(events_of(turn))  # joins while the answer streams
    first, second = await asyncio.wait_for(asyncio.gather(early, midway), DEADLINE)
    replayed = await events_of(turn)  # joins after the turn has ended

    assert isinstance(first[0], UserStored) and first[0].message.content == "hi"
    assert isinstance(first[-1], Answer) and first[-1].text == "Hello there, my friend."
    assert "".join(deltas(first)) == "Hello there, my friend."
    assert any(isinstance(event, ModelDone) for event in first)
    assert first == second == replayed == turn.events
    assert turn.finished.is_set() and turn.failure is None
    stored = ctx.store.blocking.messages("s1")
    assert [(m.role, m.content) for m in stored] == [
        ("user", "hi"),
        ("assistant", "Hello there, my friend."),
    ]
    assert first[-1].message_id == stored[1].id
    assert turns.live("s1") == []


async def test_a_second_turn_waits_for_the_running_one(make_context) -> None:
    ctx: Context = make_context([slow("First answer, slowly written.", 0.02), "Second answer."])
    turns = Turns()
    first = turns.start(ctx, "s1", "one")
    second = turns.start(ctx, "s1", "two")
    assert turns.live("s1") == [first, second]
    assert second.text == "two" and not second.started

    await until(lambda: len(deltas(first.events)) >= 2, "the first answer streaming")
    assert second.events == [] and second.user_message is None

    first_was_over: list[bool] = []

    async def watch_second() -> list[TurnEvent]:
        seen = []
        async for event in second.follow():
            if isinstance(event, UserStored):
                first_was_over.append(
                    first.finished.is_set() and isinstance(first.events[-1], Answer)
                )
            seen.append(event)
        return seen

    second_events = await asyncio.wait_for(watch_second(), DEADLINE)
    assert first_was_over == [True]
    assert first.finished.is_set() and second.finished.is_set()

    stored = ctx.store.blocking.messages("s1")
    assert [(m.role, m.content) for m in stored] == [
        ("user", "one"),
        ("assistant", "First answer, slowly written."),
        ("user", "two"),
        ("assistant", "Second answer."),
    ]
    first_answer, second_answer = first.events[-1], second_events[-1]
    assert isinstance(first_answer, Answer) and isinstance(second_answer, Answer)
    assert first.user_message is not None and second.user_message is not None
    ids = [first.user_message.id, first_answer.message_id]
    ids += [second.user_message.id, second_answer.message_id]
    assert ids == [m.id for m in stored]
    assert ids == sorted(ids)
    assert turns.live("s1") == []


async def test_stop_stores_what_was_written_so_far_marked_stopped(make_context) -> None:
    ctx: Context = make_context([slow(STORY, 0.05)])
    turns = Turns()
    turn = turns.start(ctx, "s1", "tell me a story")
    await until(lambda: len(deltas(turn.events)) >= 3, "three words streamed")

    assert await asyncio.wait_for(turns.stop("s1"), DEADLINE) is True

    assert turn.finished.is_set() and turn.failure is None
    *_, stopped, answer = turn.events
    assert isinstance(stopped, TurnStopped) and isinstance(answer, Answer)
    assert stopped.message_id is not None and answer.message_id == stopped.message_id
    message = ctx.store.blocking.get_message(stopped.message_id)
    assert message is not None
    assert message.role == "assistant" and message.meta == {"stopped": True} == STOPPED
    written = "".join(deltas(turn.events)).strip()
    assert message.content == answer.text == written
    assert message.content and STORY.startswith(message.content)
    assert message.content != STORY
    assert [m.role for m in ctx.store.blocking.messages("s1")] == ["user", "assistant"]
    assert ctx.store.blocking.running_turns() == []
    assert turns.live("s1") == []
    assert await turns.stop("s1") is False


async def test_stop_asked_by_another_process_stops_the_turn(make_context) -> None:
    ctx: Context = make_context([slow(STORY, 0.05)])
    running, elsewhere = Turns(owner=f"{HOST}:1:one"), Turns(owner=f"{HOST}:2:two")
    turn = running.start(ctx, "s1", "tell me a story")
    await until(lambda: len(deltas(turn.events)) >= 3, "three words streamed")
    assert elsewhere.live("s1") == []

    assert await elsewhere.stop("s1", ctx.store) is True  # asked through the store

    await asyncio.wait_for(turn.finished.wait(), DEADLINE)
    assert any(isinstance(event, TurnStopped) for event in turn.events)
    answer = ctx.store.blocking.messages("s1")[-1]
    assert answer.meta == STOPPED and STORY.startswith(answer.content) and answer.content
    assert ctx.store.blocking.running_turns() == []
    assert await elsewhere.stop("s1", ctx.store) is False  # nothing runs any more


async def test_stop_with_nothing_running_returns_false() -> None:
    assert await Turns().stop("no-such-session") is False


async def test_stop_ends_the_running_turn_and_the_queued_one_runs_next(make_context) -> None:
    ctx: Context = make_context([slow(STORY, 0.05), "Next answer."])
    turns = Turns()
    first = turns.start(ctx, "s1", "one")
    second = turns.start(ctx, "s1", "two")
    await until(lambda: len(deltas(first.events)) >= 2, "the first answer streaming")

    assert await asyncio.wait_for(turns.stop("s1"), DEADLINE) is True
    assert isinstance(first.events[-2], TurnStopped)
    await asyncio.wait_for(second.finished.wait(), DEADLINE)

    assert second.failure is None and not any(isinstance(e, TurnStopped) for e in second.events)
    stored = ctx.store.blocking.messages("s1")
    assert [(m.role, m.meta.get("stopped", False)) for m in stored] == [
        ("user", False),
        ("assistant", True),
        ("user", False),
        ("assistant", False),
    ]
    assert stored[3].content == "Next answer."
    assert ctx.store.blocking.running_turns() == [] and turns.live("s1") == []


async def test_a_stop_after_the_answer_is_stored_adds_no_empty_answer(make_context) -> None:
    ctx: Context = make_context(["Done answer."])
    turns = Turns()
    turn = turns.start(ctx, "s1", "hi")
    async for event in turn.follow():
        if isinstance(event, ModelDone):  # the answer is stored; the graph is finishing
            await asyncio.wait_for(turns.stop("s1"), DEADLINE)
    stored = ctx.store.blocking.messages("s1")
    assert [(m.role, m.content) for m in stored] == [("user", "hi"), ("assistant", "Done answer.")]


async def test_the_answer_so_far_is_kept_in_running_turns_while_it_streams(make_context) -> None:
    ctx: Context = make_context([slow(TALE, 0.05)])
    turns = Turns(owner="test-host:1:token")
    turn = turns.start(ctx, "s1", "tell me a story")
    partials: list[str] = []

    def saw_a_partial() -> bool:
        rows = ctx.store.blocking.running_turns()
        partials.extend(row.partial for row in rows if row.partial)
        return bool(partials)

    await until(saw_a_partial, "a partial answer in running_turns")
    (row,) = ctx.store.blocking.running_turns()
    assert turn.user_message is not None
    assert (row.session_id, row.user_message_id, row.owner) == (
        "s1",
        turn.user_message.id,
        "test-host:1:token",
    )
    assert TALE.startswith(partials[0]) and partials[0] != TALE
    assert not turn.finished.is_set()

    await asyncio.wait_for(turn.finished.wait(), DEADLINE)
    assert ctx.store.blocking.running_turns() == []
    answer = turn.events[-1]
    assert isinstance(answer, Answer) and answer.text == TALE


async def test_a_stored_user_message_is_answered_without_storing_another(make_context) -> None:
    ctx: Context = make_context(["Four."])
    user = await ctx.store.add_message("s1", "user", "What is 2+2?")
    turns = Turns()
    turn = turns.start(ctx, "s1", "this text is not used", stored=user)
    assert turn.text == "What is 2+2?"
    events = await asyncio.wait_for(events_of(turn), DEADLINE)

    assert events[0] == UserStored(user)
    assert isinstance(events[-1], Answer) and events[-1].text == "Four."
    stored = ctx.store.blocking.messages("s1")
    assert [(m.id, m.role, m.content) for m in stored] == [
        (user.id, "user", "What is 2+2?"),
        (events[-1].message_id, "assistant", "Four."),
    ]
    model = ctx.chat_model
    assert isinstance(model, ScriptedChatModel)
    sent = [str(message.content) for message in model.calls[0]["messages"]]
    assert "What is 2+2?" in sent[-1]
    assert sum("What is 2+2?" in text for text in sent) == 1
    assert not any("not used" in text for text in sent)


async def test_a_turn_whose_user_message_cannot_be_stored_fails_and_ends(
    make_context, async_store: AsyncSqliteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def refuse(*args: Any, **kwargs: Any) -> Message:
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(async_store, "add_message", refuse)
    ctx: Context = make_context(["never asked"])
    turns = Turns()
    turn = turns.start(ctx, "s1", "hello")
    events = await asyncio.wait_for(events_of(turn), DEADLINE)

    assert events == [TurnError("OperationalError: disk I/O error"), Answer("", None, [], [])]
    assert isinstance(turn.failure, sqlite3.OperationalError)
    assert turn.finished.is_set() and turns.live("s1") == []
    assert isinstance(ctx.chat_model, ScriptedChatModel) and ctx.chat_model.calls == []
    assert async_store.blocking.running_turns() == []


async def test_a_turn_failing_after_it_began_ends_and_forgets_its_record(
    make_context, async_store: AsyncSqliteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    store_message = async_store.add_message

    async def refuse_answers(session_id: str, role: str, content: str, **kwargs: Any) -> Message:
        if role == "assistant":
            raise sqlite3.OperationalError("database or disk is full")
        return await store_message(session_id, role, content, **kwargs)

    monkeypatch.setattr(async_store, "add_message", refuse_answers)
    ctx: Context = make_context(["An answer that cannot be stored."])
    turns = Turns()
    turn = turns.start(ctx, "s1", "hello")
    events = await asyncio.wait_for(events_of(turn), DEADLINE)

    assert isinstance(events[0], UserStored)
    assert events[-2:] == [
        TurnError("OperationalError: database or disk is full"),
        Answer("", None, [], []),
    ]
    assert isinstance(turn.failure, sqlite3.OperationalError)
    assert turn.finished.is_set() and turns.live("s1") == []
    assert [m.role for m in async_store.blocking.messages("s1")] == ["user"]
    assert async_store.blocking.running_turns() == []


def test_owner_alive_tells_this_process_a_dead_one_and_another_host_apart() -> None:
    me = f"{HOST}:{os.getpid()}:abcd1234"
    assert owner_alive(me, me=me) is True
    assert owner_alive(OWNER) is True
    assert owner_alive(f"{HOST}:{dead_pid()}:deadbeef", me=me) is False
    # An earlier run with this pid (a container's pid 1 after a restart) is gone.
    assert owner_alive(f"{HOST}:{os.getpid()}:0ther000", me=me) is False
    assert owner_alive(f"{HOST}:{os.getppid()}:parent00", me=me) is True
    assert owner_alive(f"{HOST}:not-a-pid:deadbeef", me=me) is False
    assert owner_alive(f"another-{HOST}:{os.getpid()}:abcd1234", me=me) is None


async def test_recovery_stores_a_dead_turns_text_marked_interrupted(
    async_store: AsyncSqliteStore,
) -> None:
    dead_user = await async_store.add_message("s1", "user", "Tell me a story")
    live_user = await async_store.add_message("s2", "user", "Still talking")
    far_user = await async_store.add_message("s3", "user", "On another machine")
    dead = await async_store.begin_turn("s1", dead_user.id, f"{HOST}:{dead_pid()}:deadbeef")
    await async_store.save_partial(dead, "Once upon a time")
    live = await async_store.begin_turn("s2", live_user.id, OWNER)
    await async_store.save_partial(live, "Half of")
    far = await async_store.begin_turn("s3", far_user.id, f"another-{HOST}:1:abcd1234")

    recovered = await recover_interrupted(async_store)

    assert [(m.session_id, m.role, m.content, m.meta) for m in recovered] == [
        ("s1", "assistant", "Once upon a time", {"interrupted": True})
    ]
    assert INTERRUPTED == {"interrupted": True}
    assert async_store.blocking.messages("s1") == [dead_user, recovered[0]]
    assert [row.id for row in async_store.blocking.running_turns()] == [live, far]
    assert async_store.blocking.messages("s2") == [live_user]

    assert await recover_interrupted(async_store) == []
    assert async_store.blocking.messages("s1") == [dead_user, recovered[0]]
    assert async_store.blocking.count_messages() == 4
