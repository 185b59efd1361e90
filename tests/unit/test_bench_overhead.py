"""bench.overhead with a handful of turns: every variant runs and its figures are sane."""

from __future__ import annotations

import pytest

from bench.overhead import main
from tests.support.bench_tables import numbers, run_main

TINY = ["--turns", "4", "--warmup", "1", "--rounds", "2"]


def test_every_variant_runs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    table = run_main(main, TINY, monkeypatch, capsys)
    assert len(table) == 6
    assert numbers(table["prebuilt create_react_agent, ainvoke"][2]) == [1.0]
    for name, cells in table.items():
        median, p90, *ratios = (numbers(cell)[0] for cell in cells)
        assert 0 < median <= p90, name
        assert all(ratio > 0 for ratio in ratios), name
