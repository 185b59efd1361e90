"""bench.small_prompt, one run against the bundled model: both system messages get a row
with their tokens, an uncached first token and the commands chosen (every bench module
has a smoke test, so a change that breaks one is seen in CI)."""

from __future__ import annotations

import re

import pytest

from bench.small_prompt import chose, main, prompts


def test_the_short_prompt_is_the_apps_for_the_bundled_model_and_shorter() -> None:
    systems = prompts()
    assert "/weather Tokyo   (the weather now)" in systems["compact"]
    assert "Tools you can use this turn" in systems["full"]
    assert len(systems["compact"]) * 2 < len(systems["full"])


def test_a_reply_is_right_when_it_opens_with_the_wanted_command() -> None:
    assert chose("/weather Tokyo", "/weather") and not chose("/web_search x", "/weather")
    assert chose("It is 84.", "") and not chose("/weather", "") and not chose("", "/weather")


def test_one_run_prints_a_row_per_system_message(capsys: pytest.CaptureFixture[str]) -> None:
    main(["--runs", "1"])
    rows = re.findall(
        r"^\| (full|compact) \| (\d+) \| ([\d.]+) \| ([\d.]+)x \| (\d)/6 \|$",
        capsys.readouterr().out,
        re.MULTILINE,
    )
    assert [row[0] for row in rows] == ["full", "compact"]
    (_, full, *_), (_, short, *_) = rows
    assert int(short) * 2 < int(full) and all(float(row[2]) > 0 for row in rows)
