"""What a turn tells its consumers (chat tab, CLI, evals) as it runs: one dataclass per kind.

``graph.runner.stream_turn`` yields them in this order: ``UserStored`` (the message is in
the store), then per model call any number of ``TextDelta`` and one ``ModelDone``, per
tool call a ``ToolStart`` and a ``ToolEnd`` — before them a ``ConfirmationAsked`` and its
``ConfirmationDecided`` when the call needs the person's yes (``graph.routing.clearance``)
— a ``TurnError`` if the turn failed (or ``TurnStopped`` if the person stopped it,
``app.turns``), and always one ``Answer`` last. The nodes write every event but the
first and the last two to LangGraph's custom stream themselves; consumers dispatch on the
type (``match`` / ``isinstance``), never on a name.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

from graph.state import ExecutedCall, TraceEvent
from memory import Message


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


Decision = Literal["allowed", "declined", "timed_out", "unasked"]
"""How a confirmation ended: the person allowed or declined it, nobody answered in time,
or there was nobody to ask (``companion chat -m``, evals by default)."""


@dataclass(frozen=True, slots=True)
class ConfirmationAsked:
    """A call waits for the person's yes: an outbound request that would complete the
    lethal trifecta, or a memory change proposed while outside content is in the context.
    ``sent`` is exactly what would leave the machine (the query, the URL) or be saved."""

    id: str  # names this question when the person answers it (``Turns.decide``)
    call_id: str
    tool: str
    kind: Literal["outbound", "memory"]
    question: str  # the words the person is asked, before ``sent``
    sent: str


Confirm = Callable[[ConfirmationAsked], Awaitable[Decision]]
"""How a turn asks the person (``Context.confirm``): the chat's Allow/Deny (``app.turns``),
the terminal's y/N, an eval case's policy."""


@dataclass(frozen=True, slots=True)
class ConfirmationDecided:
    """The person's answer to ``ConfirmationAsked`` ``id`` (or its absence)."""

    id: str
    decision: Decision

    @property
    def allowed(self) -> bool:
        """True when the call may run."""
        return self.decision == "allowed"


@dataclass(frozen=True, slots=True)
class TurnError:
    """The turn failed (provider failure, refused message); ``Answer`` still follows."""

    detail: str


@dataclass(frozen=True, slots=True)
class TurnStopped:
    """The person stopped the turn (``app.turns``): what it wrote so far is stored as
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
    UserStored
    | TextDelta
    | ModelDone
    | ConfirmationAsked
    | ConfirmationDecided
    | ToolStart
    | ToolEnd
    | TurnError
    | TurnStopped
    | Answer
)
