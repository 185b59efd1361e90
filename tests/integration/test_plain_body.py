"""ChatOpenAI with ``providers.plain_body``: the same request on the wire as the OpenAI
SDK's own path, against a real loopback server, without the SDK's request transform."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import openai
import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_openai import ChatOpenAI

from providers.plain_body import PlainCompletions, is_plain_json, plain_bodies
from tests.support.fake_openai import FakeOpenAIServer, Step

TOOL = {
    "type": "function",
    "function": {
        "name": "weather",
        "description": "The weather now.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}
MESSAGES = [
    SystemMessage("You are Yuzuki. Current date: Friday 27 November 2026."),
    HumanMessage("weather in Jakarta?"),
    AIMessage("", tool_calls=[{"id": "c1", "name": "weather", "args": {"city": "Jakarta"}}]),
    ToolMessage('{"temperature_c": 31.4}', tool_call_id="c1"),
]


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


def chat(server: FakeOpenAIServer, **extra: Any) -> ChatOpenAI:
    return ChatOpenAI(
        model="fake-model",
        base_url=server.url,
        api_key="chat-key",  # type: ignore[arg-type]
        streaming=True,
        stream_usage=True,
        max_retries=0,
        **extra,
    )


async def test_the_request_is_the_sdks_byte_for_byte(server: FakeOpenAIServer) -> None:
    server.push("It is 31.4 °C.", "It is 31.4 °C.")
    plain = plain_bodies(chat(server)).bind_tools([TOOL])
    sdk = chat(server).bind_tools([TOOL])
    answers = [await model.ainvoke(MESSAGES) for model in (plain, sdk)]
    assert [a.content for a in answers] == ["It is 31.4 °C.", "It is 31.4 °C."]
    ours, theirs = server.requests
    assert ours == theirs and ours["stream"] is True and ours["tools"][0] == TOOL
    assert ours["messages"][2]["tool_calls"][0]["function"]["name"] == "weather"
    headers = [{k.lower(): v for k, v in h.items()} for h in server.headers]
    assert headers[0]["authorization"] == headers[1]["authorization"] == "Bearer chat-key"


async def test_tool_calls_stream_and_extra_body_is_sent(server: FakeOpenAIServer) -> None:
    server.push(Step(tool_calls=[("weather", '{"city": "Jakarta"}')]))
    model = plain_bodies(chat(server, extra_body={"max_tokens": 7})).bind_tools([TOOL])
    chunks = [chunk async for chunk in model.astream(MESSAGES[:2])]
    merged = chunks[0]
    for chunk in chunks[1:]:
        merged += chunk
    assert merged.tool_calls == [
        {"name": "weather", "args": {"city": "Jakarta"}, "id": "call_0", "type": "tool_call"}
    ]
    assert server.requests[0]["max_tokens"] == 7


async def test_a_provider_error_is_the_sdks_error(server: FakeOpenAIServer) -> None:
    server.push(Step(status=401))
    with pytest.raises(openai.AuthenticationError, match="scripted HTTP 401"):
        await plain_bodies(chat(server)).ainvoke(MESSAGES[:2])


async def test_a_body_that_is_not_plain_json_takes_the_sdks_path(
    server: FakeOpenAIServer,
) -> None:
    server.push("fine")
    completions = PlainCompletions(openai.AsyncOpenAI(base_url=server.url, api_key="k"))
    asked = ({"role": "user", "content": "hi"},)  # a tuple: the SDK's walk makes it a list
    reply = await completions.create(model="fake-model", messages=asked)
    assert reply.choices[0].message.content == "fine"
    assert server.requests[0]["messages"] == [{"role": "user", "content": "hi"}]


def test_plain_json_is_dicts_lists_and_scalars_only() -> None:
    assert is_plain_json({"a": [1, 2.5, "x", None, True, {"b": []}]})
    assert not is_plain_json({"a": (1, 2)})
    assert not is_plain_json({"a": b"bytes"})
    assert not is_plain_json({1: "key not a string"})
    assert not is_plain_json({"a": iter([1])})


def merged(chunks: list[Any]) -> Any:
    whole = chunks[0]
    for chunk in chunks[1:]:
        whole += chunk
    return whole


@pytest.mark.parametrize(
    "step",
    [Step("It is 31.4 °C in Jakarta."), Step(tool_calls=[("weather", '{"city": "Jakarta"}')])],
)
async def test_a_streamed_answer_is_the_sdks_chunk_for_chunk(
    server: FakeOpenAIServer, step: Step
) -> None:
    """The chunks read as the server's dicts make the same message chunks as the SDK's
    models dumped back: text, tool calls, finish reason, model name and token usage."""
    server.push(step, step)
    plain = plain_bodies(chat(server)).bind_tools([TOOL])
    sdk = chat(server).bind_tools([TOOL])
    ours = [chunk async for chunk in plain.astream(MESSAGES[:2])]
    theirs = [chunk async for chunk in sdk.astream(MESSAGES[:2])]
    assert len(ours) == len(theirs) > 2
    for mine, its in zip(ours, theirs, strict=True):
        assert (mine.content, mine.tool_call_chunks) == (its.content, its.tool_call_chunks)
        assert mine.response_metadata == its.response_metadata
        assert mine.usage_metadata == its.usage_metadata
    whole = merged(ours)
    assert whole.response_metadata["finish_reason"] in ("stop", "tool_calls")
    assert whole.usage_metadata is not None and whole.usage_metadata["total_tokens"] > 0


async def test_the_stream_gives_the_servers_dicts_and_a_choice_without_delta_is_kept(
    server: FakeOpenAIServer,
) -> None:
    server.push("fine")
    completions = PlainCompletions(openai.AsyncOpenAI(base_url=server.url, api_key="k"))
    asked = [{"role": "user", "content": "hi"}]
    stream = await completions.create(model="fake-model", messages=asked, stream=True)
    async with stream:
        chunks = [chunk async for chunk in stream]
    assert all(isinstance(chunk, dict) for chunk in chunks)
    assert "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks) == "fine"
