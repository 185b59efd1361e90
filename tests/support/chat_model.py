"""A scripted chat model: deterministic replies, tool calls and streaming, for tests and evals.

A script is a list of steps (replayed in order) or a policy function that looks at the
messages and returns the next step. A step is a string (plain reply; may start with a
slash command), an ``AIMessage`` (may carry ``tool_calls``) or an exception (raised, to
drill provider failures). Every call is recorded with the tools it was offered. An
``AIMessage`` with ``response_metadata["word_delay"]`` streams one word per that many
seconds (``slow``), so a test can act while an answer is still being written.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForLLMRun,
    CallbackManagerForLLMRun,
)
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.messages.tool import tool_call_chunk
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import ConfigDict, Field

Step = str | AIMessage | BaseException
Policy = Callable[[list[BaseMessage], dict[str, Any]], Step]


class ScriptedChatModel(BaseChatModel):
    """Replies from a script or a policy; records every call it receives."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    script: Any = Field(default_factory=list)  # Sequence[Step] | Policy (kept as given)
    name_: str = "scripted"
    calls: list[dict[str, Any]] = Field(default_factory=list)
    ids: Iterator[int] = Field(default_factory=itertools.count)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    @property
    def model_name(self) -> str:
        """The name reported in traces."""
        return self.name_

    def bind_tools(
        self, tools: Sequence[Any], *, tool_choice: str | None = None, **kwargs: Any
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Record the offered tools with each call (the real model would send them)."""
        formatted = [convert_to_openai_tool(t) for t in tools]
        return self.bind(tools=formatted, tool_choice=tool_choice, **kwargs)

    def _next(self, messages: list[BaseMessage], kwargs: dict[str, Any]) -> AIMessage:
        self.calls.append(
            {
                "messages": messages,
                "tools": kwargs.get("tools") or [],
                "tool_choice": kwargs.get("tool_choice"),
            }
        )
        if callable(self.script):
            step = self.script(messages, kwargs)
        else:
            index = len(self.calls) - 1
            if index >= len(self.script):
                raise IndexError(f"scripted model has no step {index + 1} (script too short)")
            step = self.script[index]
        if isinstance(step, BaseException):
            raise step
        if isinstance(step, str):
            return AIMessage(content=step, id=f"scripted-{next(self.ids)}")
        return step

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self._next(messages, kwargs))])

    def _chunks(self, message: AIMessage) -> Iterator[AIMessageChunk]:
        text = message.content if isinstance(message.content, str) else ""
        words = text.split(" ")
        for i, word in enumerate(words):
            yield AIMessageChunk(content=word if i == 0 else f" {word}", id=message.id)
        for index, call in enumerate(message.tool_calls):
            import json

            yield AIMessageChunk(
                content="",
                id=message.id,
                tool_call_chunks=[
                    tool_call_chunk(
                        name=call["name"],
                        args=json.dumps(call["args"]),
                        id=call["id"],
                        index=index,
                    )
                ],
            )
        for index, bad in enumerate(message.invalid_tool_calls, start=len(message.tool_calls)):
            yield AIMessageChunk(
                content="",
                id=message.id,
                tool_call_chunks=[
                    tool_call_chunk(name=bad["name"], args=bad["args"], id=bad["id"], index=index)
                ],
            )

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        for chunk in self._chunks(self._next(messages, kwargs)):
            if run_manager and isinstance(chunk.content, str) and chunk.content:
                run_manager.on_llm_new_token(
                    chunk.content, chunk=ChatGenerationChunk(message=chunk)
                )
            yield ChatGenerationChunk(message=chunk)

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        message = self._next(messages, kwargs)
        delay = float(message.response_metadata.get("word_delay") or 0)
        for chunk in self._chunks(message):
            if delay:
                await asyncio.sleep(delay)
            generation = ChatGenerationChunk(message=chunk)
            if run_manager and isinstance(chunk.content, str) and chunk.content:
                await run_manager.on_llm_new_token(chunk.content, chunk=generation)
            yield generation


def slow(text: str, word_delay: float) -> AIMessage:
    """A reply streamed one word per ``word_delay`` seconds."""
    return AIMessage(content=text, response_metadata={"word_delay": word_delay})


def tool_call(name: str, args: dict[str, Any], call_id: str | None = None) -> AIMessage:
    """An AI message with one native tool call (for scripts)."""
    return AIMessage(
        content="",
        tool_calls=[
            {"name": name, "args": args, "id": call_id or f"call_{name}", "type": "tool_call"}
        ],
    )


def native_calls(*calls: tuple[str, dict[str, Any]]) -> AIMessage:
    """One AI reply with several native tool calls (ids c0, c1, ...)."""
    return AIMessage(
        content="",
        tool_calls=[
            {"name": name, "args": args, "id": f"c{i}", "type": "tool_call"}
            for i, (name, args) in enumerate(calls)
        ],
    )
