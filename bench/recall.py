"""Recall at scale: memory_search and memory_sql over generated histories, and context cost.

For each size (default 10k, 100k and 1M messages) a history is generated once and cached
in a temp folder: conversations of 20 messages spread over six months and over many
sessions (one long session is the one asked about), written with ``executemany`` straight
into a database the store created (the FTS triggers index every row), then cut into
segments with the store's own ``refresh_segments``.

Timed, p50/p95 over ``--queries`` runs each:

- memory_search (the tool itself: memories, segments, BM25 raw messages, over every
  session, asked from the long session with its newest user message as the question)
  with no time cue, a rare phrase, and a temporal window ("last Thursday");
- memory_search hybrid: the query embedded by the bundled embedder (``providers``'
  LocalEmbedder, in its own thread while the words are searched) and fused with the
  nearest of the vector index,
  which holds a random unit vector of the embedder's dimension for every user/assistant
  message (a brute-force-then-rerank search costs the same whatever the vectors mean, so
  the history need not be embedded for real: at 1M that would take half an hour); and,
  as the baseline of the same run, the path before either search ran beside another: the
  query embedded first, then the tool with that vector ready and its searches (lexical,
  dense, segments) run one after the other in the same thread;
- the dense search alone (``memory.sqlite.vectors.nearest``) for a random unit vector, over
  the whole history and over the temporal window's id range;
- the raw message search alone (``memory.sqlite.retrieval.search_messages``), all sessions
  (the whole history, or every message of the window), the asked session winning ties;
- the naive LIKE scan baseline (``tests.support.naive_search``, every message) for the
  same words — once with common words (the scan stops early at 20 hits) and once with a
  rare phrase (the scan reads everything);
- a typical memory_sql SELECT (the example in the tool's description), guard included;
- ``nodes.build_context`` for the asked session (1k-message history vs the largest).

    python -m bench.recall                       # 10k, 100k, 1M
    python -m bench.recall --sizes 10000,100000 --queries 50
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy

from bench import quiet_environment

quiet_environment()

from config.settings import Settings  # noqa: E402
from graph.context import Context  # noqa: E402
from memory import format_time  # noqa: E402
from memory.rules.temporal import TemporalCue, parse_temporal  # noqa: E402
from memory.sqlite import recall as sqlite_recall  # noqa: E402
from memory.sqlite.async_store import AsyncSqliteStore  # noqa: E402
from memory.sqlite.retrieval import search_messages, window_ids  # noqa: E402
from memory.sqlite.segments import refresh_segments  # noqa: E402
from memory.sqlite.sql_guard import run_sql  # noqa: E402
from memory.sqlite.store import SqliteStore  # noqa: E402
from memory.sqlite.vectors import drop_vectors, nearest, sketch, vector_status  # noqa: E402
from nodes.build_context import build_context  # noqa: E402
from providers import Embedder, open_embedder  # noqa: E402
from tests.support.chat_model import ScriptedChatModel  # noqa: E402
from tests.support.naive_search import naive_search  # noqa: E402
from tools.base import ToolContext  # noqa: E402
from tools.memory_search import memory_search  # noqa: E402
from tools.registry import default_registry  # noqa: E402

NOW = datetime(2026, 11, 25, 9, 30, tzinfo=UTC)  # a Wednesday; the history ends here
SPAN = timedelta(days=182)
BURST = 20  # messages per conversation
ASKED = "asked"  # the long session the questions come from
ASKED_SHARE = 0.1  # its share of the conversations
CACHE = Path(tempfile.gettempdir()) / "companion-bench-recall-v3"

FOODS = ["nasi goreng", "ramen", "lasagna", "pho", "tacos", "curry", "risotto", "dumplings"]
PLACES = ["the market", "the office", "the gym", "Bandung", "the beach", "grandma's house"]
TOPICS = ["work", "the weekend", "a film", "the weather", "a book", "music", "travel plans"]
USER_LINES = [
    "I cooked {food} for dinner tonight",
    "we went to {place} today",
    "can we talk about {topic}?",
    "I'm a bit tired after {place}",
    "thinking about making {food} again",
    "remind me what I said about {topic}",
]
ASSISTANT_LINES = [
    "That sounds lovely — how did the {food} turn out?",
    "Tell me more about {topic}.",
    "I hope {place} was fun!",
    "Rest well; {topic} can wait until tomorrow.",
]
RARE = "sourdough starter named Bubbles"  # once, in the asked session's recent messages

COMMON_QUERY = "nasi goreng recipe"
WINDOW_QUERY = "what did I cook last Thursday"
RARE_QUERY = "sourdough Bubbles"
SQL = (
    "SELECT created_at, content FROM messages WHERE role = 'user' AND content LIKE '%cook%' "
    "ORDER BY id DESC LIMIT 10"
)


def _line(rng: random.Random, templates: list[str]) -> str:
    return rng.choice(templates).format(
        food=rng.choice(FOODS), place=rng.choice(PLACES), topic=rng.choice(TOPICS)
    )


def _rows(size: int, seed: int = 7) -> list[tuple[str, str, str, str]]:
    """(session_id, role, content, created_at) in id order, timestamps over six months."""
    rng = random.Random(seed)
    bursts = max(1, size // BURST)
    sessions = max(4, bursts // 25)
    gap = SPAN / bursts
    start = NOW - SPAN
    rows: list[tuple[str, str, str, str]] = []
    for burst in range(bursts):
        asked = rng.random() < ASKED_SHARE or burst >= bursts - 2
        session = ASKED if asked else f"s{rng.randrange(sessions)}"
        moment = start + gap * burst
        for i in range(BURST):
            role = "user" if i % 2 == 0 else "assistant"
            text = _line(rng, USER_LINES if role == "user" else ASSISTANT_LINES)
            if burst == bursts - 2 and i == 0:
                text = f"I finally made a {RARE}"
            rows.append((session, role, text, format_time(moment + timedelta(minutes=i))))
    return rows[:size]


def history(size: int) -> Path:
    """The cached COMPANION_HOME holding a generated history of ``size`` messages."""
    home = CACHE / f"{size}"
    done = home / "ready"
    if done.exists():
        return home
    started = time.perf_counter()
    store = SqliteStore.open_home(home, clock=lambda: NOW)
    rows = _rows(size)
    sessions = sorted({row[0] for row in rows})
    conn = sqlite3.connect(store.path)
    conn.execute("PRAGMA synchronous=OFF")
    with conn:
        conn.executemany(
            "INSERT OR IGNORE INTO sessions (id, title, created_at) VALUES (?, ?, ?)",
            [(s, s, format_time(NOW - SPAN)) for s in sessions],
        )
        conn.executemany(
            "INSERT INTO messages (session_id, role, content, created_at) VALUES (?, ?, ?, ?)",
            rows,
        )
    conn.execute("ANALYZE")
    conn.close()
    for session in sessions:
        asyncio.run(refresh_segments(store, session, force=True))
    store.close()
    done.write_text(f"{time.perf_counter() - started:.1f} s\n")
    return home


def random_vectors(store: SqliteStore, embedder: Embedder, batch: int = 20_000) -> None:
    """A random unit vector of ``embedder``'s model and dimension for every user/assistant
    message, written straight into the vector index (once per model: another model's
    vectors are dropped first)."""
    done, total = vector_status(store, embedder.model)
    if done == total:
        return
    drop_vectors(store, None)
    rng = numpy.random.default_rng(7)
    ids = [
        row[0]
        for row in store.conn.execute(
            "SELECT id FROM messages WHERE role IN ('user', 'assistant') ORDER BY id"
        )
    ]
    for start in range(0, len(ids), batch):
        chunk = ids[start : start + batch]
        vectors = unit_vectors(rng, len(chunk), embedder.dimensions)
        codes = sketch(vectors)
        with store.transaction() as conn:
            conn.executemany(
                """INSERT INTO message_vectors (message_id, model, sketch, vector)
                   VALUES (?, ?, ?, ?)""",
                [
                    (i, embedder.model, c.tobytes(), v.tobytes())
                    for i, c, v in zip(chunk, codes, vectors, strict=True)
                ],
            )


def unit_vectors(rng: numpy.random.Generator, count: int, dimensions: int) -> numpy.ndarray:
    vectors = rng.standard_normal((count, dimensions)).astype(numpy.float32)
    return vectors / numpy.linalg.norm(vectors, axis=1, keepdims=True)


class Ready:
    """An embedder whose query vector is already made (the baseline's second half)."""

    def __init__(self, embedder: Embedder, vector: numpy.ndarray) -> None:
        self.model, self.dimensions, self.vector = embedder.model, embedder.dimensions, vector

    def query(self, text: str) -> numpy.ndarray:
        return self.vector


class InOneThread:
    """An executor that runs each call at once in the caller's thread: the baseline's
    searches one after the other."""

    def submit(self, call: Callable[..., Any], *args: Any, **kwargs: Any) -> Future[Any]:
        done: Future[Any] = Future()
        done.set_result(call(*args, **kwargs))
        return done


def percentiles(run: Callable[[], Any], queries: int) -> tuple[float, float]:
    """p50 and p95 in milliseconds over ``queries`` runs after two warm-ups."""
    for _ in range(2):
        run()
    samples = []
    for _ in range(queries):
        started = time.perf_counter()
        run()
        samples.append((time.perf_counter() - started) * 1000)
    samples.sort()
    return statistics.median(samples), samples[min(len(samples) - 1, int(0.95 * len(samples)))]


def context_cost(
    store: SqliteStore, home: Path, loop: asyncio.AbstractEventLoop, queries: int
) -> tuple[float, float]:
    """p50/p95 of build_context for the asked session's newest user message."""
    ctx = Context(
        settings=Settings(home=home, provider="openai-compatible", tool_mode="native"),
        store=AsyncSqliteStore(store),
        chat_model=ScriptedChatModel(script=["ok"]),
        registry=default_registry(),
        clock=lambda: NOW,
    )
    row = store.conn.execute(
        "SELECT MAX(id) FROM messages WHERE session_id = ? AND role = 'user'", (ASKED,)
    ).fetchone()
    state: dict[str, Any] = {
        "session_id": ASKED,
        "user_message_id": int(row[0]),
        "loops": 0,
        "executed": [],
        "calls": [],
    }
    runtime = SimpleNamespace(context=ctx)
    return percentiles(
        lambda: loop.run_until_complete(build_context(state, runtime)),  # type: ignore[arg-type]
        queries,
    )


def measure(size: int, queries: int) -> dict[str, tuple[float, float]]:
    """Every timed operation on the history of ``size`` messages."""
    home = history(size)
    store = SqliteStore.open_home(home, clock=lambda: NOW)
    settings = Settings(home=home, timezone="UTC")
    question = store.conn.execute(
        "SELECT MAX(id) FROM messages WHERE session_id = ? AND role = 'user'", (ASKED,)
    ).fetchone()[0]
    tool_ctx = ToolContext(  # the tool takes the async interface, as in the app
        settings, AsyncSqliteStore(store), ASKED, clock=lambda: NOW, user_message_id=question
    )
    embedder = open_embedder(settings)
    assert embedder is not None
    random_vectors(store, embedder)
    hybrid_ctx = replace(tool_ctx, embedder=embedder)
    probe = unit_vectors(numpy.random.default_rng(1), 1, embedder.dimensions)[0]
    window = parse_temporal(WINDOW_QUERY, NOW, "UTC")
    loop = asyncio.new_event_loop()

    def raw(query: str, cue: TemporalCue | None = None) -> Callable[[], Any]:
        return lambda: search_messages(store, query, prefer=ASKED, cue=cue, before_id=question)

    def tool(query: str, ctx: ToolContext = tool_ctx) -> Callable[[], Any]:
        return lambda: loop.run_until_complete(memory_search({"query": query}, ctx))

    def made_first(query: str) -> Callable[[], Any]:
        """The path before: the query's vector made, then the tool run with it ready,
        its two searches one after the other."""

        def run() -> Any:
            ready = Ready(embedder, embedder.query(query))
            ctx = replace(hybrid_ctx, embedder=ready)  # type: ignore[arg-type]
            beside, sqlite_recall._BESIDE = sqlite_recall._BESIDE, InOneThread()  # type: ignore[assignment]
            try:
                return loop.run_until_complete(memory_search({"query": query}, ctx))
            finally:
                sqlite_recall._BESIDE = beside

        return run

    def dense(low: int = 0, high: int = question - 1) -> Callable[[], Any]:
        return lambda: nearest(store, embedder.model, probe, low=low, high=high, limit=50)

    assert window is not None and window.start is not None and window.end is not None
    span = window_ids(store, window.start, window.end) or (0, 0)  # the window's id range

    while not dense()():  # the index is read in a thread the first time: wait for it
        time.sleep(0.5)

    results = {
        "memory_search, no time cue": percentiles(tool(COMMON_QUERY), queries),
        "memory_search, rare phrase": percentiles(tool(RARE_QUERY), queries),
        "memory_search, temporal window": percentiles(tool(WINDOW_QUERY), queries),
        "memory_search hybrid, no time cue": percentiles(tool(COMMON_QUERY, hybrid_ctx), queries),
        "memory_search hybrid, rare phrase": percentiles(tool(RARE_QUERY, hybrid_ctx), queries),
        "memory_search hybrid, temporal window": percentiles(
            tool(WINDOW_QUERY, hybrid_ctx), queries
        ),
        "memory_search hybrid, no time cue, one after the other (before)": percentiles(
            made_first(COMMON_QUERY), queries
        ),
        "dense search alone (nearest 50)": percentiles(dense(), queries),
        "dense search alone, temporal window": percentiles(dense(*span), queries),
        "raw search alone (BM25, all sessions)": percentiles(raw(COMMON_QUERY), queries),
        "raw search alone, rare phrase": percentiles(raw(RARE_QUERY), queries),
        "raw search alone, temporal window": percentiles(raw(WINDOW_QUERY, window), queries),
        "naive LIKE scan, common words": percentiles(
            lambda: naive_search(store, COMMON_QUERY), queries
        ),
        "naive LIKE scan, rare phrase": percentiles(
            lambda: naive_search(store, RARE_QUERY), max(5, queries // 5)
        ),
        "memory_sql SELECT (description example)": percentiles(
            lambda: run_sql(store.path, SQL), queries
        ),
        "build_context (asked session)": context_cost(store, home, loop, queries),
    }
    loop.close()
    store.close()
    return results


def table_ratio(
    table: dict[int, dict[str, tuple[float, float]]], sizes: list[int], fast: str, slow: str
) -> str:
    """``fast``'s p50 and p95 as a share of ``slow``'s, per size."""
    return " | ".join(
        f"{s:,}: {table[s][fast][0] / table[s][slow][0]:.2f}× / "
        f"{table[s][fast][1] / table[s][slow][1]:.2f}×"
        for s in sizes
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000", help="comma-separated")
    parser.add_argument("--queries", type=int, default=100, help="timed runs per operation")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]

    small = measure(1000, args.queries)["build_context (asked session)"]
    table = {size: measure(size, args.queries) for size in sizes}
    print(f"\nGenerated histories cached in {CACHE}; p50 / p95 ms over {args.queries} runs.\n")
    header = " | ".join(f"{size:,} msgs p50 / p95" for size in sizes)
    print(f"| operation | {header} |")
    print("|---|" + "---:|" * len(sizes))
    for name in table[sizes[0]]:
        cells = " | ".join(f"{table[s][name][0]:.2f} / {table[s][name][1]:.2f}" for s in sizes)
        print(f"| {name} | {cells} |")
    print("\n| speed-up vs naive scan (p50) | " + " | ".join(f"{s:,}" for s in sizes) + " |")
    print("|---|" + "---:|" * len(sizes))
    for fast, slow in (
        ("raw search alone (BM25, all sessions)", "naive LIKE scan, common words"),
        ("memory_search, no time cue", "naive LIKE scan, common words"),
        ("raw search alone, rare phrase", "naive LIKE scan, rare phrase"),
        ("memory_search, rare phrase", "naive LIKE scan, rare phrase"),
    ):
        cells = " | ".join(f"{table[s][slow][0] / table[s][fast][0]:.1f}×" for s in sizes)
        print(f"| {fast} vs {slow} | {cells} |")
    before = "memory_search hybrid, no time cue, one after the other (before)"
    after = table_ratio(table, sizes, "memory_search hybrid, no time cue", before)
    print(f"\n| hybrid, searches beside each other vs one after the other (p50 / p95) | {after} |")
    windowed = table_ratio(table, sizes, "memory_search hybrid, temporal window", before)
    print(f"| hybrid with a temporal window vs the same baseline (p50 / p95) | {windowed} |")
    largest = sizes[-1]
    big = table[largest]["build_context (asked session)"]
    print(f"\n| build_context | 1,000 msgs | {largest:,} msgs |\n|---|---:|---:|")
    print(f"| p50 / p95 ms | {small[0]:.2f} / {small[1]:.2f} | {big[0]:.2f} / {big[1]:.2f} |")


if __name__ == "__main__":
    main()
