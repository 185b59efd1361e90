"""The model under test as the harness sees it: forced replies first, every prompt recorded.

``StagedChatModel`` wraps the chat (or vision) model of a case. A case's ``script``
forces its first replies — plain text, or one tool call in the configured tool mode (a
native call, or a slash command in commands mode) — which is how the evals stage a model
that loops, repeats itself or obeys an injected instruction, so that the graph's guards
are what gets tested; the wrapped model answers every later call. Each call's system
message is recorded, so a check can read what the model was told (the persona's
identity block, a style note) without reaching into graph state.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, SystemMessage
from langchain_core.messages.tool import tool_call_chunk
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import ConfigDict, Field, PrivateAttr

from evals.cases import ScriptStep

Role = Literal["chat", "vision"]
COMMAND_NAMES = {"image_generate": "imagine"}  # a tool's command when it is not its name


@dataclass
class PromptLog:
    """The system message of every model call of one turn, with the model's role."""

    calls: list[tuple[Role, str]] = field(default_factory=list)

    def systems(self, role: Role | None = None) -> list[str]:
        """The recorded system messages (of one role, when given), in call order."""
        return [text for who, text in self.calls if role is None or who == role]


def forced_reply(step: ScriptStep, tool_mode: str, call_id: str) -> AIMessage:
    """A scripted step as the model would have said it in this tool mode."""
    if step.say is not None:
        return AIMessage(content=step.say)
    assert step.tool is not None
    if tool_mode == "native":
        call = {"name": step.tool, "args": dict(step.args), "id": call_id, "type": "tool_call"}
        return AIMessage(content="", tool_calls=[call])
    return AIMessage(content=command_line(step.tool, step.args))


def command_line(tool: str, args: dict[str, Any]) -> str:
    """The slash command for one call (commands mode: one per reply)."""
    name = COMMAND_NAMES.get(tool, tool)
    if tool == "memory_sql":
        return f"/memory_sql\n{args['sql']}"
    if tool == "weather":
        if "lat" in args:
            return f"/weather {args['lat']}, {args['lon']}"
        return f"/weather {args.get('location', '')}".rstrip()
    if tool in ("create_memory", "update_memory", "delete_memory"):
        return f"/{name} {json.dumps(args, ensure_ascii=False)}"
    if not args:
        return f"/{name}"
    if len(args) == 1:
        return f"/{name} {next(iter(args.values()))}"
    return f"/{name} {json.dumps(args, ensure_ascii=False)}"


def _system_text(messages: Sequence[BaseMessage]) -> str:
    if not messages or not isinstance(messages[0], SystemMessage):
        return ""
    content = messages[0].content
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content if isinstance(part, dict))


def _chunks(message: AIMessage) -> Iterator[AIMessageChunk]:
    """A forced reply as a stream: its text, then its tool calls."""
    yield AIMessageChunk(content=message.content, id=message.id)
    for index, call in enumerate(message.tool_calls):
        yield AIMessageChunk(
            content="",
            id=message.id,
            tool_call_chunks=[
                tool_call_chunk(
                    name=call["name"], args=json.dumps(call["args"]), id=call["id"], index=index
                )
            ],
        )


class StagedChatModel(BaseChatModel):
    """A chat model that says the case's forced replies, then lets ``model`` answer."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    model: BaseChatModel  # the model under test
    role: Role = "chat"
    forced: list[ScriptStep] = Field(default_factory=list)
    tool_mode: str = "native"
    log: PromptLog = Field(default_factory=PromptLog)  # shared by a case's models
    _served: int = PrivateAttr(default=0)
    _ids: Iterator[int] = PrivateAttr(default_factory=lambda: itertools.count(1))

    @property
    def _llm_type(self) -> str:
        return "staged"

    @property
    def model_name(self) -> str:
        """The wrapped model's name (what traces and reports show)."""
        return str(getattr(self.model, "model_name", "") or self.model.get_name())

    def bind_tools(
        self, tools: Sequence[Any], *, tool_choice: str | None = None, **kwargs: Any
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Keep the offered tools with each call; they reach the wrapped model as given."""
        formatted = [convert_to_openai_tool(t) for t in tools]
        return self.bind(tools=formatted, tool_choice=tool_choice, **kwargs)

    def _take(self, messages: list[BaseMessage]) -> AIMessage | None:
        """Record the call; the next forced reply, or None when the model answers."""
        self.log.calls.append((self.role, _system_text(messages)))
        if self._served >= len(self.forced):
            return None
        step = self.forced[self._served]
        self._served += 1
        number = next(self._ids)
        reply = forced_reply(step, self.tool_mode, f"forced_{number}")
        reply.id = f"forced-{number}"
        return reply

    def _inner(self, kwargs: dict[str, Any]) -> Runnable[LanguageModelInput, Any]:
        tools = kwargs.get("tools")
        if not tools:
            return self.model
        return self.model.bind_tools(tools, tool_choice=kwargs.get("tool_choice"))

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        reply = self._take(messages) or self._inner(kwargs).invoke(messages, stop=stop)
        return ChatResult(generations=[ChatGeneration(message=reply)])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        reply = self._take(messages) or await self._inner(kwargs).ainvoke(messages, stop=stop)
        return ChatResult(generations=[ChatGeneration(message=reply)])

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        forced = self._take(messages)
        stream: Any = (
            _aiter(_chunks(forced))
            if forced is not None
            else self._inner(kwargs).astream(messages, stop=stop)
        )
        async for chunk in stream:
            generation = ChatGenerationChunk(message=chunk)
            if run_manager and isinstance(chunk.content, str) and chunk.content:
                await run_manager.on_llm_new_token(chunk.content, chunk=generation)
            yield generation


async def _aiter(chunks: Iterator[AIMessageChunk]) -> AsyncIterator[AIMessageChunk]:
    for chunk in chunks:
        yield chunk
