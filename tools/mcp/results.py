"""An MCP tool's answer as a Companion tool result: text for the model, size-capped.

Text parts are kept as they are; images, audio and binary resources are named, not
inlined (the model reads text); structured content stands in when there is no text. A
result over ``MAX_RESULT_BYTES`` on the wire, or one the server marks as an error,
becomes ``{"error": ...}``. Either way it is outside content: the registry marks the
tool ``untrusted``.
"""

from __future__ import annotations

import json
from typing import Any

from mcp import types

MAX_RESULT_BYTES = 1_000_000
ERROR_CHARS = 500

TOO_LARGE = "{tool} returned {size:.1f} MB; results over {limit:g} MB are refused (ask for less)"
SERVER_ERROR = "{tool} reported an error: {detail}"
NO_DETAIL = "no detail given"


def part_text(part: types.ContentBlock) -> str:
    """One content block as text the model can read."""
    if isinstance(part, types.TextContent):
        return part.text
    if isinstance(part, types.ImageContent | types.AudioContent):
        return f"[{part.type}: {part.mimeType}, not shown]"
    if isinstance(part, types.EmbeddedResource):
        resource = part.resource
        if isinstance(resource, types.TextResourceContents):
            return resource.text
        return f"[binary resource {resource.uri}, not shown]"
    if isinstance(part, types.ResourceLink):
        return f"[resource {part.uri}]"
    return f"[{getattr(part, 'type', 'unknown')} content, not shown]"


def wire_size(result: types.CallToolResult) -> int:
    """The result's size as the server sent it (JSON, in bytes)."""
    return len(result.model_dump_json(by_alias=True, exclude_none=True).encode())


def to_result(name: str, result: types.CallToolResult) -> dict[str, Any]:
    """The registry's result for ``name``'s answer: its text, or an error."""
    size = wire_size(result)
    if size > MAX_RESULT_BYTES:
        limit = MAX_RESULT_BYTES / 1_000_000
        return {"error": TOO_LARGE.format(tool=name, size=size / 1_000_000, limit=limit)}
    text = "\n".join(part_text(part) for part in result.content)
    if not text.strip() and result.structuredContent is not None:
        text = json.dumps(result.structuredContent, ensure_ascii=False)
    if result.isError:
        detail = " ".join(text.split())[:ERROR_CHARS] or NO_DETAIL
        return {"error": SERVER_ERROR.format(tool=name, detail=detail)}
    return {"content": text}


def format_result(result: dict[str, Any]) -> str:
    """The stored text of a result: the server's text as it is."""
    return str(result.get("content", ""))
