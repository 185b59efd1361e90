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
    assert numbers(table["errors"][0]) == [0]
    assert numbers(table["messages lost"][0]) == [0]
    assert numbers(table["stored user / assistant / tool messages"][0])[:3] == [4, 4, 4]
    assert numbers(table["wall time (s)"][0])[0] > 0
    assert 0 < numbers(table["efficiency (ideal / actual)"][0])[0] <= 100
