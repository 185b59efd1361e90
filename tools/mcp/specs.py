"""An MCP server's tools as ``ToolSpec``s: prefixed names, schemas, outside content.

The tools are the LangChain tools ``langchain-mcp-adapters`` loads from the server's
session (``load_mcp_tools``): their name, description and ``args_schema`` (the server's
input schema) make the spec. Each tool is named ``<server>__<tool>``
(``tools.mcp.names``), keeps the server's input schema (checked; a tool with a broken
schema is left out, and so is one whose name would be too long), and reads its use-when
sentence from the server's description, cut short (the operator trusted the server, but
its words still go into the prompt). Every MCP tool is ``untrusted``: its results are
outside content, marked for the model, and a memory change after one waits for the
person. A remote server's calls are ``outbound`` (the arguments leave the machine).
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import jsonschema
from langchain_core.tools import BaseTool

from tools.base import ToolContext, ToolSpec
from tools.mcp.config import ServerConfig
from tools.mcp.names import tool_name
from tools.mcp.results import format_result

USE_WHEN_CHARS = 240
DESCRIPTION_CHARS = 800
SENTENCE_END = re.compile(r"(?<=[.!?])\s")
NO_DESCRIPTION = "The {tool} tool of the {server} server."
TOO_LONG = "{tool}: its name with the server prefix is over 64 characters"
BAD_SCHEMA = "{tool}: its input schema is not a valid JSON schema ({detail})"

Call = Callable[[str, str, dict[str, Any]], Awaitable[dict[str, Any]]]


@dataclass(frozen=True)
class Built:
    """A server's tools as specs, and why any were left out."""

    specs: list[ToolSpec]
    skipped: list[str]


def _cut(text: str, limit: int) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else f"{line[: limit - 1]}…"


def _descriptions(server: str, tool: BaseTool) -> tuple[str, str]:
    """(use-when sentence, the rest) from the server's description of ``tool`` (or the
    title of its annotations, which the adapters keep in its metadata)."""
    text = " ".join((tool.description or "").split())
    if not text:
        title = (tool.metadata or {}).get("title")
        text = str(title or NO_DESCRIPTION.format(tool=tool.name, server=server))
    first = SENTENCE_END.split(text, maxsplit=1)[0]
    rest = text[len(first) :].strip()
    return _cut(first, USE_WHEN_CHARS), _cut(rest, DESCRIPTION_CHARS)


def _parameters(tool: BaseTool) -> dict[str, Any]:
    """The tool's input schema as an object schema (checked by the caller); the adapters
    give the server's JSON schema as it is."""
    given = tool.args_schema
    schema = dict(given) if isinstance(given, dict) else {}
    schema.setdefault("type", "object")
    schema.setdefault("properties", {})
    return schema


def _example(name: str, parameters: dict[str, Any]) -> str:
    """A command line for commands mode: the text alone for one string parameter, else
    a JSON object of the required arguments."""
    props = parameters.get("properties") or {}
    required = [p for p in parameters.get("required") or [] if p in props]
    only = list(props.values())
    if len(only) == 1 and isinstance(only[0], dict) and only[0].get("type") == "string":
        return f"/{name} …"
    return f"/{name} {json.dumps(dict.fromkeys(required, '…'), ensure_ascii=False)}"


def tool_specs(server: ServerConfig, tools: list[BaseTool], call: Call) -> Built:
    """``server``'s tools as specs whose ``run`` goes through ``call(server, tool, args)``."""
    specs: list[ToolSpec] = []
    skipped: list[str] = []
    for tool in tools:
        name = tool_name(server.name, tool.name)
        if name is None:
            skipped.append(TOO_LONG.format(tool=tool.name))
            continue
        parameters = _parameters(tool)
        try:
            jsonschema.Draft202012Validator.check_schema(parameters)
        except jsonschema.SchemaError as exc:
            skipped.append(BAD_SCHEMA.format(tool=tool.name, detail=exc.message))
            continue
        use_when, description = _descriptions(server.name, tool)
        specs.append(
            ToolSpec(
                name=name,
                use_when=use_when,
                description=description,
                parameters=parameters,
                run=_runner(call, server.name, tool.name),
                role="web_tool",
                command=name,
                format=format_result,
                timeout=server.timeout,
                examples=(_example(name, parameters),),
                untrusted=True,
                outbound=_sent if server.remote else None,
            )
        )
    return Built(specs, skipped)


def _runner(call: Call, server: str, tool: str) -> Callable[..., Awaitable[dict[str, Any]]]:
    async def run(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        return await call(server, tool, args)

    return run


def _sent(args: dict[str, Any]) -> str | None:
    """What a call to a remote server sends off the machine: its arguments."""
    return json.dumps(args, ensure_ascii=False)
