"""The capped stdio reader: messages split by line, an over-long one answered at once."""

from __future__ import annotations

from mcp import types

from tools.mcp.stdio import Lines, Oversize, parse


def test_lines_are_split_across_chunks() -> None:
    lines = Lines(100)
    assert lines.feed(b'{"a":') == []
    assert lines.feed(b' 1}\n{"b": 2}\n{"c"') == [b'{"a": 1}', b'{"b": 2}']
    assert lines.feed(b": 3}\n") == [b'{"c": 3}']


def test_an_over_long_line_is_reported_once_and_skipped_to_its_end() -> None:
    lines = Lines(10)
    first = lines.feed(b'{"id": 7, "result": "xxxxxxxx')
    assert first == [Oversize(b'{"id": 7, "result": "xxxxxxxx')]
    assert lines.feed(b"x" * 1000) == []
    assert lines.feed(b'xx"}\n{"n":1}\n') == [b'{"n":1}']


def test_the_call_an_over_long_answer_was_for_gets_an_error() -> None:
    message = parse(Oversize(b'{"jsonrpc":"2.0","id":7,"result":{"content":[{"ty'), 4_000_000)
    assert not isinstance(message, Exception) and message is not None
    error = message.message.root
    assert isinstance(error, types.JSONRPCError) and error.id == 7
    assert error.error.message == "the server's answer is over 4 MB and was not read"
    named = parse(Oversize(b'{"id": "req-1", "jsonrpc": "2.0"'), 4_000_000)
    assert named is not None and not isinstance(named, Exception)
    assert named.message.root.id == "req-1"  # type: ignore[union-attr]


def test_an_over_long_line_without_an_id_and_a_bad_line_are_errors() -> None:
    assert isinstance(parse(Oversize(b"xxxxxxxx"), 10), ValueError)
    assert isinstance(parse(b"not json", 10), Exception)
    assert parse(b"  ", 10) is None
