"""Round trips, statements and Python CPU of one Companion turn, on SQLite and Postgres.

Issue 27's third item: a Postgres turn in fewer round trips. The parent starts a Postgres
server (``tests.support.pg_people.migrated_postgres``: Debian's binaries or pgserver's,
loopback, migrated as ``companion db migrate`` does), ``WireCounter`` in front of it (a
loopback TCP proxy that counts what the clients send: a round trip is a burst the client
sends after the server last spoke, a statement an Execute or a simple Query message), and
``tests.support.fake_openai.FakeOpenAIServer`` (no latency). One worker process (spawn:
the parent's proxy and servers are not in its CPU) runs each variant in turn, for
``--rounds`` rounds:

- ``sqlite``: a fresh home's SQLite file (no server: no round trips);
- ``postgres, before``: the Postgres store with ``PgStore.pipeline`` off, each statement,
  BEGIN, set_config and COMMIT a round trip of its own, as before issue 27;
- ``postgres``: the store as it is, a call's BEGIN and person in one round trip and a
  batch of independent statements with its COMMIT in one (psycopg's pipeline mode).

For a variant the worker opens the home with ``graph.setup.ContextFactory`` as the app
does (provider openai-compatible at the fake server, ``tool_mode=commands``; on Postgres
through the proxy, as a person of its own), runs ``--warm`` untimed turns, says it is
ready, and on the go runs ``--turns`` calls of ``graph.runner.run_turn`` in a row in one
session (one model call per turn, the history growing). Per turn: the worker's CPU
(``time.process_time``: every thread of the process), its wall time, and the proxy's
round trips and statements between the go and the report (background work the turns
start is counted too). The figures pool the rounds; the medians are of the rounds.

    python -m bench.round_trips --turns 30 --rounds 3
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import select
import socket
import statistics
import struct
import tempfile
import threading
import time
from dataclasses import dataclass, field
from multiprocessing.queues import Queue
from pathlib import Path

from bench import quiet_environment

quiet_environment()

from bench.scale import worker_flags  # noqa: E402
from graph.runner import run_turn  # noqa: E402
from graph.setup import ContextFactory, release_connections  # noqa: E402
from memory.sqlite.async_store import AsyncSqliteStore  # noqa: E402
from tests.support.fake_openai import FakeOpenAIServer  # noqa: E402

VARIANTS = ("sqlite", "postgres, before", "postgres")
WAIT = 300.0  # seconds the parent waits for the worker's next message
# Requests a client sends before its startup message: SSL, GSS encryption, cancel.
_PRE_STARTUP = {80877103, 80877104, 80877102}
_STATEMENTS = {ord("E"), ord("Q")}  # Execute (extended protocol), Query (simple)


@dataclass
class Counts:
    """What the clients of a ``WireCounter`` sent, after their startup."""

    round_trips: int = 0
    statements: int = 0


class _Frontend:
    """A client's stream of frontend messages, read as it passes (nothing kept)."""

    def __init__(self) -> None:
        self.started = False  # the startup message has gone by
        self._head = b""  # an incomplete message header
        self._skip = 0  # bytes of the current message's body still to pass

    def statements(self, data: bytes) -> int:
        """How many statements ``data`` (the next bytes) starts."""
        found = 0
        view = memoryview(data)
        while view:
            if self._skip:
                taken = min(self._skip, len(view))
                self._skip -= taken
                view = view[taken:]
                continue
            need = 5 if self.started else 8
            taken = min(need - len(self._head), len(view))
            self._head += bytes(view[:taken])
            view = view[taken:]
            if len(self._head) < need:
                break
            if self.started:
                kind, length = self._head[0], struct.unpack("!I", self._head[1:5])[0]
                found += kind in _STATEMENTS
                self._skip = length - 4
            else:
                length, code = struct.unpack("!II", self._head)
                self.started = code not in _PRE_STARTUP
                self._skip = length - 8
            self._head = b""
        return found


class WireCounter:
    """A loopback TCP proxy in front of a Postgres server that counts its clients' round
    trips and statements (``counts``)."""

    def __init__(self, port: int) -> None:
        self._target = ("127.0.0.1", port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._counts = Counts()
        self._lock = threading.Lock()
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def url(self, url: str) -> str:
        """``url`` (the server's, on 127.0.0.1) through the proxy."""
        return url.replace(f":{self._target[1]}/", f":{self.port}/")

    def counts(self) -> Counts:
        """The counts so far."""
        with self._lock:
            return Counts(self._counts.round_trips, self._counts.statements)

    def close(self) -> None:
        """Stop taking connections (open ones end with their clients)."""
        self._closed = True
        self._listener.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            server = socket.create_connection(self._target)
            for end in (client, server):
                end.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=self._relay, args=(client, server), daemon=True).start()

    def _relay(self, client: socket.socket, server: socket.socket) -> None:
        frontend = _Frontend()
        answered = True  # the server spoke last: the client's next burst is a trip
        try:
            while True:
                ready, _, _ = select.select([client, server], [], [])
                if client in ready:
                    data = client.recv(65536)
                    if not data:
                        return
                    server.sendall(data)
                    started = frontend.started
                    found = frontend.statements(data)
                    with self._lock:
                        self._counts.statements += found
                        self._counts.round_trips += started and answered
                    answered = False
                if server in ready:
                    data = server.recv(65536)
                    if not data:
                        return
                    client.sendall(data)
                    answered = True
        except OSError:
            return
        finally:
            client.close()
            server.close()


@dataclass(frozen=True)
class Job:
    """One variant's turns in one home."""

    variant: str
    home: str
    base_url: str
    turns: int
    warm: int
    database_url: str | None  # through the proxy; None: the home's SQLite file


@dataclass(frozen=True)
class Done:
    """What the worker measured over a job's timed turns."""

    cpu: float  # seconds of the process's CPU
    wall: float  # seconds
    errors: list[str]


@dataclass
class Figures:
    """One variant's figures, pooled over its rounds."""

    turns: int = 0
    cpu: float = 0.0
    wall: float = 0.0
    round_trips: int = 0
    statements: int = 0
    errors: list[str] = field(default_factory=list)
    per_round: list[tuple[float, float]] = field(default_factory=list)  # CPU ms, trips


async def run_job(job: Job, go: Queue[object], results: Queue[object]) -> Done:
    """Open the home, warm up, wait for the go, then run the timed turns in a row."""
    from memory.postgres.store import PgStore

    PgStore.pipeline = job.variant != "postgres, before"
    # No background embedding: its batches land in some rounds' CPU and not others'.
    flags = {**worker_flags(job.home, job.base_url, job.database_url), "embedding_model": "off"}
    person = Path(job.home).name
    ctx = await ContextFactory(flags, {"COMPANION_API_KEY": "bench"}, person=person)()
    errors: list[str] = []
    try:
        for i in range(job.warm):
            warm = await run_turn(ctx, "warm-up", f"warm up {i}")
            if warm.error:
                raise RuntimeError(f"warm-up turn failed: {warm.error}")
        results.put("ready")
        if await asyncio.to_thread(go.get) != "go":
            raise RuntimeError("expected the go")
        cpu, wall = time.process_time(), time.perf_counter()
        for i in range(job.turns):
            result = await run_turn(ctx, "timed", f"message {i}")
            if result.error:
                errors.append(f"{job.variant}#{i}: {result.error}")
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    finally:
        if isinstance(ctx.store, AsyncSqliteStore):
            await ctx.store.close()
        else:
            await release_connections()
    return Done(cpu, wall, errors)


def worker(jobs: Queue[object], go: Queue[object], results: Queue[object]) -> None:
    """The worker process: run jobs until told to stop (``None``)."""
    while isinstance(job := jobs.get(), Job):
        try:
            results.put(asyncio.run(run_job(job, go, results)))
        except Exception as exc:  # the parent reports it instead of waiting forever
            results.put(Done(0.0, 0.0, [f"{job.variant}: {exc!r}"]))


def measure(
    figures: Figures,
    job: Job,
    queues: tuple[Queue[object], Queue[object], Queue[object]],
    counter: WireCounter,
) -> None:
    """Run one job on the worker and add what it measured to ``figures``."""
    jobs, go, results = queues
    jobs.put(job)
    message = results.get(timeout=WAIT)
    if isinstance(message, Done):  # it failed before it was ready
        figures.errors += message.errors
        return
    before = counter.counts()
    go.put("go")
    done = results.get(timeout=WAIT)
    assert isinstance(done, Done), done
    after = counter.counts()
    trips = after.round_trips - before.round_trips
    figures.turns += job.turns
    figures.cpu += done.cpu
    figures.wall += done.wall
    figures.round_trips += trips
    figures.statements += after.statements - before.statements
    figures.errors += done.errors
    figures.per_round.append((done.cpu * 1000 / job.turns, trips / job.turns))


def print_figures(runs: dict[str, Figures], turns: int, rounds: int) -> None:
    """The variants as a Markdown table, and the first few errors."""
    print(
        f"\n{turns} turns in a row per round, {rounds} rounds, one model call per turn "
        "(fake endpoint, no latency); per turn:\n"
    )
    print(
        "| store | turns | Python CPU (ms) | median of rounds (ms) | wall (ms) "
        "| round trips | statements | errors |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, f in runs.items():
        n = max(f.turns, 1)
        median = statistics.median(cpu for cpu, _ in f.per_round) if f.per_round else 0.0
        print(
            f"| {name} | {f.turns} | {f.cpu * 1000 / n:.1f} | {median:.1f} "
            f"| {f.wall * 1000 / n:.1f} | {f.round_trips / n:.1f} | {f.statements / n:.1f} "
            f"| {len(f.errors)} |"
        )
    for error in [e for f in runs.values() for e in f.errors][:5]:
        print(f"\nerror: {error}")


def main(argv: list[str] | None = None) -> dict[str, Figures]:
    """Measure every variant, print the table, and return the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=30, help="timed, in a row, per round")
    parser.add_argument("--warm", type=int, default=3, help="untimed turns first")
    parser.add_argument("--rounds", type=int, default=3, help="each variant, this many times")
    args = parser.parse_args(argv)

    from tests.support.pg_people import migrated_postgres  # psycopg: the postgres extra

    spawn = multiprocessing.get_context("spawn")
    queues: tuple[Queue[object], Queue[object], Queue[object]] = (
        spawn.Queue(),
        spawn.Queue(),
        spawn.Queue(),
    )
    runs = {variant: Figures() for variant in VARIANTS}
    with (
        tempfile.TemporaryDirectory(prefix="companion-trips-") as folder,
        FakeOpenAIServer(latency=0.0) as model,
        migrated_postgres() as database,
    ):
        counter = WireCounter(database.port)
        process = spawn.Process(target=worker, args=queues, daemon=True)
        process.start()
        try:
            for index in range(args.rounds):
                for variant in VARIANTS:
                    home = Path(folder) / f"{variant.replace(', ', '-')}-{index}"
                    home.mkdir()
                    url = None if variant == "sqlite" else counter.url(database.url)
                    job = Job(variant, str(home), model.url, args.turns, args.warm, url)
                    measure(runs[variant], job, queues, counter)
        finally:
            queues[0].put(None)
            process.join(timeout=WAIT)
            counter.close()
    print_figures(runs, args.turns, args.rounds)
    return runs


if __name__ == "__main__":
    main()
