"""Every conversation becomes segments: on leaving a session, and at app start."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from graph.jobs import schedule_catch_up, schedule_segments
from graph.runner import run_turn
from memory.sqlite.segments import list_segments, pending_sessions
from memory.sqlite.store import SqliteStore
from tests.conftest import FIXED_NOW


async def test_leaving_a_session_closes_its_open_span(make_context) -> None:
    ctx = make_context(["Enjoy your nasi goreng!"])
    await run_turn(ctx, "a", "Tonight I cooked nasi goreng")
    assert list_segments(ctx.store.blocking, "a") == []  # a fresh span stays open for 30 minutes
    await schedule_segments(ctx, "a", force=True)
    (segment,) = list_segments(ctx.store.blocking, "a")
    assert "nasi goreng" in segment.summary


async def test_app_start_catches_up_on_every_quiet_span(make_context) -> None:
    ctx = make_context([])
    earlier = SqliteStore(ctx.store.blocking.path, clock=lambda: FIXED_NOW - timedelta(hours=1))
    sessions = []
    for plant in ("tomatoes", "chillies"):
        session = earlier.create_session(f"Garden: {plant}")
        earlier.add_message(session.id, "user", f"I planted {plant} this morning")
        sessions.append(session.id)
    assert pending_sessions(ctx.store.blocking) == sessions
    await schedule_catch_up(ctx)
    for session_id, plant in zip(sessions, ("tomatoes", "chillies"), strict=True):
        (segment,) = list_segments(ctx.store.blocking, session_id)
        assert plant in segment.summary
    assert pending_sessions(ctx.store.blocking) == []


async def test_a_running_app_keeps_sweeping_for_quiet_chats(make_context) -> None:
    ctx = make_context([])
    task = schedule_catch_up(ctx, every=0.02)
    try:
        await asyncio.sleep(0.05)  # the first sweep found nothing
        earlier = SqliteStore(ctx.store.blocking.path, clock=lambda: FIXED_NOW - timedelta(hours=1))
        session = earlier.create_session("Later")
        earlier.add_message(session.id, "user", "I went cycling along the river")
        for _ in range(200):
            if list_segments(ctx.store.blocking, session.id):
                break
            await asyncio.sleep(0.02)
        (segment,) = list_segments(ctx.store.blocking, session.id)
        assert "cycling" in segment.summary
    finally:
        task.cancel()
