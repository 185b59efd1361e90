"""execute_tool: run the reply's tool calls and store each result as a message.

Plan, confirm, run, store, report: each call gets a verdict (run, ask, or the guard that
stopped it: a near-duplicate of a call already run this turn, a call beyond
``MAX_CALLS_PER_REPLY``); a call ``graph.routing.clearance`` holds back (the lethal
trifecta, a memory change after outside content) waits for ``Context.confirm`` and is
declined without a yes. Runnable calls run concurrently through
``ToolRegistry.execute`` (which never raises). Every call, guarded ones included, is
stored with its family's role, its raw result in ``meta``; ``ToolStart``/``ToolEnd``
go out for fresh calls. Returns the executed calls (each with a one-line ``gist`` of
what it found, for the answer after a guard), one loop more and the trace; the edge
after it (``graph.routing.after_tools``) decides whether the loop cap is reached.
See docs/tools.md.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
import uuid
from dataclasses import dataclass, replace
from typing import Any, Literal, TypedDict

from langchain_core.callbacks import AsyncCallbackManager
from langchain_core.runnables import ensure_config
from langgraph.runtime import Runtime

from graph.commands import call_signature
from graph.context import Context
from graph.events import ConfirmationAsked, ConfirmationDecided, Decision, ToolEnd, ToolStart
from graph.routing import MAX_CALLS_PER_REPLY, ToolKinds, capped, clearance, fresh_calls
from graph.state import ExecutedCall, State, ToolCall, TraceEvent
from memory import Message
from prompts.templates import confirmation_question, not_confirmed
from tools.registry import MALFORMED_ARGUMENTS, log_tool_error

log = logging.getLogger("companion.execute_tool")

DUPLICATE_RESULT = (
    "duplicate call: {name} already ran this turn with these arguments; use that result"
)
OVER_CAP_RESULT = (
    "not run: at most {cap} tool calls run per reply and this was call {number}; "
    "make it in a later reply if it is still needed"
)
STORED_WITHOUT = ("image_base64",)  # large payloads kept out of the stored meta
MAX_META_CHARS = 32_000  # a result or arguments bigger than this is stored as a preview
PREVIEW_CHARS = 2_000
PROPOSED_KEYS = ("sql", "key")  # the argument a memory change is about (with its value)
GIST_CHARS = 240
GIST_SOURCE_CHARS = 4_000  # of a formatted result, read for its gist
URL_LINE = re.compile(r"^\s*https?://\S+\s*$")
NUMBERING = re.compile(r"^\s*\d{1,3}[.)]\s+")


def meta_sized(value: dict[str, Any]) -> dict[str, Any]:
    """``value`` itself when its JSON is small, else a marked preview of it.

    Every tool result's raw form lands in ``messages.meta``; one huge result must not
    grow the database by megabytes (the text the model sees is capped separately).
    """
    text = json.dumps(value, ensure_ascii=False, default=str)
    if len(text) <= MAX_META_CHARS:
        return value
    return {"truncated": True, "chars": len(text), "preview": text[:PREVIEW_CHARS]}


Verdict = Literal["run", "ask", "declined", "duplicate", "over_cap"]


@dataclass(frozen=True)
class Outcome:
    """One call of the reply: whether it runs (or waits for the person's yes, or which
    guard stopped it), its result, and the question it needed, if any."""

    call: ToolCall
    verdict: Verdict
    result: dict[str, Any]  # the tool's result, or the guard's error note
    ms: float = 0.0
    asked: ConfirmationAsked | None = None
    decision: Decision | None = None

    @property
    def fresh(self) -> bool:
        """True for a call not made before this turn (it ran, or the person did not allow it)."""
        return self.verdict in ("run", "declined")


class ToolUpdate(TypedDict):
    """What execute_tool changes: the calls that ran, one loop more, the trace."""

    executed: list[ExecutedCall]
    calls: list[ToolCall]
    loops: int
    trace: list[TraceEvent]


async def execute_tool(state: State, runtime: Runtime[Context]) -> ToolUpdate:
    """Run fresh calls (once allowed, where they must be), store every result (guarded
    calls get an error note), loop back."""
    ctx = runtime.context
    plan = await _confirm(_plan(state, ctx), runtime)
    outcomes = await _run_all(plan, state, runtime)
    group = uuid.uuid4().hex[:10]
    stored = [await _store(ctx, state["session_id"], outcome, group) for outcome in outcomes]
    return _report(outcomes, stored, state, runtime)


def _plan(state: State, ctx: Context) -> list[Outcome]:
    """Each call's verdict, in the reply's order; guarded calls get their error note now."""
    calls = state.get("calls") or []
    allowed, _ = capped(calls)
    fresh = {c["id"] for c in fresh_calls(allowed, state.get("executed") or [])}
    kinds = ToolKinds(private=ctx.registry.private, outside=ctx.registry.untrusted)
    plan = []
    for number, call in enumerate(calls, start=1):
        if number > len(allowed):
            note = OVER_CAP_RESULT.format(cap=MAX_CALLS_PER_REPLY, number=number)
            plan.append(Outcome(call, "over_cap", {"error": note}))
        elif call["id"] not in fresh:
            plan.append(
                Outcome(call, "duplicate", {"error": DUPLICATE_RESULT.format(name=call["name"])})
            )
        elif (asked := _question(call, state, ctx, kinds)) is not None:
            plan.append(Outcome(call, "ask", {}, asked=asked))
        else:
            plan.append(Outcome(call, "run", {}))
    return plan


def _question(
    call: ToolCall, state: State, ctx: Context, kinds: ToolKinds
) -> ConfirmationAsked | None:
    """What to ask the person before this call runs, or None when it may run as it is."""
    if call["raw_args"] is not None:
        return None  # it cannot run at all: its arguments are not valid JSON
    name, args = call["name"], call["args"]
    sent = ctx.registry.outbound(name, args)
    writes = ctx.registry.writes_memory(name, args)
    verdict = clearance(state, kinds, outbound=sent is not None, writes=writes)
    if verdict == "run":
        return None
    kind: Literal["outbound", "memory"] = "outbound" if verdict == "confirm" else "memory"
    shown = sent if sent is not None and kind == "outbound" else _proposed(args)
    question = confirmation_question(kind, name)
    return ConfirmationAsked(uuid.uuid4().hex, call["id"], name, kind, question, shown)


def _proposed(args: dict[str, Any]) -> str:
    """A memory change as the person reads it: "key: value", the SQL, or the arguments."""
    key = next((k for k in PROPOSED_KEYS if isinstance(args.get(k), str)), None)
    if key is None:
        return json.dumps(args, ensure_ascii=False)
    value = args.get("value")
    return f"{args[key]}: {value}" if key == "key" and value is not None else str(args[key])


async def _confirm(plan: list[Outcome], runtime: Runtime[Context]) -> list[Outcome]:
    """Ask the person about each call that waits for them, one at a time: allowed, it
    runs; otherwise it is declined with a note saying why."""
    return [
        await _ask(outcome, outcome.asked, runtime)
        if outcome.verdict == "ask" and outcome.asked is not None
        else outcome
        for outcome in plan
    ]


async def _ask(outcome: Outcome, asked: ConfirmationAsked, runtime: Runtime[Context]) -> Outcome:
    confirm = runtime.context.confirm
    runtime.stream_writer(asked)
    decision: Decision = "unasked"
    if confirm is not None:
        try:
            decision = await confirm(asked)
        except Exception:  # a broken way of asking declines; it does not end the turn
            log.exception("asking the person about %s failed; not run", asked.tool)
    runtime.stream_writer(ConfirmationDecided(asked.id, decision))
    if decision == "allowed":
        log.info("%s allowed by the person (%s)", asked.tool, asked.kind)
        return replace(outcome, verdict="run", decision=decision)
    log.warning("%s not run: %s (%s)", asked.tool, decision, asked.kind)
    note = not_confirmed(decision, asked.kind, asked.tool, asked.sent)
    return replace(outcome, verdict="declined", result={"error": note}, decision=decision)


async def _run_all(plan: list[Outcome], state: State, runtime: Runtime[Context]) -> list[Outcome]:
    """Announce every fresh call, then run the runnable ones concurrently."""
    for outcome in plan:
        if outcome.fresh:
            call = outcome.call
            runtime.stream_writer(
                ToolStart(call["id"], call["name"], call["args"], call["command"])
            )
    runnable = [outcome for outcome in plan if outcome.verdict == "run"]
    ran = iter(await asyncio.gather(*(_run(o, runtime.context, state) for o in runnable)))
    return [next(ran) if outcome.verdict == "run" else outcome for outcome in plan]


async def _run(outcome: Outcome, ctx: Context, state: State) -> Outcome:
    started = time.perf_counter()
    call = outcome.call
    tools = ctx.tool_context(state["session_id"], state["user_message_id"])
    if call["raw_args"] is not None:
        detail = f"not valid JSON: {call['raw_args'][:200]!r}"
        result: dict[str, Any] = {
            "error": MALFORMED_ARGUMENTS.format(name=call["name"], detail=detail)
        }
        log_tool_error(call["name"], tools, "malformed_arguments", result["error"])
    else:
        result = await _traced(call["name"], call["args"], ctx, tools)
    return replace(outcome, result=result, ms=(time.perf_counter() - started) * 1000)


async def _traced(name: str, args: dict[str, Any], ctx: Context, tools: Any) -> dict[str, Any]:
    """Run one tool of the registry as a LangChain tool run named after it and tagged
    ``tool:<name>``, under this node's run: a tracer (LANGSMITH_TRACING) shows each call
    with its arguments and result. Nothing more happens when nothing traces."""
    config = ensure_config()  # this node's: its callbacks, tags and metadata
    manager = AsyncCallbackManager.configure(
        config.get("callbacks"),
        inheritable_tags=config.get("tags"),
        local_tags=[f"tool:{name}"],
        inheritable_metadata=config.get("metadata"),
    )
    if not manager.handlers:
        return await ctx.registry.execute(name, args, tools)
    run = await manager.on_tool_start({"name": name}, json.dumps(args), name=name, inputs=args)
    try:
        result = await ctx.registry.execute(name, args, tools)
    except BaseException as error:
        await run.on_tool_error(error)
        raise
    await run.on_tool_end(result)
    return result


async def _store(ctx: Context, session_id: str, outcome: Outcome, group: str) -> Message:
    """Store one call's result (or guard note) as a tool message of its family's role."""
    call, result = outcome.call, outcome.result
    meta: dict[str, Any] = {
        "arguments": meta_sized(call["args"]),
        "result": _stored_result(result),
        "command": call["command"],
        "native": call["native"],
        "call_group": group,
        "duration_ms": round(outcome.ms, 2),
    }
    if outcome.verdict == "duplicate":
        meta["duplicate"] = True  # the chat hides it: the earlier result is the one shown
    if outcome.asked is not None:  # the chat shows the question and the answer again
        asked = outcome.asked
        meta["confirmation"] = {
            "kind": asked.kind,
            "question": asked.question,
            "sent": asked.sent,
            "decision": outcome.decision,
        }
    return await ctx.store.add_message(
        session_id,
        ctx.registry.role_of(call["name"]),
        ctx.registry.format_result(call["name"], result),
        tool_name=call["name"],
        tool_call_id=call["id"],
        meta=meta,
        image_path=result.get("image_path") if "error" not in result else None,
    )


def _stored_result(result: dict[str, Any]) -> dict[str, Any]:
    """A result as kept in the message's meta: no large payloads, a preview if huge."""
    return meta_sized({k: v for k, v in result.items() if k not in STORED_WITHOUT})


def gist(ctx: Context, name: str, result: dict[str, Any]) -> str:
    """What a call found, or its error, on one clipped line a person can read: its tool's
    own formatting without a heading line, list numbers or bare links."""
    spec = ctx.registry.get(name)
    text = str(result["error"]) if "error" in result else None
    if text is None and spec is not None:
        try:
            text = spec.format(result)
        except Exception:  # the registry logged this formatter's failure when storing
            text = None
    if text is None:
        text = json.dumps(result, ensure_ascii=False, default=str)
    lines = [
        NUMBERING.sub("", line).strip()
        for line in text[:GIST_SOURCE_CHARS].splitlines()
        if line.strip() and not URL_LINE.match(line)
    ]
    if len(lines) > 1 and lines[0].endswith(":"):
        lines = lines[1:]  # a heading ("Results for …:")
    line = " ".join(" — ".join(lines).split())
    return line if len(line) <= GIST_CHARS else f"{line[: GIST_CHARS - 1]}…"


def _report(
    outcomes: list[Outcome], stored: list[Message], state: State, runtime: Runtime[Context]
) -> ToolUpdate:
    """The calls that ran, ``ToolEnd`` for each, and the trace of this loop."""
    executed: list[ExecutedCall] = []
    trace: list[TraceEvent] = []
    over_cap = [o.call["name"] for o in outcomes if o.verdict == "over_cap"]
    if over_cap:
        detail = {"cap": MAX_CALLS_PER_REPLY, "not_run": over_cap}
        trace.append({"kind": "guard", "name": "calls_over_cap", "detail": detail})
    for outcome, message in zip(outcomes, stored, strict=True):
        call = outcome.call
        if outcome.verdict == "duplicate":
            detail = {"tool": call["name"], "args": call["args"]}
            trace.append({"kind": "guard", "name": "duplicate_skipped", "detail": detail})
        if outcome.asked is not None:
            asked = outcome.asked
            detail = {
                "tool": call["name"],
                "kind": asked.kind,
                "sent": asked.sent,
                "decision": outcome.decision,
            }
            trace.append({"kind": "guard", "name": "confirmation", "detail": detail})
        if not outcome.fresh:
            continue
        ok = "error" not in outcome.result
        signature = call_signature(call["name"], call["args"])
        found = gist(runtime.context, call["name"], outcome.result)
        executed.append(
            ExecutedCall(
                name=call["name"], signature=signature, ok=ok, message_id=message.id, gist=found
            )
        )
        ms = round(outcome.ms, 2)
        result = message.meta["result"]
        runtime.stream_writer(
            ToolEnd(
                call["id"], call["name"], call["args"], call["command"], ok, ms, result, message.id
            )
        )
        detail = {"args": call["args"], "ok": ok, "result": str(result)[:300]}
        trace.append({"kind": "tool", "name": call["name"], "ms": ms, "detail": detail})
    loops = (state.get("loops") or 0) + 1
    ran = sum(outcome.verdict == "run" for outcome in outcomes)
    detail = {"loop": loops, "calls": len(outcomes), "ran": ran}
    trace.append({"kind": "node", "name": "execute_tool", "detail": detail})
    return ToolUpdate(executed=executed, calls=[], loops=loops, trace=trace)
