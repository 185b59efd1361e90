"""bench.local_loops, one chat against the bundled model: both ways get a row with the
replies that ran to the cap, those ended as a loop, and their times (every bench module
has a smoke test, so a change that breaks one is seen in CI)."""

from __future__ import annotations

import re

import pytest

from bench.local_loops import main


def test_one_chat_prints_a_row_per_way(capsys: pytest.CaptureFixture[str]) -> None:
    main(["--runs", "1", "--chats", "1"])
    rows = re.findall(
        r"^\| (let run|loop ended) \| ([01])/1 \| ([01])/1 \| ([\d.]+) \| ([\d.]+) \| (\d+) \|$",
        capsys.readouterr().out,
        re.MULTILINE,
    )
    assert [row[0] for row in rows] == ["let run", "loop ended"]
    let_run, ended = rows
    assert let_run[2] == "0"  # a reply let run is never ended as a loop
    assert all(float(row[3]) > 0 and int(row[5]) > 0 for row in rows)
    assert not (ended[1] == "1" and ended[2] == "1")  # capped or ended, not both
