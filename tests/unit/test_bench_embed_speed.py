"""bench.embed_speed at a small size: every measurement is printed, as a number."""

from __future__ import annotations

import re

import pytest

from bench import embed_speed


def test_it_reports_size_speed_latency_and_quality(capsys: pytest.CaptureFixture[str]) -> None:
    assert embed_speed.main(["--texts", "16", "--queries", "5"]) == 0
    printed = capsys.readouterr().out
    assert re.search(r"weights on disk [1-9][\d.]* MB \(the package [1-9][\d.]* MB\)", printed)
    for threads in (1, 2):
        rate = re.search(rf"{threads} thread\(s\): ([\d.]+) passages/s \(load [\d.]+ s\)", printed)
        assert rate and float(rate[1]) > 0, printed
    assert re.search(r"query latency p50 [\d.]+ ms, p95 [\d.]+ ms", printed), printed
    for language in ("en", "id"):
        assert re.search(rf"paraphrase pairs {language}: top-1 [\d.]+, MRR 0\.\d+", printed)
