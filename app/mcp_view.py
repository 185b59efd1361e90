"""The Settings tab's MCP section: the servers of mcp.json, each one's state and tools.

Read-only: only the operator adds a server, in ``COMPANION_HOME/mcp.json`` (restart to
load a change); the page never changes it. Filled on the page load and whenever the tab
is chosen, from the servers this app started (``tools.mcp.servers``). Everything shown
is escaped: a reason can quote what a server wrote.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import gradio as gr

from app.chat_view import code
from app.graph_view import plain
from graph.setup import People
from tools.mcp.config import config_path, read_config

HEADING = "#### MCP tools"
NONE = (
    "No MCP servers. The operator lists them in {path} (stdio commands or https URLs, "
    "in the mcpServers shape); restart Companion to load a change."
)
FROM_FILE = "From {path}, read when Companion started (only the operator edits it):"
STATES = {
    "ready": "✓ ready",
    "starting": "… starting",
    "failed": "✗ could not start",
    "crashed": "✗ stopped; it starts again on its next call",
    "refused": "✗ not used",
    "not started": "· not started",
}


def server_line(name: str, where: str, state: str, reason: str, tools: Iterable[str]) -> str:
    """One server as a list item: name, state, where it runs, its tools or why none."""
    line = f"- **{plain(name or 'mcp.json')}** — {STATES.get(state, plain(state))}"
    if where:
        line += f" · {code(where)}"
    if reason:
        line += f"\n  {plain(reason)}"
    names = list(tools)
    if names:
        line += "\n  " + ", ".join(plain(n) for n in names)
    return line


def mcp_markdown(home: Path) -> str:
    """The section for ``home``: its servers as this app runs them, or how to add some."""
    path = code(str(config_path(home)))
    if not config_path(home).is_file():
        return f"{HEADING}\n{NONE.format(path=path)}"
    from tools.mcp.servers import running_servers  # the MCP SDK loads only when used

    servers = running_servers(home)
    if servers is not None:
        lines = [
            server_line(s.name, s.where, s.state, s.reason, s.tools) for s in servers.statuses()
        ]
    else:
        config = read_config(home)
        lines = [server_line(s.name, s.where, "not started", "", ()) for s in config.servers]
        lines += [server_line(p.name, "", "refused", p.reason, ()) for p in config.problems]
    return "\n".join([HEADING, FROM_FILE.format(path=path), *lines])


def build(people: People, load: Any, opened: Any) -> None:
    """The section, filled on the page load and when the tab is chosen."""
    section = gr.Markdown(elem_id="mcp-servers")

    async def shown(request: gr.Request) -> str:
        home = (await people.factory(request.username)()).settings.home
        return mcp_markdown(home)

    gr.on([load, opened], shown, None, section, api_visibility="private", show_progress="hidden")
