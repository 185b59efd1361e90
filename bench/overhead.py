"""Per-turn overhead of the conversation graph against LangGraph's prebuilt ReAct agent.

One user turn = one native tool call + one final answer, with an instant scripted model
and an instant tool. Ours runs the whole pipeline (``graph.runner.run_turn``: the user
message stored, build_context twice, call_model twice, execute_tool, every message
persisted in a real SQLite store, segments refreshed); the baseline is
``langgraph.prebuilt.create_react_agent`` with the same model and tool, in memory. One
more row runs our turn with every store call in the store's threads
(``AsyncSqliteStore(try_inline=False)``): what the store's inline try saves. And one
row is the card's shape with nothing in it (``card_shape_turns``): build_context →
call_model → route → execute_tool → build_context with the same model and tool, streamed
as run_turn streams, but no store, no prompt and no trace: what LangGraph and langchain
cost for our graph's shape, so the rest of our turn is Companion's own work.

Both run in the same process, interleaved in rounds so machine noise hits both alike;
figures are medians over all timed turns after a warm-up.

    python -m bench.overhead --turns 600 --rounds 6
    python -m bench.overhead --profile 25   # also print our turn's cProfile top entries
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import statistics
import tempfile
import time
import warnings
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, Any, TypedDict

from bench import quiet_environment

quiet_environment()

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage  # noqa: E402
from langchain_core.tools import StructuredTool  # noqa: E402
from langgraph.graph import END, START, StateGraph  # noqa: E402
from langgraph.graph.message import add_messages  # noqa: E402

from config.settings import Settings  # noqa: E402
from graph.builder import _Router  # noqa: E402
from graph.context import Context  # noqa: E402
from graph.runner import STREAM_MODES, run_turn  # noqa: E402
from memory.sqlite.async_store import AsyncSqliteStore  # noqa: E402
from memory.sqlite.store import SqliteStore  # noqa: E402
from tests.support.chat_model import ScriptedChatModel, tool_call  # noqa: E402
from tools.base import ToolContext, ToolSpec  # noqa: E402
from tools.registry import ToolRegistry  # noqa: E402

QUESTION = "ping the server please"
ANSWER = "The server answered pong."
PING_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"text": {"type": "string"}},
    "required": ["text"],
    "additionalProperties": False,
}

Turn = Callable[[int], Awaitable[Any]]


def policy(messages: list[BaseMessage], kwargs: dict[str, Any]) -> str | AIMessage:
    """Call the tool once, then answer (the same script for both agents)."""
    if isinstance(messages[-1], ToolMessage):
        return ANSWER
    return tool_call("ping", {"text": "hi"})


async def ping_tool(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    """The instant tool, as a Companion tool."""
    return {"pong": args["text"]}


async def ping(text: str) -> dict[str, str]:
    """Ping the server."""
    return {"pong": text}


def companion_turns(home: Path, *, try_inline: bool = True) -> tuple[Turn, Turn]:
    """Our turn in a fresh session each time, and in one session whose history keeps growing.

    ``try_inline=False`` runs every store call in the store's threads, even those the
    store would first try on the event loop (the turn's small reads and writes).
    """
    model = ScriptedChatModel(script=policy, name_="scripted")
    registry = ToolRegistry(
        [ToolSpec("ping", "Ping the server.", PING_SCHEMA, ping_tool, "web_tool")]
    )
    ctx = Context(
        settings=Settings(
            home=home, provider="openai-compatible", tool_mode="native", chat_model="scripted"
        ),
        store=AsyncSqliteStore(SqliteStore.open_home(home), try_inline=try_inline),
        chat_model=model,
        registry=registry,
    )

    async def fresh(i: int) -> None:
        result = await run_turn(ctx, f"fresh-{i}", QUESTION)
        assert result.answer == ANSWER, result.answer
        model.calls.clear()  # the fake records every call; unbounded, it slows the GC

    async def ongoing(i: int) -> None:
        result = await run_turn(ctx, "ongoing", QUESTION)
        assert result.answer == ANSWER, result.answer
        model.calls.clear()

    return fresh, ongoing


def prebuilt_turns() -> tuple[Turn, Turn]:
    """The prebuilt agent: plain ``ainvoke``, and streamed with the modes run_turn uses."""
    model = ScriptedChatModel(script=policy, name_="scripted")
    tool = StructuredTool.from_function(coroutine=ping, name="ping")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # create_react_agent is deprecated upstream
        from langgraph.prebuilt import create_react_agent

        agent = create_react_agent(model, [tool])

    async def invoke(i: int) -> None:
        result = await agent.ainvoke({"messages": [("user", QUESTION)]})
        assert result["messages"][-1].content == ANSWER
        model.calls.clear()

    async def stream(i: int) -> None:
        async for _ in agent.astream(
            {"messages": [("user", QUESTION)]}, stream_mode=["messages", "updates", "custom"]
        ):
            pass
        model.calls.clear()

    return invoke, stream


class ShapeState(TypedDict, total=False):
    """The card's shape with nothing in it: the messages, and the prompt build_context makes."""

    messages: Annotated[list[BaseMessage], add_messages]
    context: list[BaseMessage]


def card_shape_turns() -> Turn:
    """Our graph's shape with the same model and tool and nothing else: build_context
    copies the messages, call_model calls the model, execute_tool runs the one call; the
    router is ours (graph.builder); streamed with run_turn's modes."""
    model = ScriptedChatModel(script=policy, name_="scripted")
    tool = StructuredTool.from_function(coroutine=ping, name="ping")
    bound = model.bind_tools([tool])

    async def build_context(state: ShapeState) -> ShapeState:
        return {"context": list(state["messages"])}

    async def call_model(state: ShapeState) -> ShapeState:
        return {"messages": [await bound.ainvoke(state["context"])]}

    async def execute_tool(state: ShapeState) -> ShapeState:
        last = state["messages"][-1]
        assert isinstance(last, AIMessage)
        call = last.tool_calls[0]
        result = await tool.ainvoke(call["args"])
        return {"messages": [ToolMessage(content=str(result), tool_call_id=call["id"])]}

    def route(state: Any) -> str:  # (typed as the routers' State is: graph.builder)
        last = state["messages"][-1]
        return "tools" if isinstance(last, AIMessage) and last.tool_calls else "final"

    graph = StateGraph(ShapeState)
    graph.add_node("build_context", build_context)
    graph.add_node("call_model", call_model)
    graph.add_node("execute_tool", execute_tool)
    graph.add_edge(START, "build_context")
    graph.add_edge("build_context", "call_model")
    graph.add_conditional_edges(
        "call_model", _Router(route), {"tools": "execute_tool", "final": END}
    )
    graph.add_edge("execute_tool", "build_context")
    shape: Any = graph.compile()  # streamed with run_turn's modes, as run_turn does

    async def stream(i: int) -> None:
        async for mode, chunk in shape.astream(
            {"messages": [("user", QUESTION)]}, stream_mode=STREAM_MODES
        ):
            if mode == "updates" and "call_model" in chunk:
                answer = chunk["call_model"]["messages"][-1]
        assert answer.content == ANSWER
        model.calls.clear()

    return stream


async def measure(variants: dict[str, Turn], turns: int, warmup: int, rounds: int) -> dict:
    """Milliseconds per turn of each variant, interleaved round by round."""
    samples: dict[str, list[float]] = {name: [] for name in variants}
    counter = 0
    for turn in variants.values():
        for _ in range(warmup):
            await turn(counter)
            counter += 1
    per_round = max(1, turns // rounds)
    for _ in range(rounds):
        for name, turn in variants.items():
            for _ in range(per_round):
                started = time.perf_counter()
                await turn(counter)
                samples[name].append((time.perf_counter() - started) * 1000)
                counter += 1
    return samples


def profile(turn: Turn, turns: int, top: int) -> None:
    """Print the cProfile entries of our turn with the highest cumulative time."""

    async def run() -> None:
        for i in range(turns):
            await turn(10_000_000 + i)

    profiler = cProfile.Profile()
    profiler.enable()
    asyncio.run(run())
    profiler.disable()
    pstats.Stats(profiler).sort_stats("cumulative").print_stats(top)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=600, help="timed turns per variant")
    parser.add_argument("--warmup", type=int, default=50, help="untimed turns per variant")
    parser.add_argument("--rounds", type=int, default=6, help="interleaving rounds")
    parser.add_argument("--profile", type=int, default=0, metavar="N", help="print top N")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="companion-bench-") as folder:
        fresh, ongoing = companion_turns(Path(folder) / "home")
        threaded, _ = companion_turns(Path(folder) / "threaded", try_inline=False)
        invoke, stream = prebuilt_turns()
        shape = card_shape_turns()
        variants = {
            "prebuilt create_react_agent, ainvoke": invoke,
            "prebuilt create_react_agent, astream (messages+updates+custom)": stream,
            "the card's shape with nothing in it (no store, no prompt), astream": shape,
            "companion run_turn, new session": fresh,
            "companion run_turn, session with history": ongoing,
            "companion run_turn, new session, every store call in a thread": threaded,
        }
        samples = asyncio.run(measure(variants, args.turns, args.warmup, args.rounds))
        baseline = statistics.median(samples["prebuilt create_react_agent, ainvoke"])
        streamed = statistics.median(
            samples["prebuilt create_react_agent, astream (messages+updates+custom)"]
        )
        print(f"\n{args.turns} timed turns per variant after {args.warmup} warm-up turns, ")
        print(f"{args.rounds} interleaved rounds; one tool call + one answer per turn.\n")
        print(
            "| variant | median ms/turn | p90 ms/turn | × prebuilt ainvoke | × prebuilt astream |"
        )
        print("|---|---:|---:|---:|---:|")
        for name, values in samples.items():
            median = statistics.median(values)
            p90 = statistics.quantiles(values, n=10)[-1]
            print(
                f"| {name} | {median:.2f} | {p90:.2f} | {median / baseline:.2f} "
                f"| {median / streamed:.2f} |"
            )
        if args.profile:
            profile(fresh, 200, args.profile)


if __name__ == "__main__":
    main()
