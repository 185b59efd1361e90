"""bench.local_speed on the bundled model, 8 tokens once: the child runs and reports a
rate (a crash is printed as a crash, never as a number)."""

from __future__ import annotations

import re

import pytest

from bench import local_speed


def test_this_environment_reports_tokens_per_second(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(local_speed, "TOKENS", 8)
    monkeypatch.setattr(local_speed, "RUNS", 1)
    assert local_speed.main([]) == 0
    printed = capsys.readouterr().out
    found = re.search(r"this environment\s+([\d.]+) tokens/s\s+\(load ([\d.]+) s\)", printed)
    assert found, printed
    assert float(found[1]) > 0 and float(found[2]) > 0
