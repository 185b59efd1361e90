"""bench.recall_postgres on a tiny history: the load and every timed operation run on a
real Postgres with pgvector, memory_search included."""

from __future__ import annotations

from bench.recall_postgres import run, table


def test_every_operation_runs_on_a_small_history() -> None:
    figures = run(1000, 2)
    assert "memory_search hybrid, common phrase" in figures
    assert "recall dense" in figures and "nearest 50 alone" in figures
    for name, (p50, p95) in figures.items():
        assert 0 < p50 <= p95, name
    assert table(figures).count("\n") == len(figures) + 1
