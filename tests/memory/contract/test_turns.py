"""Turns: running turns, Stop asked from elsewhere, job leases, and build_context's reads."""

from __future__ import annotations

from datetime import timedelta

from memory import AsyncStore, MemoryGates, RunningTurn, TurnReads
from tests.conftest import FIXED_NOW


async def test_a_running_turn_keeps_its_partial_answer_until_it_ends(
    store: AsyncStore,
) -> None:
    asked = await store.add_message("s", "user", "tell me a story")
    first = await store.begin_turn("s", asked.id, "owner-1")
    second = await store.begin_turn("s", asked.id, "owner-2")
    assert await store.running_turns() == [
        RunningTurn(first, "s", asked.id, "owner-1", ""),
        RunningTurn(second, "s", asked.id, "owner-2", ""),
    ]
    await store.save_partial(first, "Once upon")
    await store.save_partial(first, "Once upon a time")
    await store.end_turn(second)
    assert await store.running_turns() == [
        RunningTurn(first, "s", asked.id, "owner-1", "Once upon a time")
    ]
    await store.end_turn(first)
    assert await store.running_turns() == []


async def test_an_interrupted_turn_is_closed_once_with_its_text_so_far(
    store: AsyncStore,
) -> None:
    asked = await store.add_message("s", "user", "tell me a story")
    turn_id = await store.begin_turn("s", asked.id, "dead-process")
    await store.save_partial(turn_id, "Once upon")
    (turn,) = await store.running_turns()
    closed = await store.close_interrupted(turn, {"interrupted": True})
    assert closed is not None
    assert (closed.role, closed.content, closed.meta) == (
        "assistant",
        "Once upon",
        {"interrupted": True},
    )
    assert await store.messages("s") == [asked, closed]
    assert await store.running_turns() == []
    assert await store.close_interrupted(turn, {"interrupted": True}) is None
    assert await store.count_messages("s") == 2


async def test_read_turn_reads_the_turn_the_history_the_note_and_ranked_memories(
    store: AsyncStore,
) -> None:
    said = await store.add_message("s", "user", "hi")
    heard = await store.add_message("s", "assistant", "hello")
    asked = await store.add_message("s", "user", "weather?")
    called = await store.add_message(
        "s", "weather_tool", "sunny", tool_name="weather", tool_call_id="c1"
    )
    answered = await store.add_message("s", "assistant", "It is sunny")
    await store.add_message("elsewhere", "user", "not this one")
    await store.set_style_note("s", "short answers")
    await store.create_memory("identity", "name", "Budi", now=FIXED_NOW)
    await store.create_memory("focus", "work", "thesis", now=FIXED_NOW + timedelta(hours=1))
    now = FIXED_NOW + timedelta(days=1)

    reads = await store.read_turn("s", asked.id, history=2, now=now)
    assert reads == TurnReads(
        turn=[called, answered],
        history=[heard, asked],
        style_note="short answers",
        memories=await store.ranked_memories(now),
        gates=MemoryGates(history=True, memories=True),  # read with the history
    )
    assert [m.key for m in reads.memories] == ["work", "name"]
    everything = await store.read_turn("s", asked.id, history=50, now=now)
    assert everything.history == [said, heard, asked]
    without = await store.read_turn("s", asked.id, history=0, now=now)
    assert (without.history, without.gates) == ([], None)
    assert (await store.read_turn("s", answered.id, history=1, now=now)).turn == []
    unknown = await store.read_turn("unknown", asked.id, history=5, now=now)
    assert (unknown.turn, unknown.history, unknown.style_note) == ([], [], None)


async def test_the_gates_read_with_the_history_are_memory_gates_answer(
    store: AsyncStore,
) -> None:
    async def both(session: str, asked: int) -> tuple[MemoryGates | None, MemoryGates]:
        reads = await store.read_turn(session, asked, history=25, now=FIXED_NOW)
        return reads.gates, await store.memory_gates(asked)

    first = await store.add_message("a", "user", "hello, first time here")
    assert await both("a", first.id) == (MemoryGates(False, False),) * 2
    again = await store.add_message("b", "user", "a new chat, the first one behind it")
    assert await both("b", again.id) == (MemoryGates(True, False),) * 2
    await store.create_memory("identity", "name", "Budi", now=FIXED_NOW)
    assert await both("a", first.id) == (MemoryGates(True, True),) * 2


async def test_stop_is_asked_through_the_running_turn(store: AsyncStore) -> None:
    asked = await store.add_message("s", "user", "a long story, please")
    elsewhere = await store.add_message("t", "user", "and another")
    assert await store.request_stop("s") is False  # no turn runs yet
    turn_id = await store.begin_turn("s", asked.id, "owner-1")
    other = await store.begin_turn("t", elsewhere.id, "owner-2")
    assert await store.stop_requested(turn_id) is False
    assert await store.request_stop("s") is True
    assert await store.stop_requested(turn_id) is True
    assert await store.stop_requested(other) is False
    assert await store.request_stop("unknown") is False
    await store.end_turn(turn_id)
    assert await store.stop_requested(turn_id) is False
    assert await store.request_stop("s") is False


async def test_a_job_lease_is_refused_to_others_until_it_expires(store: AsyncStore) -> None:
    # The store's clock moves a second at each claim.
    assert await store.claim("sweep", "process-a", 60) is True
    assert await store.claim("sweep", "process-b", 60) is False
    assert await store.claim("sweep", "process-a", 1) is True  # renewed, now for 1 s
    assert await store.claim("other-job", "process-b", 60) is True
    # A second later process-a's lease has run out: process-b takes it, and holds it.
    assert await store.claim("sweep", "process-b", 60) is True
    assert await store.claim("sweep", "process-a", 60) is False
    assert await store.claim("other-job", "process-a", 60) is False
    assert await store.claim("sweep", "process-b", 60) is True
