"""Concurrent sessions through the real ChatOpenAI path against a slow loopback server.

``--sessions`` sessions run at once, each ``--turns`` turns in a row; every turn is one
native tool call plus one final answer, so two requests to
``tests.support.fake_openai.FakeOpenAIServer(latency=...)`` (a real HTTP server on 127.0.0.1,
streaming SSE). The context comes from ``graph.setup.context_for`` (provider
openai-compatible, ``base_url=server.url``) with a real SQLite store shared by all
sessions, as in the app.

Ideal wall time = turns × calls per turn × latency (sessions overlap perfectly);
throughput is compared with sessions × turns / ideal. Errors must be 0, and no message
may be lost: every session must hold exactly ``turns`` user messages, tool results and
final answers.

Where the time goes: every session's turn path runs on the one event loop, so the loop's
own CPU per turn (``time.thread_time`` of its thread) bounds the throughput: with 2 calls
of ``latency`` per turn the loop can overlap them only while it is busy less than the
whole wall time ("loop busy"). The other threads' CPU is the background embedding of the
new messages (its own line: the context's embedder, timed in its thread) and the rest
(the store's threads, the loopback server's). ``--no-embedder`` runs without vectors.

The baseline, run first in the same process and loop: the same sessions with the chat
model alone (``chat_model_alone``: the context's ChatOpenAI as the app makes it, bound to
the same tool, two streamed calls a turn with the real system prompt and the last 25
messages, but no graph, no store, no prompt building): how near the ideal the model's
client itself comes, so the table splits its cost from Companion's. ``--no-baseline``
skips it.

The garbage collector is set as the served app sets it (``graph.setup.collect_less``).
The loop is uvloop's, as in the served app (Gradio's uvicorn picks uvloop when it is
installed, and it is: langgraph-api needs it); ``--loop asyncio`` runs the standard
library's loop instead, as ``companion chat`` and the eval harness do.

    python -m bench.concurrency --sessions 32 --turns 10 --latency 0.2
    python -m bench.concurrency --sessions 32 --turns 10 --latency 0.2 --loop asyncio
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import tempfile
import threading
import time
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any

import uvloop
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from bench import quiet_environment

quiet_environment()

from config.settings import Settings  # noqa: E402
from graph.jobs import settle_embedding  # noqa: E402
from graph.runner import run_turn  # noqa: E402
from graph.setup import collecting_less, context_for  # noqa: E402
from memory.sqlite.async_store import AsyncSqliteStore  # noqa: E402
from memory.sqlite.store import SqliteStore  # noqa: E402
from nodes.build_context import HISTORY_LIMIT, system_text  # noqa: E402
from tests.support.fake_openai import FakeOpenAIServer, Step  # noqa: E402
from tools.base import ToolContext, ToolSpec  # noqa: E402
from tools.registry import ToolRegistry  # noqa: E402

CALLS_PER_TURN = 2
# How each loop runs a coroutine to its end.
LOOPS: dict[str, Callable[[Coroutine[Any, Any, Any]], Any]] = {
    "uvloop": uvloop.run,
    "asyncio": asyncio.run,
}
LOOKUP_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"key": {"type": "string"}},
    "required": ["key"],
    "additionalProperties": False,
}


def respond(request: dict[str, Any]) -> Step:
    """Call the tool first; answer once its result is in the request."""
    last = request["messages"][-1]
    if last.get("role") == "tool":
        return Step(content=f"Looked it up: {last['content'][-40:]!r}.")
    return Step(tool_calls=[("lookup", '{"key": "today"}')])


async def lookup(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    """An instant tool."""
    return {"key": args["key"], "value": 42}


async def session(ctx: Any, name: str, turns: int) -> list[str]:
    """Run a session's turns in a row; return the errors seen."""
    errors = []
    for turn in range(turns):
        result = await run_turn(ctx, name, f"turn {turn}: look it up")
        if result.error or not result.answer.startswith("Looked it up"):
            errors.append(f"{name}#{turn}: {result.error or result.answer}")
    return errors


async def chat_model_alone(ctx: Any, sessions: int, turns: int) -> dict[str, float]:
    """The sessions' model calls with nothing else: per turn, the chat model is asked with
    the system prompt, the last ``HISTORY_LIMIT`` messages and the question, calls the
    tool, and answers once the result is added (as ``respond`` scripts the server); the
    loop's CPU and the wall time of all sessions at once."""
    spec = ctx.registry.get("lookup")
    model = ctx.chat_model.bind_tools([spec.schema()], tool_choice="auto")
    system = SystemMessage(system_text(ctx.settings, [spec], ctx.store.clock()))

    async def ask(messages: list[BaseMessage]) -> AIMessageChunk:
        chunks = [chunk async for chunk in model.astream(messages)]
        merged: AIMessageChunk = chunks[0]
        for chunk in chunks[1:]:
            merged = merged + chunk
        return merged

    async def alone(turns: int) -> None:
        history: list[BaseMessage] = []
        for turn in range(turns):
            question = HumanMessage(f"turn {turn}: look it up")
            asked = await ask([system, *history[-HISTORY_LIMIT:], question])
            call = AIMessage(content="", tool_calls=asked.tool_calls)
            found = ToolMessage(
                json.dumps({"key": "today", "value": 42}), tool_call_id=asked.tool_calls[0]["id"]
            )
            answer = await ask([system, *history[-HISTORY_LIMIT:], question, call, found])
            history += [question, call, found, AIMessage(content=answer.content)]

    await alone(1)  # untimed, as the whole turn's warm-up
    started, loop_cpu = time.perf_counter(), time.thread_time()
    await asyncio.gather(*(alone(turns) for _ in range(sessions)))
    return {"wall": time.perf_counter() - started, "loop_cpu": time.thread_time() - loop_cpu}


class TimedEmbedder:
    """The context's embedder, its calls' CPU summed (they run in worker threads)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.model, self.dimensions = inner.model, inner.dimensions
        self.cpu = 0.0
        self._lock = threading.Lock()

    def passages(self, texts: Sequence[str]) -> Any:
        started = time.thread_time()
        try:
            return self.inner.passages(texts)
        finally:
            with self._lock:
                self.cpu += time.thread_time() - started

    def query(self, text: str) -> Any:
        return self.inner.query(text)


async def run(
    sessions: int,
    turns: int,
    server: FakeOpenAIServer,
    home: Path,
    *,
    embed: bool = True,
    warmup: int = 1,
    baseline: bool = True,
) -> dict:
    """Every session at once, after ``warmup`` untimed one-turn sessions; wall time,
    errors, what the store holds after, and the CPU of the event loop's thread, of the
    whole process and of the embedder's calls."""
    settings = Settings(
        home=home,
        provider="openai-compatible",
        base_url=server.url,
        api_key="bench",
        chat_model="fake-model",
        tool_mode="native",
        max_retries=0,
        request_timeout=30.0,
    )
    store = SqliteStore.open_home(home)
    registry = ToolRegistry(
        [ToolSpec("lookup", "Look a key up.", LOOKUP_SCHEMA, lookup, "web_tool")]
    )
    ctx = context_for(settings, AsyncSqliteStore(store), registry=registry)
    embedder = TimedEmbedder(ctx.embedder) if embed and ctx.embedder is not None else None
    ctx = dataclasses.replace(ctx, embedder=embedder)
    with collecting_less():  # as the served app, once it serves (graph.setup)
        alone = await chat_model_alone(ctx, sessions, turns) if baseline else None
        for i in range(warmup):  # untimed: what a served app has done before its first turn
            await session(ctx, f"warm-{i}", 1)  # (lazy imports, the model's client, the graph)
        await settle_embedding(ctx.store.location)  # the warm-up's, not in the timed part
        started = time.perf_counter()
        loop_cpu, process_cpu = time.thread_time(), time.process_time()
        results = await asyncio.gather(
            *(session(ctx, f"bench-{i}", turns) for i in range(sessions)),
            return_exceptions=True,
        )
        wall = time.perf_counter() - started
        loop_cpu, process_cpu = time.thread_time() - loop_cpu, time.process_time() - process_cpu
    errors = [e for r in results for e in (r if isinstance(r, list) else [repr(r)])]
    counts = dict.fromkeys(("user", "assistant", "web_tool"), 0)
    short = 0
    for i in range(sessions):
        stored = store.messages(f"bench-{i}")
        per_role = {role: sum(m.role == role for m in stored) for role in counts}
        short += sum(max(0, turns - n) for n in per_role.values())
        for role, n in per_role.items():
            counts[role] += n
    store.close()
    return {
        "loop": type(asyncio.get_running_loop()).__module__.split(".")[0],
        "wall": wall,
        "errors": errors,
        "counts": counts,
        "lost": short,
        "loop_cpu": loop_cpu,
        "process_cpu": process_cpu,
        "embedding_cpu": embedder.cpu if embedder else 0.0,
        "alone": alone,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=32)
    parser.add_argument("--turns", type=int, default=10)
    parser.add_argument("--latency", type=float, default=0.2, help="server seconds per call")
    parser.add_argument(
        "--no-embedder", action="store_true", help="no background embedding of the messages"
    )
    parser.add_argument(
        "--warmup",
        type=int,
        default=1,
        help="untimed one-turn sessions first, as a served app is warm (0: a cold process)",
    )
    parser.add_argument(
        "--no-baseline", action="store_true", help="skip the chat model alone (the baseline)"
    )
    parser.add_argument(
        "--loop",
        choices=LOOPS,
        default="uvloop",
        help="the event loop: uvloop, as the served app's (default), or asyncio's own",
    )
    args = parser.parse_args()

    with (
        tempfile.TemporaryDirectory(prefix="companion-bench-") as folder,
        FakeOpenAIServer(latency=args.latency, responder=respond) as server,
    ):
        home = Path(folder) / "home"
        outcome = LOOPS[args.loop](
            run(
                args.sessions,
                args.turns,
                server,
                home,
                embed=not args.no_embedder,
                warmup=args.warmup,
                baseline=not args.no_baseline,
            )
        )
        alone_calls = (1 + args.sessions * args.turns) * CALLS_PER_TURN if outcome["alone"] else 0
        requests = len(server.requests) - args.warmup * CALLS_PER_TURN - alone_calls
    total_turns = args.sessions * args.turns
    ideal = args.turns * CALLS_PER_TURN * args.latency
    wall = outcome["wall"]
    counts = outcome["counts"]
    print(
        f"\n{args.sessions} sessions × {args.turns} turns × {CALLS_PER_TURN} calls, "
        f"server latency {args.latency * 1000:.0f} ms per call, {requests} requests served "
        f"(after {args.warmup} untimed one-turn session(s)).\n"
    )
    print("| measure | value |\n|---|---:|")
    print(f"| event loop | {outcome['loop']} |")
    print(f"| wall time (s) | {wall:.2f} |")
    print(f"| ideal wall time (s) | {ideal:.2f} |")
    print(f"| throughput (turns/s) | {total_turns / wall:.1f} |")
    print(f"| ideal throughput (turns/s) | {total_turns / ideal:.1f} |")
    print(f"| efficiency (ideal / actual) | {ideal / wall:.0%} |")
    print(f"| errors | {len(outcome['errors'])} |")
    print(
        f"| stored user / assistant / tool messages | {counts['user']} / "
        f"{counts['assistant']} / {counts['web_tool']} (expected {total_turns} each) |"
    )
    print(f"| messages lost | {outcome['lost']} |")
    loop_cpu, embedding = outcome["loop_cpu"], outcome["embedding_cpu"]
    print(f"| event loop CPU per turn (ms) | {loop_cpu / total_turns * 1000:.1f} |")
    print(f"| loop busy (its CPU / wall time) | {loop_cpu / wall:.0%} |")
    print(f"| background embedding CPU (s) | {embedding:.2f} |")
    print(f"| other threads' CPU (s) | {outcome['process_cpu'] - loop_cpu - embedding:.2f} |")
    alone = outcome["alone"]
    if alone:
        name = "the chat model alone (no graph, store or prompt building)"
        print(f"| {name}: efficiency | {ideal / alone['wall']:.0%} |")
        per_turn = alone["loop_cpu"] / total_turns * 1000
        print(f"| {name}: event loop CPU per turn (ms) | {per_turn:.1f} |")
        ratio = loop_cpu / alone["loop_cpu"]
        print(f"| the whole turn's loop CPU / the model alone's | {ratio:.2f}× |")
    for error in outcome["errors"][:5]:
        print(f"\nerror: {error}")


if __name__ == "__main__":
    main()
