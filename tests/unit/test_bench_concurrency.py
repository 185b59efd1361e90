"""bench.concurrency with two sessions of two turns against the fake loopback server:
no error, no lost message, and the timings are sane."""

from __future__ import annotations

import pytest

from bench.concurrency import main
from tests.support.bench_tables import numbers, run_main

TINY = ["--sessions", "2", "--turns", "2", "--latency", "0.01"]


def test_two_sessions_lose_nothing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    table = run_main(main, TINY, monkeypatch, capsys)
    assert table["event loop"] == ["uvloop"]  # as the served app's (uvicorn picks it)
    assert numbers(table["errors"][0]) == [0]
    assert numbers(table["messages lost"][0]) == [0]
    assert numbers(table["stored user / assistant / tool messages"][0])[:3] == [4, 4, 4]
    assert numbers(table["wall time (s)"][0])[0] > 0
    assert 0 < numbers(table["efficiency (ideal / actual)"][0])[0] <= 100
    # where the time went: the loop's own CPU per turn, and the embedding beside it
    assert numbers(table["event loop CPU per turn (ms)"][0])[0] > 0
    assert 0 < numbers(table["loop busy (its CPU / wall time)"][0])[0] <= 100
    assert numbers(table["background embedding CPU (s)"][0])[0] >= 0


def test_without_the_embedder_on_asyncios_loop_nothing_is_embedded(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    table = run_main(main, [*TINY, "--no-embedder", "--loop", "asyncio"], monkeypatch, capsys)
    assert table["event loop"] == ["asyncio"]
    assert numbers(table["messages lost"][0]) == [0]
    assert numbers(table["background embedding CPU (s)"][0]) == [0]
