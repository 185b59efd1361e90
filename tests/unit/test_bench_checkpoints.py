"""bench.checkpoints on a 4 kB photo: the turn runs and the table's figures are sane."""

from __future__ import annotations

import pytest

from bench.checkpoints import main
from tests.support.bench_tables import numbers, run_main


def test_one_turn_is_measured(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    table = run_main(main, ["--image-kb", "4"], monkeypatch, capsys)
    rows, size = numbers(table["checkpoints (rows / bytes)"][0])
    assert rows >= 1 and size > 0
    assert numbers(table["total blob bytes"][0])[0] >= size
    assert table["system prompt in a blob"][0] in ("yes", "no")
    assert table["photo's base64 in a blob"][0] in ("yes", "no")
