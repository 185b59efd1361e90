"""A connection loads its tools through langchain-mcp-adapters on the session it holds,
calls them there, and loads them again on the new session after a crash."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from langchain_core.messages import ToolMessage
from langchain_core.tools import StructuredTool
from mcp import McpError

from tools.mcp.config import ServerConfig
from tools.mcp.connection import Connection

ROOT = Path(__file__).resolve().parents[2]
NOTES = ServerConfig(
    "notes",
    "stdio",
    command=sys.executable,
    args=("-m", "tests.support.mcp_server", "stdio"),
    cwd=str(ROOT),
)


async def test_tools_are_the_adapters_on_the_held_session_and_reloaded_after_a_crash() -> None:
    connection = Connection(NOTES)
    try:
        first = await connection.open(30)
        tools = {tool.name: tool for tool in connection.tools}
        assert isinstance(tools["search_notes"], StructuredTool)
        assert tools["search_notes"].args_schema["required"] == ["query"]  # type: ignore[index]
        message = await connection.call("search_notes", {"query": "milk"}, 30)
        assert isinstance(message, ToolMessage) and message.status == "success"
        texts = [block["text"] for block in message.content]  # type: ignore[index]
        assert texts == ["Note about milk: buy oat milk on Friday."]
        assert await connection.open(30) is first  # one long-lived session
        with pytest.raises(McpError, match="Connection closed"):
            await connection.call("crash", {}, 30)
        assert connection.state == "crashed"
        second = await connection.open(30)
        assert second is not first
        again = await connection.call("search_notes", {"query": "tea"}, 30)
        assert "Note about tea" in str(again.content)
        assert connection.tools[0] is not tools[connection.tools[0].name]
    finally:
        await connection.close()
