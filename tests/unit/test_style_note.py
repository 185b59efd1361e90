"""The persona survives every style note: through the real graph, the store and its schema.

A note for one reply and a note kept for the rest of a session both go after the
persona's identity block as "For this reply: …"; the identity block is in every system
message of every turn, in both tool modes; the stored transcript never holds the note;
an edited identity (profile key ``identity``) and a kept note (``sessions.style_note``)
are two different things.
"""

from __future__ import annotations

import dataclasses
import sqlite3

import pytest

from graph.runner import run_turn
from memory import StoreError
from memory.sqlite.db import MIGRATIONS, _statements
from memory.sqlite.store import SqliteStore
from prompts.templates import persona_text
from tests.support.chat_model import tool_call

NOTE = "Answer in three short bullet points."
KEPT = "Reply formally, without emoji."


def echo_then_answer(mode: str) -> list[object]:
    """A turn with two model calls: a tool call, then the answer from its result."""
    call = tool_call("echo", {"text": "hi"}) if mode == "native" else "/echo hi"
    return [call, "Done."]


def systems(ctx, start: int = 0) -> list[str]:
    return [str(call["messages"][0].content) for call in ctx.chat_model.calls[start:]]


@pytest.mark.parametrize("mode", ["native", "commands"])
async def test_the_identity_block_is_in_every_system_message_with_and_without_a_note(
    make_context, mode: str
) -> None:
    identity = persona_text("yuzuki")
    ctx = make_context(echo_then_answer(mode) * 4, tool_mode=mode)

    await run_turn(ctx, "s1", "plain turn")
    plain = systems(ctx)
    await run_turn(dataclasses.replace(ctx, style_note=NOTE), "s1", "noted turn")
    noted = systems(ctx, 2)
    ctx.store.blocking.set_style_note("s1", KEPT)
    await run_turn(ctx, "s1", "kept turn")
    kept = systems(ctx, 4)
    ctx.store.blocking.set_style_note("s1", None)
    await run_turn(ctx, "s1", "after removal")
    removed = systems(ctx, 6)

    assert len(ctx.chat_model.calls) == 8  # every turn: the tool call and the answer
    for system in [*plain, *noted, *kept, *removed]:
        assert system.startswith(identity + "\n\n")
        assert "Current date and time" in system
    assert all("For this reply" not in s for s in [*plain, *removed])
    assert all(s.startswith(f"{identity}\n\nFor this reply: {NOTE}\n") for s in noted)
    assert all(s.startswith(f"{identity}\n\nFor this reply: {KEPT}\n") for s in kept)
    # the stored transcript is what the user wrote, never the note
    users = [m.content for m in ctx.store.blocking.messages("s1") if m.role == "user"]
    assert users == ["plain turn", "noted turn", "kept turn", "after removal"]
    assert all(
        NOTE not in m.content and KEPT not in m.content for m in ctx.store.blocking.messages("s1")
    )


async def test_a_one_turn_note_is_for_that_turn_only_and_sits_beside_a_kept_one(
    make_context,
) -> None:
    ctx = make_context(["one", "two", "three"])
    kept = ctx.store.blocking.create_session().id
    ctx.store.blocking.set_style_note(kept, KEPT)
    await run_turn(dataclasses.replace(ctx, style_note=NOTE), kept, "first")
    await run_turn(ctx, kept, "second")
    await run_turn(ctx, "s2", "another chat")
    both, kept_only, other_chat = systems(ctx)
    assert f"For this reply: {KEPT} {NOTE}\n" in both
    assert f"For this reply: {KEPT}\n" in kept_only and NOTE not in kept_only
    assert "For this reply" not in other_chat  # kept for *that* session only
    assert ctx.store.blocking.profile() == {}  # a note never touches the profile


async def test_an_edited_identity_and_a_note_are_two_things(make_context) -> None:
    ctx = make_context(["ok"], identity="You are Kai, a terse ship's cook.")
    await run_turn(dataclasses.replace(ctx, style_note=NOTE), "s1", "hi")
    (system,) = systems(ctx)
    assert system.startswith(f"You are Kai, a terse ship's cook.\n\nFor this reply: {NOTE}\n")
    assert "You are Yuzuki" not in system


def test_a_kept_note_is_stored_on_its_session(store: SqliteStore) -> None:
    session = store.create_session("Trip")
    assert store.style_note(session.id) is None
    store.set_style_note(session.id, f"  {KEPT}  ")
    assert store.style_note(session.id) == KEPT
    assert store.style_note(store.create_session().id) is None
    store.set_style_note(session.id, "   ")
    assert store.style_note(session.id) is None
    with pytest.raises(StoreError, match="no session"):
        store.set_style_note("missing", KEPT)
    assert store.style_note("missing") is None


def test_the_old_profile_style_note_becomes_the_identity_key(tmp_path) -> None:
    """Before migration 4 an edited identity (or an amended note, which replaced the
    identity the same way) was saved as the profile's style_note: what the persona said
    does not change on upgrade, and the note key is gone."""
    path = tmp_path / "companion.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
    for version, script in enumerate(MIGRATIONS[:3], start=1):
        for statement in _statements(script):
            conn.execute(statement)
        conn.execute("INSERT INTO schema_version (version) VALUES (?)", (version,))
    conn.execute("INSERT INTO profile (key, value) VALUES ('style_note', 'You are Kai.')")
    conn.execute("INSERT INTO profile (key, value) VALUES ('persona', 'journal')")
    conn.execute("INSERT INTO sessions (id, created_at) VALUES ('old', '2026-11-20 19:00:00')")
    conn.commit()
    conn.close()

    store = SqliteStore(path)
    assert store.profile() == {"identity": "You are Kai.", "persona": "journal"}
    assert store.style_note("old") is None
    store.set_style_note("old", KEPT)
    assert store.style_note("old") == KEPT
    assert store.health() == ("ok", len(MIGRATIONS))
    store.close()
