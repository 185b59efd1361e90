"""bench.imports at a small size: both generated exports are ChatGPT's shape (the real
parser reads them whole), and the real command imports them, measured."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.imports.reading import conversations
from bench.imports import by_count, by_size, main
from tests.support.bench_tables import numbers, run_main


def test_the_exports_have_the_asked_size_and_parse(tmp_path: Path) -> None:
    counted = by_count(tmp_path / "counted.json", 7, 50)
    parsed = [p for _, p in conversations(counted.path)]
    assert [len(p.chat.messages) for p in parsed] == [8] * 1 + [7] * 6
    assert sum(len(p.chat.messages) for p in parsed) == counted.messages == 50
    assert not any(p.skipped for p in parsed)
    big = by_size(tmp_path / "big.json", 0.5, per_chat=10)
    assert big.size >= 500_000 and big.messages == 10 * big.chats
    assert len(list(conversations(big.path))) == big.chats


def test_the_table_reports_both_imports(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    table = run_main(
        main, ["--chats", "3", "--messages", "12", "--megabytes", "0.2"], monkeypatch, capsys
    )
    assert numbers(table["by count: file"][0])[1:] == [3, 12]
    assert table["by count: report"][0].startswith("Imported 3 chats with 12 messages")
    for label in ("by count", "by size"):
        assert numbers(table[f"{label}: wall time"][0])[0] > 0
        assert numbers(table[f"{label}: peak memory"][0])[0] > 10
    assert numbers(table["by size: file"][0])[0] >= 0.2
