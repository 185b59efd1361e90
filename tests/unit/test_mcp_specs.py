"""An MCP server's tools, as langchain-mcp-adapters loads them, as registry entries, and
their answers (the adapters' messages, bounded by our interceptor) as tool results."""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain_core.messages.tool import tool_call
from langchain_core.tools import BaseTool
from langchain_mcp_adapters.tools import convert_mcp_tool_to_langchain_tool
from mcp import types

from tools.base import ToolSpec
from tools.mcp.config import ServerConfig
from tools.mcp.names import split_name, tool_name
from tools.mcp.results import MAX_RESULT_BYTES, TooLarge, bounded, to_result
from tools.mcp.specs import tool_specs
from tools.registry import ToolRegistry, builtin_specs

LOCAL = ServerConfig("notes", "stdio", command="notes-mcp")
REMOTE = ServerConfig("cal", "http", url="https://cal.example.com/mcp", timeout=4.0)
SCHEMA = {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}


class Answering:
    """A session whose every call is answered with ``result`` (and recorded)."""

    def __init__(self, result: types.CallToolResult | None = None) -> None:
        self.result = result or types.CallToolResult(content=[])
        self.calls: list[tuple[str, dict[str, Any]]] = []

    async def call_tool(self, name: str, args: dict[str, Any], **_: Any) -> types.CallToolResult:
        self.calls.append((name, args))
        return self.result


def tool(
    name: str = "search",
    description: str | None = "Search notes. Query words.",
    session: Answering | None = None,
    **kw: Any,
) -> BaseTool:
    """The adapters' tool for an MCP tool of the notes server, as a connection loads it."""
    listed = types.Tool(
        name=name,
        description=description,
        inputSchema=kw.pop("schema", SCHEMA),
        annotations=kw.pop("annotations", None),
    )
    held: Any = session or Answering()  # stands in for the connection's ClientSession
    return convert_mcp_tool_to_langchain_tool(
        held, listed, server_name="notes", tool_interceptors=[bounded]
    )


async def answer(server: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"content": f"{server}/{name}/{json.dumps(args)}"}


def test_tools_are_prefixed_untrusted_and_offered_as_commands() -> None:
    (spec,) = tool_specs(LOCAL, [tool()], answer).specs
    assert spec.name == "notes__search" and spec.command == "notes__search"
    assert spec.untrusted and not spec.private and spec.role == "web_tool"
    assert spec.use_when == "Search notes." and spec.description == "Query words."
    assert spec.parameters == SCHEMA and spec.outbound is None
    assert spec.examples == ("/notes__search …",)
    assert spec.schema()["function"]["name"] == "notes__search"


async def test_a_call_goes_to_its_server_and_tool() -> None:
    (spec,) = tool_specs(LOCAL, [tool()], answer).specs
    result = await spec.run({"query": "milk"}, None)  # type: ignore[arg-type]
    assert result == {"content": 'notes/search/{"query": "milk"}'}


def test_a_remote_servers_calls_are_outbound_and_keep_its_time_limit() -> None:
    (spec,) = tool_specs(REMOTE, [tool()], answer).specs
    assert spec.outbound is not None and spec.outbound({"query": "x"}) == '{"query": "x"}'
    assert spec.timeout == 4.0


def test_names_are_made_valid_and_too_long_ones_left_out() -> None:
    assert tool_name("notes", "search.v2 beta") == "notes__search_v2_beta"
    built = tool_specs(LOCAL, [tool("x" * 60), tool("ok")], answer)
    assert [s.name for s in built.specs] == ["notes__ok"]
    assert "over 64 characters" in built.skipped[0]
    assert split_name("notes__search") == ("notes", "search")
    assert split_name("web_search") is None


def test_a_tool_with_a_broken_schema_is_left_out() -> None:
    broken = tool("bad", schema={"type": "object", "properties": {"q": {"type": 5}}})
    built = tool_specs(LOCAL, [broken, tool()], answer)
    assert [s.name for s in built.specs] == ["notes__search"]
    assert "not a valid JSON schema" in built.skipped[0]


def test_descriptions_are_cut_short_and_a_missing_one_is_made_up() -> None:
    long = tool(description="Find. " + "word " * 400)
    (spec,) = tool_specs(LOCAL, [long], answer).specs
    assert spec.use_when == "Find." and len(spec.description) <= 800
    (bare,) = tool_specs(LOCAL, [tool(description=None)], answer).specs
    assert bare.use_when == "The search tool of the notes server."


def test_several_parameters_get_a_json_example() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    }
    (spec,) = tool_specs(LOCAL, [tool(schema=schema)], answer).specs
    assert spec.examples == ('/notes__search {"a": "…", "b": "…"}',)
    assert spec.command_arguments('{"a": "x", "b": 2}') == {"a": "x", "b": 2}


def test_join_refuses_a_taken_name_and_keeps_the_first() -> None:
    registry = ToolRegistry(builtin_specs())
    first = tool_specs(LOCAL, [tool("search.v2"), tool("search_v2")], answer).specs
    refused = registry.join(first)
    assert refused == ["notes__search_v2"]
    assert registry.get("notes__search_v2") is first[0]
    impostor = ToolSpec("web_search", "x", SCHEMA, answer, "web_tool")  # type: ignore[arg-type]
    assert registry.join([impostor]) == ["web_search"]
    assert registry.get("web_search") is not impostor
    assert "notes__search_v2" in registry.untrusted


async def answered(result: types.CallToolResult, name: str = "search") -> dict[str, Any]:
    """``result`` as it reaches the registry: through the adapters' tool and ``to_result``."""
    session = Answering(result)
    message = await tool(name, session=session).ainvoke(tool_call(name=name, args={}, id="1"))
    assert session.calls == [(name, {})]
    return to_result(f"notes__{name}", message)


def text_result(text: str, *, error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], isError=error)


async def test_results_are_text_and_errors_are_error_results() -> None:
    assert await answered(text_result("found it")) == {"content": "found it"}
    failed = await answered(text_result("no such note", error=True))
    assert failed == {"error": "notes__search reported an error: no such note"}


async def test_a_result_over_the_cap_is_refused() -> None:
    with pytest.raises(TooLarge, match=r"notes__big returned 1\.0 MB; results over 1 MB"):
        await answered(text_result("x" * (MAX_RESULT_BYTES + 10)), "big")


async def test_images_are_named_and_structured_content_stands_in_for_missing_text() -> None:
    image = types.ImageContent(type="image", data="aGk=", mimeType="image/png")
    assert await answered(types.CallToolResult(content=[image])) == {
        "content": "[image: image/png, not shown]"
    }
    structured = types.CallToolResult(content=[], structuredContent={"n": 3})
    assert await answered(structured) == {"content": '{"n": 3}'}


async def test_audio_binary_resources_and_links_are_named_not_inlined() -> None:
    """The adapters refuse audio and would give a binary resource as data without its
    URI: our interceptor names both first."""
    audio = types.AudioContent(type="audio", data="aGk=", mimeType="audio/wav")
    blob = types.BlobResourceContents(uri="file:///a.pdf", blob="aGk=", mimeType="application/pdf")
    binary = types.EmbeddedResource(type="resource", resource=blob)
    link = types.ResourceLink(type="resource_link", name="n", uri="https://x.example/n")
    result = await answered(types.CallToolResult(content=[audio, binary, link]))
    assert result == {
        "content": "[audio: audio/wav, not shown]\n[binary resource file:///a.pdf, not shown]\n"
        "[resource https://x.example/n]"
    }


def test_an_annotation_title_stands_in_for_a_missing_description() -> None:
    titled = tool(description=None, annotations=types.ToolAnnotations(title="Find a note"))
    (spec,) = tool_specs(LOCAL, [titled], answer).specs
    assert spec.use_when == "Find a note"
