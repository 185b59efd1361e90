"""The benches' Postgres halves at small sizes, on a throwaway server with pgvector:
recall_quality's generated histories (lexical, and dense and hybrid with the fake
embedder) and its probes, and bench.scale's two processes sharing one database."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bench import recall_quality, scale
from bench.histories import generate
from bench.recall_quality import NOW, Moment, bench_history
from memory.postgres.schema import migrate
from memory.postgres.store import PgStore
from tests.support.bench_tables import numbers, rows
from tests.support.embedders import FakeEmbedder
from tests.support.postgres import APP_ROLE, PostgresServer

RETRIEVERS = ("lexical", "dense", "hybrid")


def test_recall_quality_runs_on_postgres(capsys: pytest.CaptureFixture[str]) -> None:
    runs = asyncio.run(recall_quality.measure_histories("small", ("postgres",), FakeEmbedder()))
    recall_quality.report_histories(runs, "small")
    printed = capsys.readouterr().out
    assert printed.count("turns and 27 questions embedded by fake:") == 2
    summary = [r for r in rows(printed) if len(r) == 11 and r[0] == "postgres"]
    assert [(r[1], r[2]) for r in summary] == [(n, r) for n in ("EN", "ID") for r in RETRIEVERS]
    for row in summary:
        assert all(0 <= numbers(cell)[0] <= 100 for cell in row[3:-1]), row
    recall_quality.main(["--search-only", "--backend", "postgres"])
    probes = [r for r in rows(capsys.readouterr().out) if len(r) == 9]
    assert [(r[0], r[1]) for r in probes] == [("EN", "postgres"), ("ID", "postgres")]


def test_without_pgvector_recall_quality_says_so_and_measures_lexical() -> None:
    async def run() -> recall_quality.Run:
        with PostgresServer(vector=False) as server:
            await migrate(server.owner_url, APP_ROLE)  # the owner may not create pgvector
            clock = Moment(NOW)
            store = await PgStore.open(server.url, "history-en", clock=clock)
            try:
                history = generate("en", size="small")
                return await bench_history(store, history, clock, FakeEmbedder())
            finally:
                await store.close()

    measured = asyncio.run(run())
    assert measured.embedding == "dense: n/a (no pgvector)"
    assert set(measured.outcomes) == {"BM25", "lexical"}


def test_scale_runs_two_processes_on_postgres(tmp_path: Path) -> None:
    tiny = ["--processes", "2", "--sessions", "2", "--turns", "2", "--latency", "0.01"]
    runs = scale.main([*tiny, "--rounds", "1", "--home", str(tmp_path)])
    postgres = runs["(c) 2 processes, one Postgres database"]
    assert (postgres.processes, postgres.turns) == (2, 8)
    for figures in runs.values():
        assert figures.errors == [] and figures.lost == 0
        assert figures.cpu > 0  # the workers' CPU per turn, in the table
    # Round trips are counted on Postgres only (SQLite has no server to talk to): at least
    # the user's message and the answer stored, each turn.
    assert postgres.round_trips is not None and postgres.round_trips >= 2 * postgres.turns
    assert [f.round_trips for name, f in runs.items() if "SQLite" in name] == [None, None]
