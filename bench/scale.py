"""Companion's turn path under load from several OS processes on one shared database.

Two scale-out paths: several app processes over one COMPANION_HOME, each writing its
turns to the same SQLite file (WAL, busy timeout), the path on one machine; and several
app processes on one Postgres database (COMPANION_DATABASE_URL), the path across
machines. The Postgres server is ``tests.support.postgres.PostgresServer`` (Debian's
binaries, a temp folder, loopback, ``fsync=off``), migrated as ``companion db migrate``
does (``tests.support.pg_people.migrated_postgres``); each process reaches it through
its ``memory.postgres.pool.LoopPools`` (at most ``MAX_SIZE`` connections), as the app does.

The parent starts ``tests.support.fake_openai.FakeOpenAIServer(latency=...)`` (a real HTTP
server on 127.0.0.1 that answers every chat call with its default text after ``latency``
seconds) and ``--processes`` worker processes (multiprocessing, "spawn"), started once
and reused by both runs. For a run, each worker opens the run's home with
``graph.setup.ContextFactory`` as the app does (provider openai-compatible,
``base_url=server.url``, ``tool_mode=commands``; on Postgres with the database's
URL), runs one untimed warm-up turn in a session of its own (the graph compiled, the
HTTP client opened), says it is ready, and on the parent's go runs
``--sessions`` sessions at once with asyncio, each ``--turns`` calls of
``graph.runner.run_turn`` in a row (one model call per turn). It reports every turn's
latency, every error (an exception, or ``TurnResult.error``) and its session ids.

Three runs, each against a fresh home: (a) one worker (the SQLite baseline), (b) every
worker on one SQLite file, (c) every worker on the Postgres database, each round as a
person of its own (a fresh person's rows are as empty as a fresh home's file;
``--no-postgres`` leaves (c) out). Wall time runs from the go to the last report. They
take turns for ``--rounds`` rounds (one round's ratio moves with machine noise); a run's
figures pool its rounds. Per run: turns, wall time, throughput, p50 and p95 turn
latency, errors, and messages lost (two per turn, the user's and the answer, minus what
the database holds for those sessions, read back through the person's store; must be
0), the workers' CPU per turn (every thread of each worker process, from the go to its
last turn), and on Postgres the round trips per turn to the database (counted by
``bench.round_trips.WireCounter``, a proxy in front of the server; ``--no-round-trips``
connects directly). Then each run's throughput over (a)'s, pooled and per round.

The model bounds a run from below: it cannot be shorter than ``turns × latency`` (the
ideal wall time printed), when every session's calls overlap perfectly; the ideal ratio
is the number of processes. What else bounds it is the turn path's CPU (each worker runs
its sessions on one core, and the workers and the server's threads share the machine's
cores), SQLite's one writer lock, and on Postgres the server's own processes (on the
same cores here) and each process's pool. ``--latency 0`` takes the model away, to see
how much of a turn that is.

    python -m bench.scale --processes 2 --sessions 64 --turns 10 --latency 0.2 --rounds 3
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import math
import multiprocessing
import os
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from multiprocessing.context import SpawnProcess
from multiprocessing.queues import Queue
from pathlib import Path
from typing import TYPE_CHECKING

from bench import quiet_environment

quiet_environment()

from graph.context import Context  # noqa: E402
from graph.runner import run_turn  # noqa: E402
from graph.setup import OWNER, ContextFactory, collect_less, release_connections  # noqa: E402
from memory.sqlite.async_store import AsyncSqliteStore  # noqa: E402
from memory.sqlite.store import SqliteStore  # noqa: E402
from tests.support.fake_openai import FakeOpenAIServer  # noqa: E402

if TYPE_CHECKING:
    from bench.round_trips import WireCounter  # which imports this module's worker_flags

MESSAGES_PER_TURN = 2  # the user's message and the answer
WAIT = 300.0  # seconds the parent waits for any one message of a worker before it gives up
GO = "go"


@dataclass(frozen=True)
class Job:
    """One run's share of a worker: its sessions in one home."""

    home: str
    base_url: str
    sessions: int
    turns: int
    database_url: str | None = None  # the shared Postgres database; None: the home's file
    person: str = OWNER  # whose rows they are, on Postgres


@dataclass(frozen=True)
class Ready:
    """A worker has opened the home and warmed up; it waits for the go."""

    worker: int


@dataclass(frozen=True)
class Report:
    """What one worker did in a run."""

    worker: int
    sessions: list[str]  # the session ids it ran (the warm-up's excluded)
    latencies: list[float]  # seconds of each turn that returned
    errors: list[str]  # exceptions and TurnResult errors, one line each
    cpu: float = 0.0  # the worker process's CPU seconds from the go to its last turn


@dataclass
class Figures:
    """One run's figures, pooled over its rounds."""

    processes: int
    turns: int = 0  # turns asked for, over every worker and round
    wall: float = 0.0  # seconds from each round's go to its last report, summed
    model_calls: int = 0  # chat requests the server received in those times
    latencies: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    lost: int = 0  # messages expected in the database minus messages it holds
    rounds: list[float] = field(default_factory=list)  # each round's throughput
    cpu: float = 0.0  # the workers' CPU seconds, summed
    round_trips: int | None = None  # to the database server (Postgres), summed

    def per_turn(self, total: float | None, scale: float = 1.0) -> str:
        """``total`` per turn asked, as a table cell ("–" when not measured)."""
        return "–" if total is None or not self.turns else f"{total * scale / self.turns:.1f}"

    @property
    def throughput(self) -> float:
        """Turns per second."""
        return self.turns / self.wall


def percentile(values: list[float], share: float) -> float:
    """The nearest-rank percentile of some values (``share`` from 0 to 1); NaN for none."""
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(share * len(ordered)) - 1))]


async def session(ctx: Context, session_id: str, turns: int) -> tuple[list[float], list[str]]:
    """One session's turns in a row: their latencies, and the errors seen."""
    latencies: list[float] = []
    errors: list[str] = []
    for i in range(turns):
        started = time.perf_counter()
        try:
            result = await run_turn(ctx, session_id, f"message {i} of {session_id}")
        except Exception as exc:  # a bench counts failures instead of stopping at the first
            errors.append(f"{session_id}#{i}: {exc!r}")
            continue
        latencies.append(time.perf_counter() - started)
        if result.error:
            errors.append(f"{session_id}#{i}: {result.error}")
    return latencies, errors


def worker_flags(home: str, base_url: str, database_url: str | None) -> dict[str, str]:
    """A bench worker's command-line flags: its home, the fake endpoint in commands mode,
    and the shared Postgres database when there is one."""
    flags = {
        "home": home,
        "provider": "openai-compatible",
        "base_url": base_url,
        "chat_model": "fake-chat",
        "tool_mode": "commands",
    }
    if database_url is not None:
        flags["database_url"] = database_url
    return flags


async def run_job(index: int, job: Job, jobs: Queue[object], results: Queue[object]) -> Report:
    """Open the home, warm up, wait for the go, then run every session at once."""
    flags = worker_flags(job.home, job.base_url, job.database_url)
    env = {"COMPANION_API_KEY": "bench"}
    ctx = await ContextFactory(flags, env, person=job.person)()
    collect_less()  # as each served process does once it serves
    try:
        warm = await run_turn(ctx, f"warmup-{index}", "warm up")
        if warm.error:
            raise RuntimeError(f"warm-up turn failed: {warm.error}")
        results.put(Ready(index))
        if await asyncio.to_thread(jobs.get) != GO:
            raise RuntimeError("expected the go")
        ids = [f"p{index}-s{j}" for j in range(job.sessions)]
        cpu = time.process_time()  # every thread of the worker: the loop, the store's
        outcomes = await asyncio.gather(*(session(ctx, name, job.turns) for name in ids))
        cpu = time.process_time() - cpu
    finally:
        if isinstance(ctx.store, AsyncSqliteStore):
            await ctx.store.close()
        else:
            await release_connections()
    latencies = [seconds for done, _ in outcomes for seconds in done]
    errors = [error for _, seen in outcomes for error in seen]
    return Report(index, ids, latencies, errors, cpu)


def worker(index: int, jobs: Queue[object], results: Queue[object]) -> None:
    """A worker process: run jobs until told to stop (``None``)."""
    while isinstance(job := jobs.get(), Job):
        try:
            report = asyncio.run(run_job(index, job, jobs, results))
        except Exception:
            report = Report(index, [], [], [f"worker {index}: {traceback.format_exc()}"])
        results.put(report)


@dataclass
class Workers:
    """The worker processes, each with its own job queue, and their one results queue."""

    processes: list[SpawnProcess]
    jobs: list[Queue[object]]
    results: Queue[object]

    @classmethod
    def start(cls, count: int) -> Workers:
        """Spawn ``count`` workers (each imports Companion once, for every run)."""
        spawn = multiprocessing.get_context("spawn")
        results: Queue[object] = spawn.Queue()
        jobs: list[Queue[object]] = [spawn.Queue() for _ in range(count)]
        processes = [
            spawn.Process(target=worker, args=(i, jobs[i], results), daemon=True)
            for i in range(count)
        ]
        for process in processes:
            process.start()
        return cls(processes, jobs, results)

    def stop(self) -> None:
        """Tell every worker to stop, and wait for them."""
        for queue in self.jobs:
            queue.put(None)
        for process in self.processes:
            process.join(timeout=WAIT)

    def run(
        self, count: int, job: Job, server: FakeOpenAIServer, counter: WireCounter | None = None
    ) -> tuple[float, int, list[Report], int | None]:
        """Run ``job`` on the first ``count`` workers at once: wall seconds from the go to
        the last report, model calls in that time, the reports, and the round trips to
        the database ``counter`` counted in that time (None without one)."""
        for queue in self.jobs[:count]:
            queue.put(job)
        ready: list[int] = []
        reports: list[Report] = []
        while len(ready) + len(reports) < count:  # a worker that failed to start reports
            match self.results.get(timeout=WAIT):
                case Ready(worker=index):
                    ready.append(index)
                case Report() as report:
                    reports.append(report)
        calls = len(server.requests)
        trips = counter.counts().round_trips if counter else 0
        started = time.perf_counter()
        for index in ready:
            self.jobs[index].put(GO)
        for _ in ready:
            message = self.results.get(timeout=WAIT)
            assert isinstance(message, Report), message
            reports.append(message)
        wall = time.perf_counter() - started
        trips = counter.counts().round_trips - trips if counter else None
        return wall, len(server.requests) - calls, reports, trips


def fresh_home(home: Path) -> Path:
    """A new home with its database created and migrated (before the workers open it)."""
    if (home / "companion.db").exists():
        raise SystemExit(f"{home} already holds a database: give a fresh --home")
    SqliteStore.open_home(home).close()
    return home


def held_messages(job: Job, sessions: list[str]) -> int:
    """How many messages the run's database holds for those sessions."""
    if job.database_url is None:
        store = SqliteStore.open_home(Path(job.home))
        try:
            return sum(store.count_messages(s) for s in sessions)
        finally:
            store.close()
    return asyncio.run(_held_on_postgres(job.database_url, job.person, sessions))


async def _held_on_postgres(url: str, person: str, sessions: list[str]) -> int:
    from memory.postgres.store import PgStore

    store = await PgStore.open(url, person)
    try:
        return sum([await store.count_messages(s) for s in sessions])
    finally:
        await store.close()


def measure(
    workers: Workers,
    figures: Figures,
    sessions: int,
    turns: int,
    home: Path,
    server: FakeOpenAIServer,
    database_url: str | None = None,
    counter: WireCounter | None = None,
) -> None:
    """One round of a run in a fresh home (on Postgres: a fresh person, named after the
    home), and the messages its database holds, added to the run's figures."""
    if database_url is None:
        job = Job(str(fresh_home(home)), server.url, sessions, turns)
    else:
        home.mkdir(parents=True)  # the person's media folder goes here; their rows are new
        job = Job(str(home), server.url, sessions, turns, database_url, person=home.name)
    wall, calls, reports, trips = workers.run(figures.processes, job, server, counter)
    if trips is not None:
        figures.round_trips = (figures.round_trips or 0) + trips
    asked = figures.processes * sessions * turns
    figures.turns += asked
    figures.wall += wall
    figures.model_calls += calls
    figures.rounds.append(asked / wall)
    for report in reports:
        figures.latencies += report.latencies
        figures.errors += report.errors
        figures.cpu += report.cpu
    held = held_messages(job, [s for report in reports for s in report.sessions])
    figures.lost += asked * MESSAGES_PER_TURN - held


def print_figures(
    runs: dict[str, Figures], sessions: int, turns: int, latency: float, rounds: int
) -> None:
    """The runs as a Markdown table, the ratios, and the first few errors."""
    processes = max(figures.processes for figures in runs.values())
    databases = (
        "one SQLite database, then one Postgres database"
        if len(runs) > 2
        else ("one SQLite database")
    )
    print(
        f"\n{processes} processes × {sessions} sessions × {turns} turns on {databases}, "
        f"model latency {latency * 1000:.0f} ms per call (one call per turn), "
        f"{rounds} rounds, {os.cpu_count()} CPU cores.\n"
    )
    print(
        "| run | processes | turns | model calls | wall (s) | ideal wall (s) "
        "| throughput (turns/s) | p50 turn (s) | p95 turn (s) | errors | messages lost "
        "| CPU per turn (ms) | database round trips per turn |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, figures in runs.items():
        print(
            f"| {name} | {figures.processes} | {figures.turns} | {figures.model_calls} "
            f"| {figures.wall:.2f} | {rounds * turns * latency:.2f} | {figures.throughput:.1f} "
            f"| {percentile(figures.latencies, 0.50):.3f} "
            f"| {percentile(figures.latencies, 0.95):.3f} "
            f"| {len(figures.errors)} | {figures.lost} "
            f"| {figures.per_turn(figures.cpu, 1000)} | {figures.per_turn(figures.round_trips)} |"
        )
    (first, baseline), *others = runs.items()
    print()
    for name, scaled in others:
        print(
            f"throughput {name.split()[0]} / {first.split()[0]}: "
            f"{scaled.throughput / baseline.throughput:.2f} "
            f"(ideal {scaled.processes / baseline.processes:.0f}); per round: "
            + ", ".join(f"{b / a:.2f}" for a, b in zip(baseline.rounds, scaled.rounds, strict=True))
        )
    for error in [error for figures in runs.values() for error in figures.errors][:5]:
        print(f"\nerror: {error}")


def main(argv: list[str] | None = None) -> dict[str, Figures]:
    """Run the baseline and the scale-out runs, print their figures, and return them."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--sessions", type=int, default=64, help="concurrent, per process")
    parser.add_argument("--turns", type=int, default=10, help="in a row, per session")
    parser.add_argument("--latency", type=float, default=0.2, help="model seconds per call")
    parser.add_argument("--rounds", type=int, default=3, help="each run, this many times")
    parser.add_argument("--home", type=Path, help="folder for the runs' homes (default: temp)")
    parser.add_argument(
        "--postgres",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="run (c) on a Postgres server started for the bench (needs postgresql)",
    )
    parser.add_argument(
        "--round-trips",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="count (c)'s round trips through bench.round_trips' proxy (its relay threads "
        "run in this process, beside the workers)",
    )
    args = parser.parse_args(argv)

    with (
        tempfile.TemporaryDirectory(prefix="companion-bench-") as folder,
        FakeOpenAIServer(latency=args.latency) as server,
        contextlib.ExitStack() as stack,
    ):
        root = args.home.expanduser() if args.home else Path(folder)
        runs = {
            "(a) 1 process, SQLite baseline": Figures(1),
            f"(b) {args.processes} processes, one SQLite database": Figures(args.processes),
        }
        plan: list[tuple[str, str | None]] = [("baseline", None), ("scale-out", None)]
        counter: WireCounter | None = None
        if args.postgres:
            from tests.support.pg_people import migrated_postgres  # psycopg: postgres extra

            runs[f"(c) {args.processes} processes, one Postgres database"] = Figures(args.processes)
            database = stack.enter_context(migrated_postgres())
            url = database.url
            if args.round_trips:
                from bench.round_trips import WireCounter

                counter = WireCounter(database.port)
                stack.callback(counter.close)
                url = counter.url(url)
            plan.append(("postgres", url))
        workers = Workers.start(args.processes)
        try:
            for index in range(args.rounds):
                for (kind, url), figures in zip(plan, runs.values(), strict=True):
                    home = root / f"{kind}-{index}"
                    counted = counter if kind == "postgres" else None
                    measure(workers, figures, args.sessions, args.turns, home, server, url, counted)
        finally:
            workers.stop()
    print_figures(runs, args.sessions, args.turns, args.latency, args.rounds)
    return runs


if __name__ == "__main__":
    main()
