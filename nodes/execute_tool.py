"""execute_tool: run the reply's tool calls and store each result as a message.

Calls of one reply run concurrently through ``ToolRegistry.execute`` (which never
raises: an error becomes the result). Each result is stored with its tool family's role
in the ``🔧 TOOL RESULT — NAME`` format, the raw result in ``meta``; a near-duplicate of
a call already run this turn is not run again. Progress goes to the stream as custom
events (``tool_start`` / ``tool_end``) so the UI can show a pending step.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

from langgraph.runtime import Runtime

from graph.commands import call_signature
from graph.context import Context
from graph.routing import fresh_calls
from graph.state import ExecutedCall, State, ToolCall
from nodes.build_context import tool_context
from tools.registry import MALFORMED_ARGUMENTS

DUPLICATE_RESULT = (
    "duplicate call: {name} already ran this turn with these arguments; use that result"
)
STORED_WITHOUT = ("image_base64",)  # large payloads kept out of the stored meta


def _emit(runtime: Runtime[Context], event: dict[str, Any]) -> None:
    try:
        runtime.stream_writer(event)
    except Exception:  # no stream consumer (plain ainvoke): progress events are optional
        return


async def _run(call: ToolCall, ctx: Context, session_id: str) -> tuple[dict[str, Any], float]:
    started = time.perf_counter()
    if call["raw_args"] is not None:
        result: dict[str, Any] = {
            "error": MALFORMED_ARGUMENTS.format(
                name=call["name"], detail=f"not valid JSON: {call['raw_args'][:200]!r}"
            )
        }
    else:
        result = await ctx.registry.execute(
            call["name"], call["args"], tool_context(ctx, session_id)
        )
    return result, (time.perf_counter() - started) * 1000


async def execute_tool(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Run fresh calls, store every result (duplicates get a short note), loop back."""
    ctx = runtime.context
    session_id = state["session_id"]
    calls = state.get("calls") or []
    fresh = fresh_calls(calls, state.get("executed") or [])
    fresh_ids = {c["id"] for c in fresh}
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
    outcomes = await asyncio.gather(*(_run(call, ctx, session_id) for call in fresh))
    by_id = {call["id"]: outcome for call, outcome in zip(fresh, outcomes, strict=True)}

    executed: list[ExecutedCall] = []
    trace: list[dict[str, Any]] = []
    for call in calls:
        if call["id"] in fresh_ids:
            result, ms = by_id[call["id"]]
        else:
            result, ms = {"error": DUPLICATE_RESULT.format(name=call["name"])}, 0.0
            trace.append(
                {
                    "kind": "guard",
                    "name": "duplicate_skipped",
                    "detail": {"tool": call["name"], "args": call["args"]},
                }
            )
        stored_result = {k: v for k, v in result.items() if k not in STORED_WITHOUT}
        message = ctx.store.add_message(
            session_id,
            ctx.registry.role_of(call["name"]),
            ctx.registry.format_result(call["name"], result),
            tool_name=call["name"],
            tool_call_id=call["id"],
            meta={
                "arguments": call["args"],
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
