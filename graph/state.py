"""The graph's state: one user turn's working memory (the store keeps the history).

The prompt (``context``) and the replayed history behind it (``history``) are LangGraph
``UntrackedValue`` channels: they live for the run and are never checkpointed, so a
checkpointer stores the turn's decisions, not megabytes of prompt and base64 images
at every step. Consequence for time travel: resume from a checkpoint taken before
build_context, which rebuilds both from the store. So is each model call's prompt as sent
(``prompts``, kept with the answer for the Graph tab by ``graph.runner``).
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from typing import Annotated, Any, Literal, TypedDict, get_type_hints

from langchain_core.messages import BaseMessage
from langgraph.channels.untracked_value import UntrackedValue

MAX_TOOL_LOOPS = 3


class ToolCall(TypedDict):
    """A call the model asked for, natively or by a slash command."""

    id: str
    name: str
    args: dict[str, Any]
    raw_args: str | None  # the unparsed argument text when it was not valid JSON
    command: str | None  # the command line, for command calls
    native: bool


class ExecutedCall(TypedDict):
    """A call that ran this turn, kept for the duplicate guard, the trace and the answer
    after a guard (``gist``)."""

    name: str
    signature: str
    ok: bool
    message_id: int
    gist: str  # what it found (or its error), one clipped line of its formatted result


class TraceEvent(TypedDict, total=False):
    """One line of the turn's trace (Graph tab): a node, a model call, a tool, a guard (a
    guard edge that fired is named: ``loop_cap``, ``repeat``)."""

    kind: Literal["node", "model", "tool", "guard", "error"]
    name: str
    ms: float
    detail: dict[str, Any]


class SentPrompt(TypedDict):
    """What one model call was sent (the Graph tab shows it): each message, clipped, and
    the tool schemas offered (none in commands mode: the protocol is in the system text)."""

    model: str | None
    messages: list[dict[str, Any]]  # {"role", "text", and "calls" / "images" when there}
    tools: list[dict[str, Any]]  # the schemas, as the provider got them


class State(TypedDict, total=False):
    """State of one turn. Lists with reducers grow; the rest is replaced by each node."""

    session_id: str  # the conversation
    user_message_id: int  # the stored user message this turn answers
    # what the model sees next, built by build_context (never checkpointed)
    context: Annotated[list[BaseMessage], UntrackedValue]
    # the session before this turn, replayed once in chat form (never checkpointed)
    history: Annotated[list[BaseMessage] | None, UntrackedValue]
    # names of tools offered to the model on the next call: those whose gate was open at
    # the turn's first build_context (gates run once per turn), none after a guard edge
    tools: list[str]
    # tools whose results are in the replayed history window (set by the first
    # build_context): outside content or private data the model still reads this turn
    window_tools: list[str]
    memories_shown: bool  # the system prompt carries "Your current memories" (private)
    # why tools are off for the next call: set by the node a guard edge leads to
    # (graph.routing: loop_cap, repeat); build_context renders it, route then ends the turn
    no_tools_reason: str | None
    model_role: Literal["chat", "vision"]  # which model the next call uses
    calls: list[ToolCall]  # calls in the model's latest reply, not yet run
    loops: int  # tool loops run so far this turn
    executed: Annotated[list[ExecutedCall], operator.add]  # calls run this turn
    answer: str | None  # the final answer text, once there is one
    answer_message_id: int | None  # where that answer is stored
    error: str | None  # a provider failure that ended the turn
    trace: Annotated[list[TraceEvent], operator.add]  # the turn's path, for the Graph tab
    # each model call's prompt as sent, in order (never checkpointed: it is the context)
    prompts: Annotated[list[SentPrompt], UntrackedValue]


# the keys whose channel adds each update to what it holds (an ``operator.add`` reducer)
GROWING = frozenset(
    key
    for key, hint in get_type_hints(State, include_extras=True).items()
    if operator.add in getattr(hint, "__metadata__", ())
)


def fold(state: dict[str, Any], update: Mapping[str, Any] | None) -> None:
    """Apply one node's update to ``state`` as the graph's channels do: a ``GROWING`` key
    grows by the update's list, any other key is replaced. The runner follows the turn
    from its nodes' updates this way (stream mode "updates"), not from a copy of the
    whole state after every step ("values"), which costs about 0.2 ms a step."""
    for key, value in (update or {}).items():
        if key in GROWING:
            state[key] = [*(state.get(key) or []), *value]
        else:
            state[key] = value
