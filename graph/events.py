"""What a turn tells its consumers (chat tab, CLI, evals) as it runs: one dataclass per kind.

``graph.runner.stream_turn`` yields them in this order: ``UserStored`` (the message is in
the store), then per model call any number of ``TextDelta`` and one ``ModelDone``, per
tool call a ``ToolStart`` and a ``ToolEnd``, a ``TurnError`` if the turn failed (or
``TurnStopped`` if the person stopped it, ``graph.turns``), and always one ``Answer``
last. The nodes write ``TextDelta``, ``ModelDone``, ``ToolStart`` and ``ToolEnd`` to
LangGraph's custom stream themselves; consumers dispatch on the type (``match`` /
``isinstance``), never on a name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from graph.state import ExecutedCall, TraceEvent
from memory.store import Message


@dataclass(frozen=True, slots=True)
class UserStored:
    """The user's message is stored; the turn has begun."""

    message: Message


@dataclass(frozen=True, slots=True)
class TextDelta:
    """More visible text of the model call now streaming (a command line never shows)."""

    text: str


@dataclass(frozen=True, slots=True)
class ModelDone:
    """The model call finished: the text streamed so far for it is complete."""


@dataclass(frozen=True, slots=True)
class ToolStart:
    """A tool call started running."""

    call_id: str
    name: str
    args: dict[str, Any]
    command: str | None  # the command line, for a slash-command call


@dataclass(frozen=True, slots=True)
class ToolEnd:
    """A tool call finished; its result is stored as message ``message_id``."""

    call_id: str
    name: str
    args: dict[str, Any]
    command: str | None
    ok: bool
    duration_ms: float
    result: dict[str, Any]  # the raw result as stored in the message's meta
    message_id: int


@dataclass(frozen=True, slots=True)
class TurnError:
    """The turn failed (provider failure, refused message); ``Answer`` still follows."""

    detail: str


@dataclass(frozen=True, slots=True)
class TurnStopped:
    """The person stopped the turn (``graph.turns``): what it wrote so far is stored as
    message ``message_id``, marked stopped; ``Answer`` follows with that text."""

    message_id: int | None  # None when it was stopped before its message was stored


@dataclass(frozen=True, slots=True)
class Answer:
    """The turn's final answer, always the last event."""

    text: str
    message_id: int | None  # where the answer is stored; None when nothing was stored
    executed: list[ExecutedCall]  # the calls that ran, in order
    trace: list[TraceEvent]  # the turn's path, for the Graph tab


TurnEvent = (
    UserStored | TextDelta | ModelDone | ToolStart | ToolEnd | TurnError | TurnStopped | Answer
)
