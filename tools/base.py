"""The shapes every tool shares: its declaration (``ToolSpec``) and what it runs with.

A tool is an async function ``run(args, ctx) -> dict``. It returns ``{"error": ...}`` on
failure instead of raising; the registry still catches anything that escapes.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

import numpy

from config.settings import Settings
from memory import AsyncStore, MemoryGates, ToolRole, utc_now


class QueryEmbedder(Protocol):
    """What memory_search needs of ``providers.embeddings.Embedder``: the query's vector
    (blocking; EmbeddingUnavailable on failure) and the model that names its space."""

    model: str
    dimensions: int

    def query(self, text: str) -> numpy.ndarray: ...


@dataclass
class ToolContext:
    """What a tool may use: the resolved settings, the store and the current session."""

    settings: Settings
    store: AsyncStore  # the person's store, through its async interface only
    session_id: str | None = None
    clock: Callable[[], datetime] = utc_now
    vision_available: bool = False
    user_message_id: int | None = None  # the message this turn answers (None outside a turn)
    embedder: QueryEmbedder | None = None  # memory_search's query vectors (None: lexical)
    # the memory gates' answer (several gates ask it), kept for one ``enabled`` call
    _gates: MemoryGates | None = field(default=None, init=False, repr=False)

    def forget_answers(self, known: MemoryGates | None = None) -> None:
        """Forget the gates' answer: the next ``memory_gates`` asks the store, unless it is
        ``known`` (read already: build_context reads it with the turn's history)."""
        self._gates = known

    def now(self) -> datetime:
        """The injectable clock's current time (aware, UTC)."""
        return self.clock()

    async def memory_gates(self) -> MemoryGates:
        """The store's ``memory_gates`` before this turn's question, asked once per
        ``ToolRegistry.enabled`` call: memory_search and memory_sql gate on its
        ``history``, update and delete_memory on its ``memories`` (one query for the
        four, a round trip on Postgres)."""
        if self._gates is None:
            self._gates = await self.store.memory_gates(self.user_message_id)
        return self._gates


ToolRun = Callable[[dict[str, Any], ToolContext], Awaitable[dict[str, Any]]]


async def always(_: ToolContext) -> bool:
    """Gate for tools that can always work."""
    return True


def writes_always(_: dict[str, Any]) -> bool:
    """``writes_memory`` of tools whose every call changes stored memory."""
    return True


def default_format(result: dict[str, Any]) -> str:
    """Plain key: value lines, used when a tool does not format its own result."""
    if "error" in result:
        return f"Error: {result['error']}"
    lines = []
    for key, value in result.items():
        lines.append(f"{key}: {value}")
    return "\n".join(lines)


@dataclass(frozen=True)
class ToolSpec:
    """A tool as the model and the graph see it.

    ``use_when`` is the one sentence saying what the tool does and when to use it: the
    native schema's description starts with it, and the command protocol (commands mode)
    gives it as the command's line, so the two modes read the same guidance.
    ``description`` is the rest: parameter semantics and an example.
    ``parameters`` is a JSON schema (object). ``role`` is the message role of its results
    (web_tool, weather_tool, memory_tool, image_tool). ``command`` is its slash-command
    name; ``parse_command`` turns the text after the command into arguments (default: the
    whole text into the first required string parameter). ``available`` is the per-turn
    gate. ``multiline`` commands take the lines after the command line as their text too
    (``/memory_sql`` + SQL below). ``format`` renders the result for the stored
    ``🔧 TOOL RESULT`` message. ``writes_memory`` tells whether a call with these
    arguments changes stored memories or messages (None: never).

    Three flags place a tool in the lethal trifecta (``graph.routing.clearance``):
    ``private`` tools return the person's private data (memory_search, memory_sql);
    ``untrusted`` tools bring outside text (web pages, images from anywhere), marked as
    untrusted data in the prompt in every later turn, and while it is in the context a
    memory write is only a proposal the person confirms; ``outbound`` gives, for a call's
    arguments, exactly what it would send off the machine that the model wrote (a search
    query, a URL), or None when it sends nothing of the model's.
    """

    name: str
    description: str
    parameters: dict[str, Any]
    run: ToolRun
    role: ToolRole
    command: str | None = None
    parse_command: Callable[[str], dict[str, Any]] | None = None
    available: Callable[[ToolContext], Awaitable[bool]] = always
    format: Callable[[dict[str, Any]], str] = default_format
    timeout: float | None = None
    multiline: bool = False
    examples: tuple[str, ...] = field(default_factory=tuple)
    untrusted: bool = False
    private: bool = False
    outbound: Callable[[dict[str, Any]], str | None] | None = None
    writes_memory: Callable[[dict[str, Any]], bool] | None = None
    use_when: str = ""

    @property
    def full_description(self) -> str:
        """What the model reads of the tool: its use-when sentence, then the details."""
        return " ".join(part for part in (self.use_when, self.description) if part)

    def schema(self) -> dict[str, Any]:
        """The OpenAI/OpenRouter function-tool schema."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.full_description,
                "parameters": self.parameters,
            },
        }

    def command_arguments(self, text: str) -> dict[str, Any]:
        """Arguments from a command's text."""
        if self.parse_command is not None:
            return self.parse_command(text)
        text = text.strip()
        if text.startswith("{"):
            try:
                parsed = json.loads(text)
            except json.JSONDecodeError:
                parsed = None
            if isinstance(parsed, dict):
                return parsed
        required = self.parameters.get("required") or []
        props = self.parameters.get("properties", {})
        target = next(iter(required), None) or next(iter(props), None)
        if target is None or not text:
            return {}
        return {target: text}
