"""bench.recall on a tiny history: every timed operation runs, memory_search included
(it crashed when the bench handed the tool a blocking store)."""

from __future__ import annotations

from bench.recall import measure


def test_every_operation_runs_on_a_small_history() -> None:
    figures = measure(300, 2)
    assert "memory_search, no time cue" in figures
    assert "build_context (asked session)" in figures
    for name, (p50, p95) in figures.items():
        assert 0 < p50 <= p95, name
