"""bench.scale on a tiny configuration: both runs finish with no error and no lost message."""

from __future__ import annotations

from pathlib import Path

from bench.scale import main

TINY = ["--processes", "2", "--sessions", "2", "--turns", "2", "--latency", "0.01", "--rounds", "1"]
SQLITE_ONLY = "--no-postgres"  # a Postgres server is for tests/integration, not unit tests


def test_two_processes_lose_nothing(tmp_path: Path) -> None:
    runs = main([*TINY, SQLITE_ONLY, "--home", str(tmp_path)])
    baseline, scaled = runs.values()
    assert (baseline.processes, baseline.turns) == (1, 4)
    assert (scaled.processes, scaled.turns) == (2, 8)
    for figures in runs.values():
        assert figures.errors == []
        assert figures.lost == 0
        assert figures.model_calls == figures.turns
        assert len(figures.latencies) == figures.turns
