"""How an MCP tool is named in Companion: ``<server>__<tool>``, a valid function name.

Light on purpose (no MCP SDK): the chat's step titles read these names too.
"""

from __future__ import annotations

import re

SEPARATOR = "__"
MAX_NAME = 64  # OpenAI's limit on a function name
INVALID = re.compile(r"[^A-Za-z0-9_-]")


def tool_name(server: str, tool: str) -> str | None:
    """The registry name of ``server``'s ``tool`` (characters outside ``[A-Za-z0-9_-]``
    become ``_``), or None when it would be longer than ``MAX_NAME``."""
    name = f"{server}{SEPARATOR}{INVALID.sub('_', tool)}"
    return name if len(name) <= MAX_NAME else None


def split_name(name: str) -> tuple[str, str] | None:
    """(server, tool) of an MCP tool's registry name, or None for a built-in tool."""
    server, separator, tool = name.partition(SEPARATOR)
    return (server, tool) if separator and server and tool else None
