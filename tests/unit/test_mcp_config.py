"""mcp.json: the mcpServers shape read into servers, bad entries into problems."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools.mcp.config import parse_config, read_config


def one(entry: dict, name: str = "notes"):
    return parse_config({"mcpServers": {name: entry}})


def test_a_stdio_server_in_claude_desktops_shape() -> None:
    config = one({"command": "uvx", "args": ["notes-mcp", "--dir", "/n"], "env": {"K": "v"}})
    (server,) = config.servers
    assert (server.name, server.transport, server.command) == ("notes", "stdio", "uvx")
    assert server.args == ("notes-mcp", "--dir", "/n") and server.env == {"K": "v"}
    assert server.where == "uvx notes-mcp --dir /n" and not server.remote
    assert config.problems == ()


@pytest.mark.parametrize(
    "url", ["https://mcp.example.com/mcp", "http://127.0.0.1:8123/mcp", "http://[::1]:81/mcp"]
)
def test_https_anywhere_and_http_on_loopback_are_taken(url: str) -> None:
    (server,) = one({"url": url, "type": "http", "headers": {"Authorization": "Bearer t"}}).servers
    assert server.transport == "http" and server.url == url
    assert server.remote == url.startswith("https")


def test_localhost_by_name_counts_as_loopback() -> None:
    (server,) = one({"url": "http://localhost:9000/mcp"}).servers
    assert not server.remote


@pytest.mark.parametrize(
    "url", ["http://example.com/mcp", "http://192.168.1.20:8000/mcp", "http://10.0.0.1/mcp"]
)
def test_plain_http_off_this_machine_is_refused(url: str) -> None:
    config = one({"url": url})
    assert config.servers == ()
    (problem,) = config.problems
    assert problem.name == "notes" and "use https" in problem.reason


@pytest.mark.parametrize(
    ("name", "entry", "words"),
    [
        ("notes", {}, 'give a "command"'),
        ("notes", {"command": "x", "url": "https://a.b/mcp"}, "not both"),
        ("notes", {"url": "https://a.b/sse", "type": "sse"}, "not supported"),
        ("notes", {"command": ""}, "command must be"),
        ("notes", {"command": "x", "args": "a b"}, "args must be"),
        ("notes", {"command": "x", "env": {"A": 1}}, "env must be"),
        ("notes", {"command": "x", "timeout": 0}, "timeout must be"),
        ("notes", "python", "must be an object"),
        ("my__notes", {"command": "x"}, "must start with a letter"),
        ("9notes", {"command": "x"}, "must start with a letter"),
        ("notes.app", {"command": "x"}, "must start with a letter"),
        ("notes", {"url": "ftp://a.b/mcp"}, "only http and https"),
    ],
)
def test_a_bad_entry_is_a_problem_and_the_others_still_load(name, entry, words) -> None:
    config = parse_config({"mcpServers": {name: entry, "good": {"command": "ok"}}})
    assert [s.name for s in config.servers] == ["good"]
    (problem,) = config.problems
    assert problem.name == name and words in problem.reason


def test_a_disabled_server_is_skipped_quietly() -> None:
    config = one({"command": "x", "disabled": True})
    assert config.servers == () and config.problems == ()


def test_timeout_is_read() -> None:
    (server,) = one({"command": "x", "timeout": 2.5}).servers
    assert server.timeout == 2.5


def test_no_file_means_no_servers(tmp_path: Path) -> None:
    config = read_config(tmp_path)
    assert config.servers == () and config.problems == ()


@pytest.mark.parametrize(("text", "words"), [("{nope", "not valid JSON"), ("[]", "mcpServers")])
def test_a_broken_file_is_one_problem(tmp_path: Path, text: str, words: str) -> None:
    (tmp_path / "mcp.json").write_text(text)
    (problem,) = read_config(tmp_path).problems
    assert problem.name == "" and words in problem.reason
