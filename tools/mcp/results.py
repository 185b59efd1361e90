"""An MCP tool's answer as a Companion tool result: text for the model, size-capped.

``bounded`` is the interceptor Companion gives ``langchain-mcp-adapters``: it sees the
server's ``CallToolResult`` before the adapters convert it, refuses one over
``MAX_RESULT_BYTES`` on the wire (``TooLarge``) and names the parts the adapters would
fail on (audio) or pass on as data without their URI (binary resources). ``to_result``
reads the adapters' ``ToolMessage``: text parts as they are; images and files named, not
inlined (the model reads text); a resource link by its URL; the structured content (the
message's artifact) when there is no text. A message whose status is "error" (the
server's ``isError``) becomes ``{"error": ...}``. Either way it is outside content: the
registry marks the tool ``untrusted``.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from langchain_core.messages import ToolMessage
from langchain_mcp_adapters.interceptors import MCPToolCallRequest, MCPToolCallResult
from mcp import types

from tools.mcp.names import tool_name

MAX_RESULT_BYTES = 1_000_000
ERROR_CHARS = 500

TOO_LARGE = "{tool} returned {size:.1f} MB; results over {limit:g} MB are refused (ask for less)"
SERVER_ERROR = "{tool} reported an error: {detail}"
NO_DETAIL = "no detail given"
AUDIO = "[audio: {mime}, not shown]"
BINARY = "[binary resource {uri}, not shown]"

Handler = Callable[[MCPToolCallRequest], Awaitable[MCPToolCallResult]]


class TooLarge(Exception):
    """A result over ``MAX_RESULT_BYTES`` on the wire; the message says so."""


def wire_size(result: types.CallToolResult) -> int:
    """The result's size as the server sent it (JSON, in bytes)."""
    return len(result.model_dump_json(by_alias=True, exclude_none=True).encode())


def _named(part: types.ContentBlock) -> types.ContentBlock:
    """An audio part (the adapters refuse audio) or a binary resource as text naming it;
    other parts as they are."""
    if isinstance(part, types.AudioContent):
        return types.TextContent(type="text", text=AUDIO.format(mime=part.mimeType))
    if isinstance(part, types.EmbeddedResource) and isinstance(
        part.resource, types.BlobResourceContents
    ):
        return types.TextContent(type="text", text=BINARY.format(uri=part.resource.uri))
    return part


async def bounded(request: MCPToolCallRequest, handler: Handler) -> MCPToolCallResult:
    """The server's answer, checked before the adapters convert it: ``TooLarge`` over
    the cap, audio and binary resources named."""
    result = await handler(request)
    if not isinstance(result, types.CallToolResult):
        return result
    size = wire_size(result)
    if size > MAX_RESULT_BYTES:
        name = tool_name(request.server_name, request.name) or request.name
        limit = MAX_RESULT_BYTES / 1_000_000
        raise TooLarge(TOO_LARGE.format(tool=name, size=size / 1_000_000, limit=limit))
    content = [_named(part) for part in result.content]
    return result.model_copy(update={"content": content})


def block_text(block: str | dict[str, Any]) -> str:
    """One of the adapters' content blocks as text the model can read."""
    if isinstance(block, str):
        return block
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    if block.get("url"):
        return f"[resource {block['url']}]"
    if kind in ("image", "file"):
        return f"[{kind}: {block.get('mime_type') or 'unknown type'}, not shown]"
    return f"[{kind or 'unknown'} content, not shown]"


def _text(message: ToolMessage) -> str:
    """The message's parts as text; its structured content when there is none."""
    content = message.content
    blocks = [content] if isinstance(content, str) else content
    text = "\n".join(block_text(block) for block in blocks)
    artifact = message.artifact
    if not text.strip() and isinstance(artifact, dict) and "structured_content" in artifact:
        text = json.dumps(artifact["structured_content"], ensure_ascii=False)
    return text


def to_result(name: str, message: ToolMessage) -> dict[str, Any]:
    """The registry's result for ``name``'s answer (the adapters' message): its text,
    or an error."""
    text = _text(message)
    if message.status == "error":
        detail = " ".join(text.split())[:ERROR_CHARS] or NO_DETAIL
        return {"error": SERVER_ERROR.format(tool=name, detail=detail)}
    return {"content": text}


def format_result(result: dict[str, Any]) -> str:
    """The stored text of a result: the server's text as it is."""
    return str(result.get("content", ""))
