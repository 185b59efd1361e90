"""The command protocol: the parser, what streams and is stored, argument normalisation."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from graph.commands import Commands, call_signature, parse_reply, visible_prefix
from graph.events import TextDelta, ToolStart
from graph.runner import run_turn, stream_turn

COMMANDS = Commands.of(
    ["weather", "web_search", "imagine", "image_generate", "create_memory"],
    multiline=["memory_sql"],
)


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
        # a first line naming no command is plain text (no unknown-tool call)
        ("/shrug", None, None, "/shrug"),
        ("/Web_Search usd", None, None, "/Web_Search usd"),
        ("/shrug\n/weather Tokyo", None, None, "/shrug\n/weather Tokyo"),
        # one command per reply: any further command line is dropped, never shown
        ("/web_search a\n/weather b", "web_search", "a", ""),
        ("/web_search a\nOne sec.\n/weather b\nAlmost.", "web_search", "a", "One sec.\nAlmost."),
        ("/weather b\n  /imagine a cat  \n/shrug", "weather", "b", "/shrug"),
    ],
)
def test_first_line_command(reply: str, name: str | None, args: str | None, text: str) -> None:
    parsed = parse_reply(reply, COMMANDS)
    if name is None:
        assert parsed.command is None
    else:
        assert parsed.command is not None
        assert (parsed.command.name, parsed.command.text) == (name, args)
    assert parsed.text == text


def test_multiline_command_takes_following_lines() -> None:
    parsed = parse_reply("/memory_sql\nSELECT 1\n/weather x", COMMANDS)
    assert parsed.command is not None
    assert parsed.command.text == "SELECT 1\n/weather x"
    assert parsed.text == ""


def test_visible_prefix_hides_a_forming_command() -> None:
    assert visible_prefix("/wea", COMMANDS) == ""
    assert visible_prefix("/weather Tokyo\nIt is", COMMANDS) == "It is"
    assert visible_prefix("Hello", COMMANDS) == "Hello"
    assert visible_prefix("/usr/bin\nx", COMMANDS) == "/usr/bin\nx"
    assert visible_prefix("/shrug\n", COMMANDS) == "/shrug\n"
    assert visible_prefix("/memory_sql\nSELECT 1", COMMANDS) == ""


def test_visible_prefix_holds_a_line_that_may_become_a_second_command() -> None:
    assert visible_prefix("/weather b\nOne sec.\n/ima", COMMANDS) == "One sec.\n"
    assert visible_prefix("/weather b\nOne sec.\n/imagine x\nOk", COMMANDS) == "One sec.\nOk"
    assert visible_prefix("/weather b\nOne sec.\n/usr/bin\n", COMMANDS) == "One sec.\n/usr/bin\n"


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
    parsed = parse_reply(text, COMMANDS)
    assert isinstance(parsed.text, str)
    visible_prefix(text, COMMANDS)


REPLY_PIECES = st.sampled_from(
    ["/weather", "/imagine", "/shrug", "/memory_sql", " Tokyo", "\n", " ", "ok", "/", "Hi."]
)


@given(st.lists(REPLY_PIECES, max_size=12).map("".join))
def test_streamed_text_only_grows_and_ends_as_the_stored_text(reply: str) -> None:
    """What streams out is never taken back, and what was shown is what is stored."""
    shown = [visible_prefix(reply[:end], COMMANDS) for end in range(len(reply) + 1)]
    for before, after in itertools.pairwise(shown):
        assert after.startswith(before)
    final = visible_prefix(reply + "\n", COMMANDS)
    assert final.startswith(shown[-1])
    assert final.strip() == parse_reply(reply, COMMANDS).text


@pytest.mark.parametrize("reply", ["/shrug", "/Web_Search usd to jpy", "/shrug\n/echo hi"])
async def test_a_first_line_naming_no_command_is_the_answer(make_context, reply: str) -> None:
    """No unknown-tool call and no extra model round: the reply is plain text."""
    ctx = make_context([reply, "never asked"], tool_mode="commands")
    result = await run_turn(ctx, "s1", "how do you feel?")
    assert result.answer == reply and result.tool_names == []
    assert len(ctx.chat_model.calls) == 1
    stored = [(m.role, m.content) for m in ctx.store.blocking.messages("s1")]
    assert stored == [("user", "how do you feel?"), ("assistant", reply)]


@pytest.mark.parametrize("mode", ["native", "commands"])
async def test_a_second_command_line_is_never_shown_nor_stored(make_context, mode: str) -> None:
    ctx = make_context(
        ["/echo Tokyo\nOne sec.\n/echo Osaka\n/boom x", "Done: Tokyo."], tool_mode=mode
    )
    events = [event async for event in stream_turn(ctx, "s1", "echo tokyo")]
    shown = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert [e.name for e in events if isinstance(e, ToolStart)] == ["echo"]  # one command
    stored = [
        (m.role, m.content) for m in ctx.store.blocking.messages("s1") if m.role == "assistant"
    ]
    assert stored == [("assistant", "One sec."), ("assistant", "Done: Tokyo.")]
    assert "/echo" not in shown and "/boom" not in shown and "Osaka" not in shown
    assert "One sec." in shown and "Done: Tokyo." in shown
