"""What the chat list and the Graph tab keep, alike on both backends: pins, a title the
person chose, the search across chats, each answer's trace and the person's rating."""

from __future__ import annotations

import pytest

from memory import AsyncStore, StoreError


async def test_a_pin_is_kept_and_taken_off(store: AsyncStore) -> None:
    first = await store.create_session("Groceries")
    second = await store.create_session("Trip")
    await store.set_pinned(first.id, True)
    listed = {s.id: s.pinned for s in await store.list_sessions()}
    assert listed == {first.id: True, second.id: False}
    shown = await store.get_session(first.id)
    assert shown is not None and shown.pinned
    await store.set_pinned(first.id, False)
    assert not any(s.pinned for s in await store.list_sessions())
    with pytest.raises(StoreError, match="no session"):
        await store.set_pinned("unknown", True)


async def test_the_apps_title_never_replaces_the_persons(store: AsyncStore) -> None:
    session = await store.create_session()
    await store.rename_session(session.id, "From the first message", by_person=False)
    made = await store.get_session(session.id)
    assert made is not None and made.title == "From the first message" and not made.renamed
    await store.rename_session(session.id, "Mine")
    await store.rename_session(session.id, "From an edited message", by_person=False)
    kept = await store.get_session(session.id)
    assert kept is not None and kept.title == "Mine" and kept.renamed
    with pytest.raises(StoreError, match="no session"):
        await store.rename_session("unknown", "Title", by_person=False)


async def test_search_finds_titles_then_messages_with_the_matching_line(
    store: AsyncStore,
) -> None:
    trip = await store.create_session("Trip to Bandung")
    pets = await store.create_session("Pets")
    await store.add_message(pets.id, "user", "Mochi hides whenever I vacuum the living room")
    said = await store.add_message(
        pets.id,
        "assistant",
        "A long answer. " * 20 + "Cats often fear the noise of a vacuum cleaner. " + "More. " * 20,
    )
    await store.add_message(pets.id, "memory_tool", "vacuum (a tool's result is not a hit)")
    await store.add_message(trip.id, "user", "What should I pack?")

    by_title = await store.search_chats("bandung")
    assert [(h.session_id, h.message_id) for h in by_title] == [(trip.id, None)]

    hits = await store.search_chats("vacuum")
    assert {h.session_id for h in hits} == {pets.id}
    assert {h.role for h in hits} == {"user", "assistant"}
    answer = next(h for h in hits if h.message_id == said.id)
    assert answer.title == "Pets" and "vacuum cleaner" in answer.snippet
    assert len(answer.snippet) <= 160 and answer.snippet.startswith("…")
    assert await store.search_chats("   ") == []
    assert await store.search_chats("nothing-like-this") == []


async def test_a_trace_is_kept_with_its_answer_and_goes_with_it(store: AsyncStore) -> None:
    session = await store.create_session()
    await store.add_message(session.id, "user", "hi")
    first = await store.add_message(session.id, "assistant", "hello")
    await store.add_message(session.id, "user", "weather?")
    second = await store.add_message(session.id, "assistant", "sunny")
    trace = {"events": [{"kind": "node", "name": "call_model", "ms": 12.5}], "prompt": ["ñ"]}
    await store.save_trace(second.id, trace)
    await store.save_trace(first.id, {"events": []})
    assert await store.turn_trace(second.id) == trace
    assert await store.traced_answers(session.id) == [first.id, second.id]
    await store.save_trace(first.id, {"events": ["again"]})
    assert await store.turn_trace(first.id) == {"events": ["again"]}

    await store.delete_messages_from(session.id, second.id - 1)
    assert await store.turn_trace(second.id) is None
    assert await store.traced_answers(session.id) == [first.id]
    await store.delete_session(session.id)
    assert await store.turn_trace(first.id) is None


async def test_a_rating_is_kept_replaced_cleared_and_refused_when_wrong(
    store: AsyncStore,
) -> None:
    session = await store.create_session()
    other = await store.create_session()
    question = await store.add_message(session.id, "user", "hi")
    answer = await store.add_message(session.id, "assistant", "hello")
    elsewhere = await store.add_message(other.id, "assistant", "hey")
    await store.set_feedback(answer.id, -1, "  should have used the weather tool ")
    await store.set_feedback(elsewhere.id, 1)
    mine = await store.feedback(session.id)
    assert [(f.message_id, f.rating, f.comment) for f in mine] == [
        (answer.id, -1, "should have used the weather tool")
    ]
    assert mine[0].session_id == session.id
    assert {f.message_id for f in await store.feedback()} == {answer.id, elsewhere.id}

    await store.set_feedback(answer.id, 1)
    assert [(f.rating, f.comment) for f in await store.feedback(session.id)] == [(1, "")]
    await store.set_feedback(answer.id, None)
    assert await store.feedback(session.id) == []
    with pytest.raises(StoreError, match="1 or -1"):
        await store.set_feedback(answer.id, 5)
    with pytest.raises(StoreError, match="no answer"):
        await store.set_feedback(question.id, 1)
    with pytest.raises(StoreError, match="no answer"):
        await store.set_feedback(10**9, 1)


async def test_forgetting_everything_takes_traces_and_ratings(store: AsyncStore) -> None:
    session = await store.create_session()
    answer = await store.add_message(session.id, "assistant", "hello")
    await store.save_trace(answer.id, {"events": []})
    await store.set_feedback(answer.id, 1)
    await store.delete_everything()
    assert await store.feedback() == []
    assert await store.turn_trace(answer.id) is None


async def test_the_version_a_page_polls_changes_with_what_it_shows(store: AsyncStore) -> None:
    session = await store.create_session()
    other = await store.create_session()
    seen = [await store.chat_version(session.id)]
    assert await store.chat_version(session.id) == seen[-1]  # nothing changed
    changes = [
        store.add_message(session.id, "user", "hi"),
        store.add_message(other.id, "user", "elsewhere"),  # the list's order moves
        store.rename_session(other.id, "Renamed"),
        store.set_pinned(other.id, True),
        store.delete_messages_from(session.id, 0),
        store.create_session(),
        store.delete_session(other.id),
    ]
    for change in changes:
        await change
        now = await store.chat_version(session.id)
        assert now not in seen
        seen.append(now)
    assert await store.chat_version(None) != ""


async def test_the_version_moves_when_a_turn_starts_or_ends_in_the_chat(
    store: AsyncStore,
) -> None:
    """Answered again (a retry), a turn stores no message as it starts: the page of
    another process learns of it from the version alone."""
    session = await store.create_session()
    other = await store.create_session()
    asked = await store.add_message(session.id, "user", "hi")
    elsewhere = await store.add_message(other.id, "user", "there")
    before = await store.chat_version(session.id)
    other_turn = await store.begin_turn(other.id, elsewhere.id, "another process")
    assert await store.chat_version(session.id) == before  # another chat's turn
    turn = await store.begin_turn(session.id, asked.id, "another process")
    running = await store.chat_version(session.id)
    assert running != before
    await store.save_partial(turn, "Hel")
    assert await store.chat_version(session.id) == running  # its words: the follow's
    await store.end_turn(turn)
    assert await store.chat_version(session.id) == before
    again = await store.begin_turn(session.id, asked.id, "another process")
    assert await store.chat_version(session.id) not in (before, running)
    await store.end_turn(again)
    await store.end_turn(other_turn)
