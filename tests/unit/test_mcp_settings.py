"""The Settings tab's MCP section: read-only, escaped, and saying where servers are added."""

from __future__ import annotations

import json
from pathlib import Path

from app.mcp_view import mcp_markdown, server_line
from app.ui import build_app
from graph.setup import ContextFactory, People


def test_without_mcp_json_it_says_where_the_operator_lists_servers(tmp_path: Path) -> None:
    text = mcp_markdown(tmp_path)
    assert "No MCP servers" in text and "mcp.json" in text and "restart" in text


def test_servers_not_started_and_refused_entries_are_listed(tmp_path: Path) -> None:
    entries = {"notes": {"command": "notes-mcp"}, "far": {"url": "http://203.0.113.9/mcp"}}
    (tmp_path / "mcp.json").write_text(json.dumps({"mcpServers": entries}))
    text = mcp_markdown(tmp_path)
    assert "**notes** — · not started · `notes-mcp`" in text
    assert "**far** — ✗ not used" in text and "use https" in text


def test_what_a_server_wrote_is_shown_as_text_never_as_markdown() -> None:
    line = server_line("notes", "", "failed", "![x](https://evil.example/p.png) <b>", ["a__b"])
    assert "![" not in line and "](" not in line and "<b>" not in line
    assert "a\\_\\_b" in line


def test_the_settings_tab_has_the_section(tmp_path: Path) -> None:
    demo = build_app(People.single(ContextFactory({"home": str(tmp_path)})))
    ids = {getattr(block, "elem_id", None) for block in demo.blocks.values()}
    assert "mcp-servers" in ids
