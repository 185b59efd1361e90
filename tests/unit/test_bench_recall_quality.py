"""bench.recall_quality on SQLite: the generated small histories (lexical, and dense and
hybrid with the fake embedder) and the 53 probes run through the real store and
memory_search, and every printed figure is sane (the probes crashed once the store's
recall returned turns instead of messages)."""

from __future__ import annotations

import asyncio

import pytest

from bench.histories import CATEGORIES
from bench.recall_quality import main, measure_histories, report_histories
from tests.support.bench_tables import numbers, rows
from tests.support.embedders import FakeEmbedder

RETRIEVERS = ("lexical", "dense", "hybrid")
SUMMARY_CELLS = 3 + len(CATEGORIES) + 3  # backend, language, retriever … all, turns shown


def check_tables(printed: str, retrievers: tuple[str, ...]) -> None:
    """Both languages for each retriever, percentages in range, R@5 <= R@10 <= R@20."""
    table = rows(printed)
    summary = [r for r in table if len(r) == SUMMARY_CELLS]
    assert [(r[1], r[2]) for r in summary] == [(n, r) for n in ("EN", "ID") for r in retrievers]
    for row in summary:
        for cell in row[3:-1]:
            shown, bm25 = numbers(cell)
            assert 0 <= shown <= 100 and 0 <= bm25 <= 100, row
        assert numbers(row[-1])[0] > 0  # turns shown
    detail = [r for r in table if len(r) == 12]
    assert {r[3] for r in detail} == {"BM25", *retrievers}
    for row in detail:
        at5, at10, at20 = (numbers(cell)[0] for cell in row[8:11])
        assert 0 <= at5 <= at10 <= at20 <= 100, row
        assert 0 <= float(row[11]) <= 1, row
    everything = [r for r in detail if r[2] == "all" and r[3] != "BM25"]
    assert all(numbers(r[5])[0] > 0 for r in everything)  # some evidence is shown


def test_the_command_line_measures_lexical_recall(capsys: pytest.CaptureFixture[str]) -> None:
    main(["--histories", "--size", "small", "--backend", "sqlite", "--embedding-model", "off"])
    printed = capsys.readouterr().out
    assert printed.count("dense: n/a (embeddings off)") == 2
    check_tables(printed, ("lexical",))


def test_with_an_embedder_dense_and_hybrid_are_measured(
    capsys: pytest.CaptureFixture[str],
) -> None:
    embedder = FakeEmbedder()
    runs = asyncio.run(measure_histories("small", ("sqlite",), embedder))
    report_histories(runs, "small")
    printed = capsys.readouterr().out
    assert "turns and 27 questions embedded by fake:bag-of-concepts" in printed
    check_tables(printed, RETRIEVERS)
    assert "Hybrid against lexical" in printed


def test_the_probes_run_on_sqlite(capsys: pytest.CaptureFixture[str]) -> None:
    main(["--search-only", "--backend", "sqlite"])
    table = [r for r in rows(capsys.readouterr().out) if len(r) == 9]
    assert [(r[0], r[1], r[2]) for r in table] == [("EN", "sqlite", "26"), ("ID", "sqlite", "27")]
    for row in table:
        assert all(0 <= float(cell) <= 1 for cell in row[3:]), row
