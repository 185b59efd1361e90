"""execute_tool: run the reply's tool calls and store each result as a message.

Calls of one reply run concurrently through ``ToolRegistry.execute`` (which never
raises: an error becomes the result). Each result is stored with its tool family's role
in the ``🔧 TOOL RESULT — NAME`` format, the raw result in ``meta``. Guards, each
answered with an error result the model reads: a near-duplicate of a call already run
this turn is not run again; calls beyond ``MAX_CALLS_PER_REPLY`` in one reply are not
run; and once an untrusted tool (web_search, image_analyze) has brought outside content
into the turn, calls that would change memories or messages are refused for the rest of
the turn — the model asks the user, whose next message (a new turn) can confirm it.

The node is plan, run, store, report: ``_plan`` gives each call its verdict (run, or
which guard stopped it), ``_run_all`` announces the fresh calls (``ToolStart``) and runs
the runnable ones, ``_store`` writes every result (a duplicate is flagged
``meta["duplicate"]``), and ``_report`` sends ``ToolEnd`` for each fresh call and returns
the executed calls and the trace.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from dataclasses import dataclass
from typing import Any, Literal, TypedDict

from langgraph.runtime import Runtime

from graph.commands import call_signature
from graph.context import Context
from graph.events import ToolEnd, ToolStart
from graph.routing import MAX_CALLS_PER_REPLY, capped, fresh_calls, outside_source
from graph.state import ExecutedCall, State, ToolCall, TraceEvent
from memory.store import Message
from nodes.build_context import untrusted_tools
from tools.registry import MALFORMED_ARGUMENTS

log = logging.getLogger("companion.execute_tool")

DUPLICATE_RESULT = (
    "duplicate call: {name} already ran this turn with these arguments; use that result"
)
OVER_CAP_RESULT = (
    "not run: at most {cap} tool calls run per reply and this was call {number}; "
    "make it in a later reply if it is still needed"
)
MEMORY_PAUSED_RESULT = (
    "not run: memory changes are paused after reading outside content ({source}) in this "
    "turn; ask the user to confirm the change, and make it when they do"
)
STORED_WITHOUT = ("image_base64",)  # large payloads kept out of the stored meta
MAX_META_CHARS = 32_000  # a result or arguments bigger than this is stored as a preview
PREVIEW_CHARS = 2_000
GUARD_NAMES = {"duplicate": "duplicate_skipped", "paused": "memory_write_paused"}


def meta_sized(value: dict[str, Any]) -> dict[str, Any]:
    """``value`` itself when its JSON is small, else a marked preview of it.

    Every tool result's raw form lands in ``messages.meta``; one huge result must not
    grow the database by megabytes (the text the model sees is capped separately).
    """
    text = json.dumps(value, ensure_ascii=False, default=str)
    if len(text) <= MAX_META_CHARS:
        return value
    return {"truncated": True, "chars": len(text), "preview": text[:PREVIEW_CHARS]}


Verdict = Literal["run", "paused", "duplicate", "over_cap"]


@dataclass(frozen=True)
class Outcome:
    """One call of the reply: whether it ran (or which guard stopped it), and its result."""

    call: ToolCall
    verdict: Verdict
    result: dict[str, Any]  # the tool's result, or the guard's error note
    ms: float = 0.0

    @property
    def fresh(self) -> bool:
        """True for a call not made before this turn (it ran, or the memory pause got it)."""
        return self.verdict in ("run", "paused")


class ToolUpdate(TypedDict):
    """What execute_tool changes: the calls that ran, one loop more, the trace."""

    executed: list[ExecutedCall]
    calls: list[ToolCall]
    loops: int
    trace: list[TraceEvent]


async def execute_tool(state: State, runtime: Runtime[Context]) -> ToolUpdate:
    """Run fresh calls, store every result (guarded calls get an error note), loop back."""
    ctx = runtime.context
    outcomes = await _run_all(_plan(state, ctx), state, runtime)
    group = uuid.uuid4().hex[:10]
    stored = [await _store(ctx, state["session_id"], outcome, group) for outcome in outcomes]
    return _report(outcomes, stored, state, runtime)


def _plan(state: State, ctx: Context) -> list[Outcome]:
    """Each call's verdict, in the reply's order; guarded calls get their error note now."""
    calls = state.get("calls") or []
    allowed, _ = capped(calls)
    fresh = {c["id"] for c in fresh_calls(allowed, state.get("executed") or [])}
    paused = _paused_writes([c for c in allowed if c["id"] in fresh], state, ctx)
    plan = []
    for number, call in enumerate(calls, start=1):
        if number > len(allowed):
            note = OVER_CAP_RESULT.format(cap=MAX_CALLS_PER_REPLY, number=number)
            plan.append(Outcome(call, "over_cap", {"error": note}))
        elif call["id"] not in fresh:
            plan.append(
                Outcome(call, "duplicate", {"error": DUPLICATE_RESULT.format(name=call["name"])})
            )
        elif call["id"] in paused:
            plan.append(Outcome(call, "paused", {"error": paused[call["id"]]}))
        else:
            plan.append(Outcome(call, "run", {}))
    return plan


def _changes_memory(call: ToolCall, ctx: Context) -> bool:
    spec = ctx.registry.get(call["name"])
    return bool(spec and spec.writes_memory and spec.writes_memory(call["args"]))


def _paused_writes(calls: list[ToolCall], state: State, ctx: Context) -> dict[str, str]:
    """Error notes, by call id, for calls that would change memory after an earlier reply
    of this turn brought outside content in (a call in the same reply as the untrusted
    one was written before that content was read, so it runs)."""
    source = outside_source(state.get("executed") or [], untrusted_tools(ctx))
    if source is None:
        return {}
    paused = {}
    for call in calls:
        if call["raw_args"] is None and _changes_memory(call, ctx):
            log.warning(
                "%s refused: %s brought outside content into this turn", call["name"], source
            )
            paused[call["id"]] = MEMORY_PAUSED_RESULT.format(source=source)
    return paused


async def _run_all(plan: list[Outcome], state: State, runtime: Runtime[Context]) -> list[Outcome]:
    """Announce every fresh call, then run the runnable ones concurrently."""
    for outcome in plan:
        if outcome.fresh:
            call = outcome.call
            runtime.stream_writer(
                ToolStart(call["id"], call["name"], call["args"], call["command"])
            )
    runnable = [outcome for outcome in plan if outcome.verdict == "run"]
    ran = iter(await asyncio.gather(*(_run(o.call, runtime.context, state) for o in runnable)))
    return [next(ran) if outcome.verdict == "run" else outcome for outcome in plan]


async def _run(call: ToolCall, ctx: Context, state: State) -> Outcome:
    started = time.perf_counter()
    if call["raw_args"] is not None:
        detail = f"not valid JSON: {call['raw_args'][:200]!r}"
        result: dict[str, Any] = {
            "error": MALFORMED_ARGUMENTS.format(name=call["name"], detail=detail)
        }
    else:
        tools = ctx.tool_context(state["session_id"], state["user_message_id"])
        result = await ctx.registry.execute(call["name"], call["args"], tools)
    return Outcome(call, "run", result, (time.perf_counter() - started) * 1000)


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
        if outcome.verdict in GUARD_NAMES:
            detail = {"tool": call["name"], "args": call["args"]}
            trace.append({"kind": "guard", "name": GUARD_NAMES[outcome.verdict], "detail": detail})
        if not outcome.fresh:
            continue
        ok = "error" not in outcome.result
        signature = call_signature(call["name"], call["args"])
        executed.append(
            ExecutedCall(name=call["name"], signature=signature, ok=ok, message_id=message.id)
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
