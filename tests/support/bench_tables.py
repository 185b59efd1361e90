"""Read the Markdown tables a bench prints, for the benches' smoke tests."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")


def rows(printed: str) -> list[list[str]]:
    """The cells of every table row in ``printed`` (header and rule rows left out)."""
    lines = [line.strip() for line in printed.splitlines() if line.strip().startswith("|")]
    cells = [[cell.strip() for cell in line.strip("|").split("|")] for line in lines]
    body = []
    for i, row in enumerate(cells):
        is_rule = all(set(cell) <= set("-: ") for cell in row)
        is_header = i + 1 < len(cells) and all(set(c) <= set("-: ") for c in cells[i + 1])
        if not is_rule and not is_header:
            body.append(row)
    return body


def by_name(printed: str) -> dict[str, list[str]]:
    """Each table row's cells after the first, by its first cell."""
    return {row[0]: row[1:] for row in rows(printed)}


def numbers(cell: str) -> list[float]:
    """Every number in a cell: "1,234 / 56" -> [1234, 56]; "85%" -> [85]; "2.09×" -> [2.09]."""
    return [float(found.replace(",", "")) for found in NUMBER.findall(cell)]


def run_main(
    main: Callable[[], object],
    argv: list[str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> dict[str, list[str]]:
    """Run a bench's ``main`` with ``argv`` as its command line; its tables' rows by name."""
    monkeypatch.setattr("sys.argv", ["bench", *argv])
    main()
    return by_name(capsys.readouterr().out)
