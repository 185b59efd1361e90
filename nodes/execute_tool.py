"""execute_tool: run the reply's tool calls and store each result as a message.

Calls of one reply run concurrently through ``ToolRegistry.execute`` (which never
raises: an error becomes the result). Each result is stored with its tool family's role
in the ``🔧 TOOL RESULT — NAME`` format, the raw result in ``meta``. Guards, each
answered with an error result the model reads: a near-duplicate of a call already run
this turn is not run again; calls beyond ``MAX_CALLS_PER_REPLY`` in one reply are not
run; and once an untrusted tool (web_search, image_analyze) has brought outside content
into the turn, calls that would change memories or messages are refused for the rest of
the turn — the model asks the user, whose next message (a new turn) can confirm it.
Progress goes to the stream as custom events (``tool_start`` / ``tool_end``) so the UI
can show a pending step.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from typing import Any

from langgraph.runtime import Runtime

from graph.commands import call_signature
from graph.context import Context
from graph.routing import MAX_CALLS_PER_REPLY, capped, fresh_calls, outside_source
from graph.state import ExecutedCall, State, ToolCall
from nodes.build_context import tool_context, untrusted_tools
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


def meta_sized(value: dict[str, Any]) -> dict[str, Any]:
    """``value`` itself when its JSON is small, else a marked preview of it.

    Every tool result's raw form lands in ``messages.meta``; one huge result must not
    grow the database by megabytes (the text the model sees is capped separately).
    """
    text = json.dumps(value, ensure_ascii=False, default=str)
    if len(text) <= MAX_META_CHARS:
        return value
    return {"truncated": True, "chars": len(text), "preview": text[:PREVIEW_CHARS]}


def _emit(runtime: Runtime[Context], event: dict[str, Any]) -> None:
    try:
        runtime.stream_writer(event)
    except Exception:  # no stream consumer (plain ainvoke): progress events are optional
        return


async def _run(
    call: ToolCall, ctx: Context, session_id: str, user_id: int
) -> tuple[dict[str, Any], float]:
    started = time.perf_counter()
    if call["raw_args"] is not None:
        result: dict[str, Any] = {
            "error": MALFORMED_ARGUMENTS.format(
                name=call["name"], detail=f"not valid JSON: {call['raw_args'][:200]!r}"
            )
        }
    else:
        result = await ctx.registry.execute(
            call["name"], call["args"], tool_context(ctx, session_id, user_id)
        )
    return result, (time.perf_counter() - started) * 1000


def _changes_memory(call: ToolCall, ctx: Context) -> bool:
    spec = ctx.registry.get(call["name"])
    return bool(spec and spec.writes_memory and spec.writes_memory(call["args"]))


def _paused_writes(calls: list[ToolCall], state: State, ctx: Context) -> dict[str, dict[str, Any]]:
    """Error results, by call id, for calls that would change memory after an earlier
    reply of this turn brought outside content in (a call in the same reply as the
    untrusted one was written before that content was read, so it runs)."""
    source = outside_source(state.get("executed") or [], untrusted_tools(ctx))
    if source is None:
        return {}
    paused = {}
    for call in calls:
        if call["raw_args"] is None and _changes_memory(call, ctx):
            log.warning(
                "%s refused: %s brought outside content into this turn", call["name"], source
            )
            paused[call["id"]] = {"error": MEMORY_PAUSED_RESULT.format(source=source)}
    return paused


async def execute_tool(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Run fresh calls, store every result (guarded calls get an error note), loop back."""
    ctx = runtime.context
    session_id = state["session_id"]
    calls = state.get("calls") or []
    allowed, over_cap = capped(calls)
    over_ids = {c["id"] for c in over_cap}
    fresh = fresh_calls(allowed, state.get("executed") or [])
    fresh_ids = {c["id"] for c in fresh}
    paused = _paused_writes(fresh, state, ctx)
    group = uuid.uuid4().hex[:10]
    for call in fresh:
        _emit(
            runtime,
            {
                "type": "tool_start",
                "id": call["id"],
                "name": call["name"],
                "args": call["args"],
                "command": call["command"],
            },
        )
    runnable = [call for call in fresh if call["id"] not in paused]
    user_id = state["user_message_id"]
    outcomes = await asyncio.gather(*(_run(call, ctx, session_id, user_id) for call in runnable))
    by_id = {call["id"]: outcome for call, outcome in zip(runnable, outcomes, strict=True)}
    by_id.update({call_id: (result, 0.0) for call_id, result in paused.items()})

    executed: list[ExecutedCall] = []
    trace: list[dict[str, Any]] = []
    if over_cap:
        trace.append(
            {
                "kind": "guard",
                "name": "calls_over_cap",
                "detail": {"cap": MAX_CALLS_PER_REPLY, "not_run": [c["name"] for c in over_cap]},
            }
        )
    for number, call in enumerate(calls, start=1):
        if call["id"] in over_ids:
            result = {"error": OVER_CAP_RESULT.format(cap=MAX_CALLS_PER_REPLY, number=number)}
            ms = 0.0
        elif call["id"] in fresh_ids:
            result, ms = by_id[call["id"]]
            if call["id"] in paused:
                trace.append(
                    {
                        "kind": "guard",
                        "name": "memory_write_paused",
                        "detail": {"tool": call["name"], "args": call["args"]},
                    }
                )
        else:
            result, ms = {"error": DUPLICATE_RESULT.format(name=call["name"])}, 0.0
            trace.append(
                {
                    "kind": "guard",
                    "name": "duplicate_skipped",
                    "detail": {"tool": call["name"], "args": call["args"]},
                }
            )
        stored_result = meta_sized({k: v for k, v in result.items() if k not in STORED_WITHOUT})
        message = ctx.store.add_message(
            session_id,
            ctx.registry.role_of(call["name"]),
            ctx.registry.format_result(call["name"], result),
            tool_name=call["name"],
            tool_call_id=call["id"],
            meta={
                "arguments": meta_sized(call["args"]),
                "result": stored_result,
                "command": call["command"],
                "native": call["native"],
                "call_group": group,
                "duration_ms": round(ms, 2),
            },
            image_path=result.get("image_path") if "error" not in result else None,
        )
        if call["id"] in fresh_ids:
            ok = "error" not in result
            executed.append(
                ExecutedCall(
                    name=call["name"],
                    ok=ok,
                    message_id=message.id,
                    signature=call_signature(call["name"], call["args"]),
                )
            )
            _emit(
                runtime,
                {
                    "type": "tool_end",
                    "id": call["id"],
                    "name": call["name"],
                    "args": call["args"],
                    "command": call["command"],
                    "ok": ok,
                    "duration_ms": round(ms, 2),
                    "result": stored_result,
                    "message_id": message.id,
                },
            )
            trace.append(
                {
                    "kind": "tool",
                    "name": call["name"],
                    "ms": round(ms, 2),
                    "detail": {"args": call["args"], "ok": ok, "result": str(stored_result)[:300]},
                }
            )
    return {
        "executed": executed,
        "calls": [],
        "loops": (state.get("loops") or 0) + 1,
        "trace": trace,
    }
