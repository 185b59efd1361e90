"""Background work several app processes on one database run once: a job's lease
(``SqliteStore.claim``), and the sweep for quiet conversations, which runs only with it."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from graph import jobs
from memory.sqlite.async_store import AsyncSqliteStore
from memory.sqlite.store import SqliteStore

START = datetime(2026, 11, 26, 6, 0, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        return self.now


def test_a_lease_is_one_holders_until_it_runs_out(tmp_path: Path) -> None:
    clock = Clock()
    one, two = (
        SqliteStore.open_home(tmp_path, clock=clock),
        SqliteStore.open_home(tmp_path, clock=clock),
    )
    try:
        assert one.claim("sweep", "process-1", 60) is True
        assert two.claim("sweep", "process-2", 60) is False  # process 1 holds it
        assert one.claim("sweep", "process-1", 60) is True  # renewed by its holder
        assert two.claim("other job", "process-2", 60) is True  # one lease per job
        clock.now = START + timedelta(seconds=59)
        assert two.claim("sweep", "process-2", 60) is False
        clock.now = START + timedelta(seconds=61)  # process 1 died: its lease ran out
        assert two.claim("sweep", "process-2", 60) is True
        assert one.claim("sweep", "process-1", 60) is False
    finally:
        one.close()
        two.close()


@pytest.mark.parametrize(("leased", "sweeps"), [(True, 1), (False, 0)])
async def test_the_sweep_runs_only_with_the_lease(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, leased: bool, sweeps: int
) -> None:
    store = AsyncSqliteStore(SqliteStore.open_home(tmp_path))
    calls: list[str] = []

    async def claim(job: str, holder: str, seconds: float) -> bool:
        calls.append(f"claim {job} by {holder} for {seconds:.0f} s")
        return leased

    async def catch_up_segments(summarize: Any, *, tz: str) -> int:
        calls.append("sweep")
        return 0

    monkeypatch.setattr(store, "claim", claim)
    monkeypatch.setattr(store, "catch_up_segments", catch_up_segments)
    ctx: Any = type("Ctx", (), {"store": store, "summarize": None, "embedder": None})()
    ctx.settings = type("S", (), {"timezone": "UTC"})()
    try:
        await asyncio.wait_for(jobs.schedule_catch_up(ctx), 5)
    finally:
        await store.close()
    lease = f"claim {jobs.CATCH_UP_JOB} by {jobs.PROCESS} for {jobs.LEASE_SECONDS:.0f} s"
    assert calls == [lease, *["sweep"] * sweeps]
