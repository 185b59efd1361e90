"""The command protocol parser and argument normalisation."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from graph.commands import call_signature, parse_reply, visible_prefix


@pytest.mark.parametrize(
    ("reply", "name", "args", "text"),
    [
        ("/weather Tokyo", "weather", "Tokyo", ""),
        ("/weather", "weather", "", ""),
        ("\n  /web_search usd to jpy\nOne moment!", "web_search", "usd to jpy", "One moment!"),
        ("/imagine a cat in a hat", "imagine", "a cat in a hat", ""),
        ("Sure! /weather Tokyo", None, None, "Sure! /weather Tokyo"),
        ("Let me see.\n/weather Tokyo", None, None, "Let me see.\n/weather Tokyo"),
        ("/usr/bin is a folder", None, None, "/usr/bin is a folder"),
        ("just text", None, None, "just text"),
        ("/web_search a\n/weather b", "web_search", "a", "/weather b"),
    ],
)
def test_first_line_command(reply: str, name: str | None, args: str | None, text: str) -> None:
    parsed = parse_reply(reply)
    if name is None:
        assert parsed.command is None
    else:
        assert parsed.command is not None
        assert (parsed.command.name, parsed.command.text) == (name, args)
    assert parsed.text == text


def test_multiline_command_takes_following_lines() -> None:
    parsed = parse_reply("/memory_sql\nSELECT 1\nFROM messages", multiline={"memory_sql"})
    assert parsed.command is not None
    assert parsed.command.text == "SELECT 1\nFROM messages"
    assert parsed.text == ""


def test_visible_prefix_hides_a_forming_command() -> None:
    assert visible_prefix("/wea") == ""
    assert visible_prefix("/weather Tokyo\nIt is") == "It is"
    assert visible_prefix("Hello") == "Hello"
    assert visible_prefix("/usr/bin\nx") == "/usr/bin\nx"


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ({"query": "USD to JPY"}, {"query": "  usd  to jpy? "}),
        ({"a": 1, "b": "X"}, {"b": "x", "a": 1.0}),
        ({"location": "Tokyo, Japan"}, {"location": "tokyo japan"}),
    ],
)
def test_near_same_arguments_share_a_signature(a: dict, b: dict) -> None:
    assert call_signature("t", a) == call_signature("t", b)


def test_different_arguments_or_tools_differ() -> None:
    assert call_signature("t", {"q": "tokyo"}) != call_signature("t", {"q": "osaka"})
    assert call_signature("a", {"q": "x"}) != call_signature("b", {"q": "x"})


@given(st.text())
def test_parser_never_raises(text: str) -> None:
    parsed = parse_reply(text, multiline={"memory_sql"})
    assert isinstance(parsed.text, str)
    visible_prefix(text)
