"""Time to first token and to the whole answer: Companion's turn against a direct client.

A real OpenAI-compatible server on 127.0.0.1 (``tests.support.fake_openai.FakeOpenAIServer``
with ``latency=--delay``) waits that long before its stream starts, then streams a
fixed answer of several chunks at once. Three paths ask it the same thing, interleaved
turn by turn in one process (the order rotates every turn), so machine noise hits all
of them alike:

- ``openai.AsyncOpenAI``: the raw client, replaying Companion's own request (the same
  messages and parameters, captured after the warm-up);
- ``langchain_openai.ChatOpenAI(streaming=True)``: the same messages through ``astream``;
- Companion: ``graph.runner.stream_turn`` with ``ctx.stream_tokens`` on, the context from
  ``graph.setup.ContextFactory`` as the app opens it (a real SQLite store in a temp home,
  provider openai-compatible, ``base_url`` the server, ``--tool-mode``), each turn in a
  new session. The clock starts when ``stream_turn`` is called (the user's message is
  stored inside it) and stops at the first ``TextDelta`` and at ``Answer``. After each
  turn its background work (segments, vectors) ends before the next turn starts, untimed.

After the warm-up the objects made so far (modules, the embedder) are moved out of the
garbage collector's reach (``gc.freeze``): a full collection of them takes 100-200 ms
here, and would land in one path's turn at random.

First token: from the call to the first text the consumer sees. Whole answer: to the end
of the stream (``Answer`` for Companion). The server's clock (``FakeOpenAIServer.timings``,
same process) splits the first-token wait: "to request" runs from the call until the
request's body has reached the server, "after chunk" from the server flushing its first
chunk until the consumer has the text. The added rows are Companion's medians minus a
direct client's. ``--profile N`` runs Companion's path again under cProfile and prints
the N project functions (graph/, nodes/, memory/, tools/, prompts/, providers/) with the
highest cumulative time per turn, up to the first ``TextDelta`` and from it to ``Answer``.

    python -m bench.first_token --turns 30 --delay 0.2
    python -m bench.first_token --turns 30 --delay 0.2 --profile 30
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import pstats
import re
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import quiet_environment

quiet_environment()

from langchain_openai import ChatOpenAI  # noqa: E402
from openai import AsyncOpenAI  # noqa: E402

from graph.context import Context  # noqa: E402
from graph.events import Answer, TextDelta, TurnError  # noqa: E402
from graph.jobs import settle  # noqa: E402
from graph.runner import stream_turn  # noqa: E402
from graph.setup import ContextFactory  # noqa: E402
from memory.sqlite.async_store import AsyncSqliteStore  # noqa: E402
from tests.support.fake_openai import FakeOpenAIServer, Timing  # noqa: E402

QUESTION = "What should I take on a day hike in the hills?"
ANSWER = (
    "Take water, a snack, a warm layer, a rain jacket, a map, sunscreen and a charged "
    "phone, and tell someone where you are going and when you expect to be back."
)
MODEL = "fake-model"
API_KEY = "bench"
BACKGROUND_WAIT = 60.0  # seconds a turn's background work may take before timing goes on
ROOT = Path(__file__).resolve().parent.parent
PROJECT = re.compile(
    re.escape(str(ROOT)) + r"/(graph|nodes|memory|tools|prompts|providers)/.*\.py$"
)
RAW = "openai AsyncOpenAI, same request"
LANGCHAIN = "langchain ChatOpenAI(streaming=True)"
COMPANION = "companion stream_turn"


@dataclass(frozen=True)
class Sample:
    """One timed answer, in milliseconds from the call."""

    text: str  # what the consumer received
    first: float  # to the first text
    whole: float  # to the end of the answer
    to_request: float  # to the request's arrival at the server
    after_chunk: float  # from the server's first chunk to the first text


@dataclass(frozen=True)
class Seen:
    """What a path saw of one answer: its text, and when, in seconds from the call."""

    text: str
    first: float  # the first text
    end: float  # the end of the answer


Ask = Callable[[int], Awaitable[Seen]]


async def companion_context(home: Path, server: FakeOpenAIServer, tool_mode: str) -> Context:
    """The Context the app opens for this home, talking to the fake server."""
    flags = {
        "home": str(home),
        "provider": "openai-compatible",
        "base_url": server.url,
        "chat_model": MODEL,
        "tool_mode": tool_mode,
    }
    return await ContextFactory(flags, {"COMPANION_API_KEY": API_KEY})()


async def background_done() -> None:
    """Wait for the tasks a turn left running (segment refresh, vectors), within reason."""
    others = asyncio.all_tasks() - {asyncio.current_task()}
    if others:
        await asyncio.wait(others, timeout=BACKGROUND_WAIT)


def companion_ask(ctx: Context) -> Ask:
    """A turn through ``stream_turn``, each in a new session, as the chat consumes it."""

    async def ask(turn: int) -> Seen:
        session = f"bench-{turn}"
        streamed, answer, first = "", "", None
        started = time.perf_counter()
        async for event in stream_turn(ctx, session, QUESTION):
            match event:
                case TextDelta(text=text):
                    first = first or time.perf_counter()
                    streamed += text
                case TurnError(detail=detail):
                    raise RuntimeError(f"the turn failed: {detail}")
                case Answer(text=answer):
                    end = time.perf_counter()
        await settle(session)
        await background_done()
        if first is None or streamed.strip() != answer:
            raise RuntimeError(f"the turn streamed {streamed!r}, then answered {answer!r}")
        return Seen(streamed, first - started, end - started)

    return ask


def langchain_ask(server: FakeOpenAIServer, request: dict[str, Any]) -> Ask:
    """The request's messages (and tools) through ChatOpenAI's ``astream``."""
    model: Any = ChatOpenAI(
        model=MODEL,
        base_url=server.url,
        api_key=API_KEY,  # type: ignore[arg-type]
        max_retries=0,
        streaming=True,
        stream_usage=True,
    )
    if request.get("tools"):
        model = model.bind_tools(request["tools"])
    messages = request["messages"]

    async def ask(turn: int) -> Seen:
        text, first = "", None
        started = time.perf_counter()
        async for chunk in model.astream(messages):
            if isinstance(chunk.content, str) and chunk.content:
                if first is None:
                    first = time.perf_counter()
                text += chunk.content
        end = time.perf_counter()
        if first is None:
            raise RuntimeError("ChatOpenAI streamed no text")
        return Seen(text, first - started, end - started)

    return ask


def raw_ask(server: FakeOpenAIServer, request: dict[str, Any]) -> Ask:
    """The request itself, replayed with the OpenAI client."""
    client = AsyncOpenAI(base_url=server.url, api_key=API_KEY, max_retries=0)
    body = {key: value for key, value in request.items() if key != "stream"}

    async def ask(turn: int) -> Seen:
        text, first = "", None
        started = time.perf_counter()
        stream = await client.chat.completions.create(**body, stream=True)
        async for chunk in stream:
            content = chunk.choices[0].delta.content if chunk.choices else None
            if content:
                if first is None:
                    first = time.perf_counter()
                text += content
        end = time.perf_counter()
        if first is None:
            raise RuntimeError("the OpenAI client streamed no text")
        return Seen(text, first - started, end - started)

    return ask


def chat_timing(server: FakeOpenAIServer, since: int) -> Timing:
    """The server's times for the first chat request from request number ``since`` on."""
    for request, timing in zip(server.requests[since:], server.timings[since:], strict=True):
        if "messages" in request and timing.first_chunk is not None:
            return timing
    raise RuntimeError("no streamed chat request reached the server")


async def timed(ask: Ask, turn: int, server: FakeOpenAIServer) -> Sample:
    """One answer of ``ask``, with the server's view of it."""
    since = len(server.requests)
    started = time.perf_counter()
    seen = await ask(turn)
    timing = chat_timing(server, since)
    assert timing.first_chunk is not None
    return Sample(
        text=seen.text,
        first=seen.first * 1000,
        whole=seen.end * 1000,
        to_request=(timing.arrived - started) * 1000,
        after_chunk=(started + seen.first - timing.first_chunk) * 1000,
    )


async def measure(
    server: FakeOpenAIServer, home: Path, *, turns: int, warmup: int, tool_mode: str
) -> dict[str, list[Sample]]:
    """Each path's timed samples, the paths interleaved turn by turn after a warm-up."""
    ctx = await companion_context(home, server, tool_mode)
    try:
        companion = companion_ask(ctx)
        since = len(server.requests)
        for turn in range(max(1, warmup)):
            await companion(-1 - turn)
        request = next(r for r in server.requests[since:] if "messages" in r)
        paths = {
            RAW: raw_ask(server, request),
            LANGCHAIN: langchain_ask(server, request),
            COMPANION: companion,
        }
        for ask in paths.values():
            if ask is not companion:
                for turn in range(warmup):
                    await ask(turn)
        gc.collect()
        gc.freeze()  # startup's objects: a full collection of them takes 100-200 ms
        samples: dict[str, list[Sample]] = {name: [] for name in paths}
        order = list(paths)
        for turn in range(turns):
            for name in order[turn % len(order) :] + order[: turn % len(order)]:
                samples[name].append(await timed(paths[name], turn, server))
        return samples
    finally:
        gc.unfreeze()
        if isinstance(ctx.store, AsyncSqliteStore):
            await ctx.store.close()


def p90(values: list[float]) -> float:
    """The 90th percentile (the value itself for one sample)."""
    return statistics.quantiles(values, n=10)[-1] if len(values) > 1 else values[0]


def table(samples: dict[str, list[Sample]]) -> list[str]:
    """The Markdown table of every path's figures and Companion's added medians."""
    lines = [
        "| path | first token median ms | first token p90 ms | whole answer median ms "
        "| whole answer p90 ms | to request median ms | after chunk median ms |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    medians: dict[str, dict[str, float]] = {}
    for name, taken in samples.items():
        medians[name] = {
            field: statistics.median(getattr(s, field) for s in taken)
            for field in ("first", "whole", "to_request", "after_chunk")
        }
        m = medians[name]
        lines.append(
            f"| {name} | {m['first']:.1f} | {p90([s.first for s in taken]):.1f} "
            f"| {m['whole']:.1f} | {p90([s.whole for s in taken]):.1f} "
            f"| {m['to_request']:.1f} | {m['after_chunk']:.1f} |"
        )
    ours = medians[COMPANION]
    for baseline in (LANGCHAIN, RAW):
        theirs = medians[baseline]
        added = {field: ours[field] - theirs[field] for field in ours}
        lines.append(
            f"| added by companion vs {baseline} | {added['first']:+.1f} | – "
            f"| {added['whole']:+.1f} | – | {added['to_request']:+.1f} "
            f"| {added['after_chunk']:+.1f} |"
        )
    return lines


def project_rows(stats: pstats.Stats, turns: int, top: int) -> list[str]:
    """The project's functions with the highest cumulative time, per turn, as table rows."""
    entries = []
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    for (file, line, function), (_, calls, own, cumulative, _) in raw.items():
        if PROJECT.search(file):
            where = f"{Path(file).relative_to(ROOT)}:{line} {function}"
            entries.append((cumulative, own, calls, where))
    entries.sort(reverse=True)
    rows = [
        "| function | calls/turn | own ms/turn | cumulative ms/turn |",
        "|---|---:|---:|---:|",
    ]
    for cumulative, own, calls, where in entries[:top]:
        rows.append(
            f"| {where} | {calls / turns:.1f} | {own * 1000 / turns:.3f} "
            f"| {cumulative * 1000 / turns:.3f} |"
        )
    return rows


def package_of(file: str, function: str) -> str:
    """Whose code a profiled function is: a project package (``graph/``), an installed
    one, a standard-library module, built-ins, or the event loop waiting for sockets."""
    if file == "~":
        return "waiting in epoll" if "poll" in function else "built-ins"
    path = Path(file)
    if not path.is_absolute():
        return file  # "<frozen importlib._bootstrap>", "<string>"
    if "site-packages" in path.parts:
        return Path(path.parts[path.parts.index("site-packages") + 1]).stem
    if path.is_relative_to(ROOT):
        return f"{path.relative_to(ROOT).parts[0]}/"
    return path.parent.name if not path.parent.name.startswith("python3") else path.stem


def package_rows(phases: dict[str, pstats.Stats], turns: int, top: int) -> list[str]:
    """The ``top`` packages (``package_of``) by own time per turn, one column per phase."""
    owns: dict[str, dict[str, float]] = {}
    for phase, stats in phases.items():
        raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
        for (file, _, function), (_, _, own, _, _) in raw.items():
            package = owns.setdefault(package_of(file, function), dict.fromkeys(phases, 0.0))
            package[phase] += own * 1000 / turns
    rows = [
        f"| package | {' | '.join(f'own ms/turn, {phase}' for phase in phases)} |",
        f"|---|{'---:|' * len(phases)}",
    ]
    for package, own in sorted(owns.items(), key=lambda item: -sum(item[1].values()))[:top]:
        rows.append(f"| {package} | {' | '.join(f'{ms:.3f}' for ms in own.values())} |")
    return rows


async def profile(
    server: FakeOpenAIServer, home: Path, *, turns: int, tool_mode: str, top: int
) -> list[str]:
    """Companion's path under cProfile, one profile up to the first ``TextDelta`` and one
    from it to ``Answer``: the project's top functions of each, per turn."""
    ctx = await companion_context(home, server, tool_mode)
    before, after = cProfile.Profile(), cProfile.Profile()
    try:
        await companion_ask(ctx)(-1)  # the graph compiled, the HTTP client made
        for turn in range(turns):
            session = f"profiled-{turn}"
            current = before
            current.enable()
            async for event in stream_turn(ctx, session, QUESTION):
                if isinstance(event, TextDelta) and current is before:
                    before.disable()
                    current = after
                    current.enable()
            current.disable()
            await settle(session)
            await background_done()
    finally:
        if isinstance(ctx.store, AsyncSqliteStore):
            await ctx.store.close()
    first, rest = pstats.Stats(before), pstats.Stats(after)
    return [
        f"\ncProfile of {turns} Companion turns, from calling stream_turn to the first "
        "TextDelta; project modules only:\n",
        *project_rows(first, turns, top),
        "\nFrom the first TextDelta to Answer; project modules only:\n",
        *project_rows(rest, turns, top),
        "\nOwn time by package (the server's delay is the event loop waiting in epoll):\n",
        *package_rows({"to first TextDelta": first, "to Answer": rest}, turns, top),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=30, help="timed answers per path")
    parser.add_argument("--warmup", type=int, default=3, help="untimed answers per path")
    parser.add_argument("--delay", type=float, default=0.2, help="seconds before the stream")
    parser.add_argument("--tool-mode", choices=("commands", "native"), default="commands")
    parser.add_argument("--profile", type=int, default=0, metavar="N", help="print top N")
    args = parser.parse_args()

    with (
        tempfile.TemporaryDirectory(prefix="companion-bench-") as folder,
        FakeOpenAIServer(latency=args.delay, default=ANSWER) as server,
    ):
        samples = asyncio.run(
            measure(
                server,
                Path(folder) / "home",
                turns=args.turns,
                warmup=args.warmup,
                tool_mode=args.tool_mode,
            )
        )
        print(
            f"\n{args.turns} timed answers per path after {args.warmup} warm-up answers, "
            f"interleaved; the server waits {args.delay * 1000:.0f} ms before its stream "
            f"({len(ANSWER.split())} chunks at once); tool mode {args.tool_mode}.\n"
        )
        print("\n".join(table(samples)))
        if args.profile:
            lines = asyncio.run(
                profile(
                    server,
                    Path(folder) / "profiled",
                    turns=args.turns,
                    tool_mode=args.tool_mode,
                    top=args.profile,
                )
            )
            print("\n".join(lines))


if __name__ == "__main__":
    main()
