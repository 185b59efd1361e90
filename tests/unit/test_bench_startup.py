"""bench.startup once: ``companion --help`` and the app's first answer are timed."""

from __future__ import annotations

import pytest

from bench.startup import main
from tests.support.bench_tables import numbers, run_main


def test_help_and_first_response_are_timed(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    table = run_main(main, ["--runs", "1", "--timeout", "120"], monkeypatch, capsys)
    for name in ("companion --help", "app: start → first GET / 200"):
        median, low, high = (numbers(cell)[0] for cell in table[name])
        assert 0 < low <= median <= high, name
