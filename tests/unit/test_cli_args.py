"""The command line's options mean the same before and after the sub-command."""

from __future__ import annotations

import pytest

from app.cli import _flags, build_parser


@pytest.mark.parametrize(
    "argv",
    [
        ["--home", "/h", "--model", "m", "chat", "-m", "hi"],
        ["chat", "--home", "/h", "--model", "m", "-m", "hi"],
        ["--home", "/h", "doctor", "--model", "m"],
    ],
)
def test_an_option_before_the_sub_command_is_kept(argv: list[str]) -> None:
    flags = _flags(build_parser().parse_args(argv))
    assert flags == {"home": "/h", "chat_model": "m"}


def test_no_option_means_no_flag() -> None:
    assert _flags(build_parser().parse_args(["chat"])) == {}
