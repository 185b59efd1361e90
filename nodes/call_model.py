"""call_model: one model call with the context build_context prepared.

The chat model answers, or the vision model right after an image tool; everything else
(system prompt, history, tool schemas) is identical. The reply is parsed into tool calls
(native, or a slash command on its first line — commands take precedence), the command
line is stripped, and any remaining text is stored. After a guard edge (tools off) the
reply is the answer whatever it attempted: a command in it is dropped, and a reply left
empty becomes ``found_so_far``, built from this turn's results (never ``EMPTY_ANSWER``).
A provider failure ends the turn with a clear assistant-side message; the user's message
is already stored. While the reply streams, its visible text goes out as ``TextDelta``
events (a command line never shows), and ``ModelDone`` follows when the call is over,
whatever its outcome. Each call adds its prompt as sent to ``prompts`` (each message
clipped to ``MAX_PROMPT_CHARS``, images counted, not kept) and its token counts, when the
provider reports them, to its trace entry: the Graph tab shows both.
"""

from __future__ import annotations

import json
import logging
import time
from contextlib import aclosing
from typing import Any, TypedDict

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.messages.utils import message_chunk_to_message
from langgraph.runtime import Runtime

from config.settings import NO_CHAT_MODEL
from graph.commands import Commands, parse_reply, visible_prefix
from graph.context import Context
from graph.events import ModelDone, TextDelta
from graph.state import ExecutedCall, SentPrompt, State, ToolCall, TraceEvent
from nodes.repeats import loop_start
from prompts.templates import (
    EMPTY_ANSWER,
    FOUND_SO_FAR,
    INTERNAL_ERROR,
    KEY_REFUSED,
    MODEL_ERROR,
    NO_TOOL_RAN,
    NOT_FOUND,
    NOT_SET_UP,
    NOTHING_FOUND,
    REQUEST_REFUSED,
    STREAM_CUT,
    fill,
    language_of,
)
from providers import (
    ErrorKind,
    ProviderError,
    describe_provider_error,
    is_provider_error,
    provider_error_kind,
)

log = logging.getLogger("companion.call_model")

STREAM_CUT_DETAIL = "the connection dropped in the middle of the answer"
MAX_FINDINGS = 3  # results quoted by found_so_far
MAX_PROMPT_CHARS = 4_000  # of each message of a prompt, as the Graph tab keeps it
IMAGE_PARTS = ("image_url", "image")
# The advice for each cause: only a transient failure says "try again in a moment".
ADVICE: dict[ErrorKind, str] = {
    "key": KEY_REFUSED,
    "not_found": NOT_FOUND,
    "refused": REQUEST_REFUSED,
    "setup": NOT_SET_UP,
    "transient": MODEL_ERROR,
}


class ModelUpdate(TypedDict, total=False):
    """What call_model changes: the reply's calls, and the answer when it is final."""

    calls: list[ToolCall]
    answer: str
    answer_message_id: int
    error: str
    trace: list[TraceEvent]
    prompts: list[SentPrompt]


def _text(message: AIMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(
        part.get("text", "") if isinstance(part, dict) else str(part) for part in content
    )


def clipped(text: str, limit: int = MAX_PROMPT_CHARS) -> str:
    """``text``, cut to ``limit`` characters (the cut marked with "…")."""
    return text if len(text) <= limit else f"{text[: limit - 1]}…"


def _sent_message(message: BaseMessage) -> dict[str, Any]:
    """One message of a prompt as kept: its role and text; the calls of an AI message,
    the tool a result answers, and how many images it carried (never their bytes)."""
    parts = message.content if isinstance(message.content, list) else [message.content]
    texts = [p if isinstance(p, str) else str(p.get("text", "")) for p in parts]
    images = sum(isinstance(p, dict) and p.get("type") in IMAGE_PARTS for p in parts)
    sent: dict[str, Any] = {"role": message.type, "text": clipped("".join(texts))}
    if isinstance(message, AIMessage) and message.tool_calls:
        sent["calls"] = [
            {"name": c["name"], "args": clipped(json.dumps(c["args"], ensure_ascii=False))}
            for c in message.tool_calls
        ]
    if isinstance(message, ToolMessage):
        sent["tool"] = message.name or ""
    if images:
        sent["images"] = images
    return sent


def offered_schemas(state: State, ctx: Context) -> list[dict[str, Any]]:
    """The tool schemas sent with the call: those of the tools offered, in native mode."""
    if ctx.settings.tool_mode != "native" or not state.get("tools"):
        return []
    return [s.schema() for n in state["tools"] if (s := ctx.registry.get(n))]


def sent_prompt(state: State, ctx: Context, model: str | None) -> SentPrompt:
    """The prompt of this call as the provider gets it (clipped): its messages and tools."""
    return {
        "model": model,
        "messages": [_sent_message(m) for m in state.get("context") or []],
        "tools": offered_schemas(state, ctx),
    }


def token_counts(reply: AIMessage) -> dict[str, int] | None:
    """Tokens in and out of a reply, when the provider reported them."""
    usage = reply.usage_metadata
    if not usage:
        return None
    return {"input": usage.get("input_tokens", 0), "output": usage.get("output_tokens", 0)}


def reply_commands(ctx: Context) -> Commands:
    """The commands a reply may start with: each registered tool's command and name."""
    specs = [s for n in ctx.registry.names if (s := ctx.registry.get(n))]
    return Commands.of(
        (name for s in specs for name in (s.command or s.name, s.name)),
        (name for s in specs if s.multiline for name in (s.command or s.name, s.name)),
    )


def reply_calls(message: AIMessage, ctx: Context) -> tuple[list[ToolCall], str]:
    """The tool calls a reply asks for, and the text left to show."""
    parsed = parse_reply(_text(message), reply_commands(ctx))
    if parsed.command is not None:
        command = parsed.command
        spec = ctx.registry.by_command(command.name)
        name = spec.name if spec else command.name
        args = spec.command_arguments(command.text) if spec else {"text": command.text}
        call = ToolCall(
            id=f"cmd_{message.id or int(time.time() * 1000)}",
            name=name,
            args=args,
            raw_args=None,
            command=command.line,
            native=False,
        )
        return [call], parsed.text
    calls = [
        ToolCall(
            id=c.get("id") or f"call_{i}",
            name=c["name"],
            args=c.get("args") or {},
            raw_args=None,
            command=None,
            native=True,
        )
        for i, c in enumerate(message.tool_calls)
    ]
    calls += [
        ToolCall(
            id=c.get("id") or f"bad_{i}",
            name=c.get("name") or "unknown",
            args={},
            raw_args=c.get("args") or "",
            command=None,
            native=True,
        )
        for i, c in enumerate(message.invalid_tool_calls)
    ]
    return calls, parsed.text


async def stream_reply(
    runnable: Any,
    messages: list[BaseMessage],
    runtime: Runtime[Context] | None,
    *,
    end_loops: bool = False,
) -> AIMessage:
    """Stream the model's reply, passing its visible text on as ``TextDelta`` events
    (none without a ``runtime``: a run that asked for no live progress). With
    ``end_loops`` (the bundled model), a reply that says one sentence a second time is
    ended there and keeps its text up to where the repeating began (``nodes.repeats``).

    Both ways read the model the same way, so an empty or unparseable stream is always
    the provider's ``ProviderError``, never a bare ValueError from deep in langchain.

    Text travels as custom stream events, not through LangGraph's "messages" stream
    mode: that mode hooks every node's callbacks and re-emits every message a node
    returns (the whole context build_context assembles), a per-turn cost that grows with
    the history. A first line that may be a command is held back until it is complete.
    """
    chunks: list[Any] = []
    written = ""  # the raw text so far
    shown = 0  # how much of its visible part went out
    commands = reply_commands(runtime.context) if runtime is not None else Commands.of(())
    loop_at: int | None = None
    try:
        async with aclosing(runnable.astream(messages)) as stream:
            async for chunk in stream:
                chunks.append(chunk)
                if not isinstance(chunk.content, str) or not chunk.content:
                    continue
                written += chunk.content
                if end_loops:
                    loop_at = loop_start(written, chunk.content)
                    if loop_at is not None:
                        break  # closing the stream ends the request
                visible = visible_prefix(written, commands)
                if len(visible) > shown and runtime is not None:
                    runtime.stream_writer(TextDelta(visible[shown:]))
                    shown = len(visible)
    except ValueError as exc:
        # langchain raises a bare ValueError when the provider's stream held no chunk it
        # could parse (an empty or malformed body): that is the provider's failure.
        if chunks:
            raise
        raise ProviderError(f"the model sent no reply it could read ({exc})") from exc
    if not chunks:
        raise ProviderError("the model returned an empty stream")
    merged = chunks[0] + chunks[1:] if len(chunks) > 1 else chunks[0]
    reply = message_chunk_to_message(merged)
    assert isinstance(reply, AIMessage)
    if loop_at is not None:
        metadata = {**reply.response_metadata, "finish_reason": "repeating"}
        reply = reply.model_copy(
            update={"content": written[:loop_at].rstrip(), "response_metadata": metadata}
        )
    return reply


async def _failed(
    ctx: Context,
    session_id: str,
    model: str | None,
    started: float,
    detail: str,
    partial: str = "",
    *,
    internal: bool = False,
    kind: ErrorKind = "transient",
) -> ModelUpdate:
    """End the turn on a failure: a clear assistant-side message, stored.

    ``internal`` marks a bug in Companion's own code, which is never reported as the
    provider's failure; ``kind`` picks the advice that matches the provider's failure.
    """
    if internal:
        text = INTERNAL_ERROR.format(detail=detail, log=ctx.settings.log_file)
    elif partial:
        text = STREAM_CUT.format(partial=partial)
    else:
        text = ADVICE[kind].format(detail=detail)
    meta = {"error": True, "detail": detail, "model": model, "internal": internal}
    stored = await ctx.store.add_message(session_id, "assistant", text, meta=meta)
    ms = round((time.perf_counter() - started) * 1000, 2)
    return {
        "calls": [],
        "answer": text,
        "answer_message_id": stored.id,
        "error": detail,
        "trace": [
            {
                "kind": "error",
                "name": "call_model",
                "ms": ms,
                "detail": {"model": model, "error": detail},
            }
        ],
    }


def found_so_far(executed: list[ExecutedCall], asked: str = "") -> str:
    """The answer after a guard when the model's reply held nothing else: what this
    turn's tools found (the first ``MAX_FINDINGS`` different ones, in the person's
    terms: no tool names), or why none found anything; in the language of ``asked``
    (the person's message)."""
    language = language_of(asked)
    ok = [e for e in executed if e["ok"]]
    gists = dict.fromkeys(g for e in ok or executed if (g := e.get("gist", "").rstrip(".")))
    findings = "; ".join(list(gists)[:MAX_FINDINGS]) or NO_TOOL_RAN[language]
    return fill((FOUND_SO_FAR if ok else NOTHING_FOUND)[language], findings=findings)


def asked_in(state: State) -> str:
    """The person's message of this turn: the replayed history ends with it ("" where it
    is not there, e.g. after a vision call's replay)."""
    history = state.get("history") or []
    message = history[-1] if history else None
    return message.text if isinstance(message, HumanMessage) else ""


def stream_was_cut(reply: AIMessage) -> bool:
    """An OpenAI-protocol stream that ended without a finish reason was cut short."""
    metadata = reply.response_metadata or {}
    return metadata.get("model_provider") == "openai" and not metadata.get("finish_reason")


async def call_model(state: State, runtime: Runtime[Context]) -> ModelUpdate:
    """Call the model once; store its visible text; hand tool calls to the router."""
    update = await _call(state, runtime)
    runtime.stream_writer(ModelDone())
    ctx = runtime.context
    if ctx.settings.chat_model:  # with none, nothing was sent
        sent = sent_prompt(state, ctx, _chosen(state, ctx)[1])
        update["prompts"] = [*(state.get("prompts") or []), sent]
    return update


def _chosen(state: State, ctx: Context) -> tuple[bool, str | None]:
    """Whether this call goes to the vision model (right after an image tool, when one is
    set), and the name of the model it goes to."""
    vision = state.get("model_role") == "vision" and ctx.vision_model is not None
    return vision, ctx.settings.vision_model if vision else ctx.settings.chat_model


async def _call(state: State, runtime: Runtime[Context]) -> ModelUpdate:
    ctx = runtime.context
    settings = ctx.settings
    vision, name = _chosen(state, ctx)
    model = ctx.vision_model if vision and ctx.vision_model else ctx.chat_model
    tools_off = bool(state.get("no_tools_reason"))
    runnable: Any = model
    schemas = offered_schemas(state, ctx)
    if schemas:
        runnable = model.bind_tools(schemas, tool_choice="auto")
    role = "vision" if vision else "chat"
    runnable = runnable.with_config(run_name=f"{role} model", tags=[f"model:{role}"])
    started = time.perf_counter()
    session_id = state["session_id"]
    if not settings.chat_model:  # no hidden default: say what to choose, call nothing
        return await _failed(ctx, session_id, None, started, NO_CHAT_MODEL, kind="setup")
    try:
        live = runtime if ctx.stream_tokens else None
        reply = await stream_reply(runnable, state["context"], live, end_loops=settings.is_local)
    except Exception as exc:
        if not is_provider_error(exc):
            log.exception("call_model: a bug in Companion, not a provider failure")
            detail = f"{type(exc).__name__}: {exc}"[:200]
            return await _failed(ctx, session_id, name, started, detail, internal=True)
        log.exception("call_model: the provider failed (%s)", name)
        detail, kind = describe_provider_error(exc), provider_error_kind(exc)
        return await _failed(ctx, session_id, name, started, detail, kind=kind)
    if not isinstance(reply, AIMessage):
        reply = AIMessage(content=str(getattr(reply, "content", reply)))
    if stream_was_cut(reply):
        partial = _text(reply).strip()
        return await _failed(ctx, session_id, name, started, STREAM_CUT_DETAIL, partial)
    ms = round((time.perf_counter() - started) * 1000, 2)
    calls, text = reply_calls(reply, ctx)
    final = not calls or tools_off
    # After an image tool the image is the answer: an empty reply is valid, not a lapse.
    silent = final and not text and state.get("model_role") == "vision"
    summarised = final and not text and not silent and tools_off
    if final and not text and not silent:
        executed = state.get("executed") or []
        text = found_so_far(executed, asked_in(state)) if tools_off else EMPTY_ANSWER
    update = ModelUpdate(calls=calls)
    if text or silent:
        meta: dict[str, Any] = {"model": name, "model_role": "vision" if vision else "chat"}
        if not final:
            meta["intermediate"] = True
        if summarised:
            meta["found_so_far"] = True
        if silent:
            meta["after_image"] = True
        usage = getattr(reply, "usage_metadata", None)
        if usage:
            meta["usage"] = dict(usage)
        stored = await ctx.store.add_message(session_id, "assistant", text, meta=meta)
        if final:
            update["answer"], update["answer_message_id"] = text, stored.id
    update["trace"] = [
        {
            "kind": "model",
            "name": "call_model",
            "ms": ms,
            "detail": {
                "model": name,
                "model_role": "vision" if vision else "chat",
                "tools_offered": list(state.get("tools") or []) if not tools_off else [],
                "dropped": tools_off and bool(calls),
                "calls": [
                    {"name": c["name"], "args": c["args"], "command": c["command"]} for c in calls
                ],
                "text": text[:200],
                "raw": json.dumps(_text(reply))[:300],
                "tokens": token_counts(reply),
            },
        }
    ]
    return update
