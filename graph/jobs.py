"""Background work after turns: quiet conversation becomes segments, never in the way.

``schedule_segments`` cuts a session's closed stretches into segments after its turn;
``schedule_catch_up`` summarises every session's segments left unsummarised, a bounded batch
at a time, and with ``every`` sweeps again at that interval; several processes on one
database sweep once, whoever holds the lease (``AsyncStore.claim``). ``catch_up_once``
starts that sweep the first time this process opens a database; ``settle`` waits for a
session's refreshes, ``settle_embedding`` for a store's embedding. ``schedule_embedding``
gives recall its vectors: after each turn (and from ``catch_up_once``) it embeds every
message with no vector of the context's embedder, a batch at a time in a thread, once per
database (the lease); the first time in a process it forgets other models' vectors, so a
changed model re-embeds everything.
A failure is logged, never raised: the next turn retries (recall stays lexical).
``PROCESS`` names this process in the database (running turns, job leases).
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import uuid
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from typing import Any

from graph.context import Context
from memory import AsyncStore
from providers import Embedder, EmbeddingUnavailable

log = logging.getLogger("companion.jobs")

# This process, as named in the database (running turns, job leases): host, pid, a token.
PROCESS = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
CATCH_UP_JOB = "segments:catch-up"
LEASE_SECONDS = 60.0  # the shortest lease of the sweep: a dead holder's ends this soon
SWEEP_SECONDS = 300.0
_CAUGHT_UP: set[str] = set()  # databases this process is watching for quiet segments
EMBED_JOB = "vectors:embed"
EMBED_BATCH = 32  # messages per embedder call (batching is what makes a backlog fast)
_MODEL_CHECKED: set[tuple[str, str]] = set()  # (database, model) whose others were dropped
_BACKGROUND: set[asyncio.Task[None]] = set()
# Turns running in this process: the embedding waits for none (``quiet``), at most
# EMBED_PATIENCE seconds a batch, so it takes no core from a turn while others run.
_RUNNING_TURNS = 0
EMBED_PATIENCE = 10.0
QUIET_POLL = 0.05


@contextmanager
def turn_running() -> Iterator[None]:
    """Mark a turn as running in this process while the block runs (``graph.runner``)."""
    global _RUNNING_TURNS
    _RUNNING_TURNS += 1
    try:
        yield
    finally:
        _RUNNING_TURNS -= 1


async def quiet(patience: float = EMBED_PATIENCE) -> None:
    """Return once no turn runs in this process, or after ``patience`` seconds."""
    deadline = asyncio.get_running_loop().time() + patience
    while _RUNNING_TURNS and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(QUIET_POLL)


def _segments_task_name(session_id: str) -> str:
    return f"segments:{session_id}"


def schedule_segments(ctx: Context, session_id: str, *, force: bool = False) -> asyncio.Task[None]:
    """Cut the session's closed stretches into segments in the background (never blocks).

    ``force`` also closes the newest span: the person left this session for another, so
    what they said there becomes a segment now rather than after 30 quiet minutes.
    """

    async def refresh() -> None:
        try:
            await ctx.store.refresh_segments(
                session_id, ctx.summarize, force=force, tz=ctx.settings.timezone
            )
        except Exception:  # episodic memory is best effort; the next turn retries
            log.exception("segment refresh failed for session %s", session_id)

    return _background(refresh(), _segments_task_name(session_id))


def schedule_catch_up(ctx: Context, *, every: float | None = None) -> asyncio.Task[None]:
    """Summarise every session's segments left unsummarised, in the background, a bounded
    batch at a time so no single step holds the store for long. With ``every``, sweep
    again at that interval for as long as the process runs: a chat that goes quiet for
    30 minutes becomes a segment even if no other turn comes."""

    async def catch_up() -> None:
        lease = max(every or 0.0, LEASE_SECONDS)
        while True:
            try:
                # Several app processes on one database sweep once: whoever holds the lease.
                if await ctx.store.claim(CATCH_UP_JOB, PROCESS, lease):
                    while await ctx.store.catch_up_segments(
                        ctx.summarize, tz=ctx.settings.timezone
                    ):
                        await asyncio.sleep(0)
            except Exception:
                log.exception("catching up on unsummarised conversations failed")
            schedule_embedding(ctx)  # messages another process stored, or a failed try
            if every is None:
                return
            await asyncio.sleep(every)

    return _background(catch_up(), "segments:catch-up")


def catch_up_once(ctx: Context) -> asyncio.Task[None] | None:
    """Start ``schedule_catch_up`` (sweeping every ``SWEEP_SECONDS``) the first time this
    process opens the database (the app's first page load, a terminal chat); later calls
    do nothing."""
    key = ctx.store.location
    if key in _CAUGHT_UP:
        return None
    _CAUGHT_UP.add(key)
    return schedule_catch_up(ctx, every=SWEEP_SECONDS)


async def embed_batch(store: AsyncStore, embedder: Embedder, limit: int = EMBED_BATCH) -> int:
    """Embed up to ``limit`` of the oldest messages with no vector of ``embedder``'s model
    (the model call in a thread); how many (0: all done). EmbeddingUnavailable passes up."""
    rows = await store.unembedded(embedder.model, limit)
    if not rows:
        return 0
    vectors = await asyncio.to_thread(embedder.passages, [text for _, text in rows])
    if vectors.shape != (len(rows), embedder.dimensions):
        raise EmbeddingUnavailable(
            f"{embedder.model} returned vectors of shape {vectors.shape}, "
            f"not ({len(rows)}, {embedder.dimensions})"
        )
    await store.add_vectors(
        embedder.model, [(i, v) for (i, _), v in zip(rows, vectors, strict=True)]
    )
    return len(rows)


async def forget_other_models(store: AsyncStore, embedder: Embedder) -> int:
    """Once per database and model in this process: drop every other model's vectors (a
    changed model re-embeds from scratch); how many went."""
    key = (store.location, embedder.model)
    if key in _MODEL_CHECKED:
        return 0
    dropped = await store.drop_vectors(except_model=embedder.model)
    _MODEL_CHECKED.add(key)
    if dropped:
        log.info("dropped %d vectors of other models than %s", dropped, embedder.model)
    return dropped


async def reindex(
    store: AsyncStore, embedder: Embedder, progress: Callable[[int, int], None]
) -> tuple[int, int]:
    """``companion memory reindex``: forget other models' vectors, then embed every
    message still without one, calling ``progress(done, total)`` after each batch; each
    batch is stored as it is done, so an interrupted run resumes where it stopped.
    (done, total) at the end. EmbeddingUnavailable passes up."""
    await forget_other_models(store, embedder)
    done, total = await store.vector_status(embedder.model)
    progress(done, total)
    while added := await embed_batch(store, embedder):
        done += added
        progress(done, total)
    return done, total


def _embedding_task_name(location: str) -> str:
    return f"vectors:{location}"


def schedule_embedding(ctx: Context) -> asyncio.Task[None] | None:
    """Embed every message still without a vector, in the background (None: no embedder,
    or this process is at it already). Never on a turn's path, and each batch waits while
    turns run in this process (``quiet``: 32 sessions at once lost a fifth of their
    throughput to it on 2 cores); a failure is logged with its reason and recall stays
    lexical until the next try."""
    embedder, store = ctx.embedder, ctx.store
    name = _embedding_task_name(store.location)
    if embedder is None or any(task.get_name() == name for task in _BACKGROUND):
        return None

    async def embed() -> None:
        try:
            if not await store.claim(EMBED_JOB, PROCESS, LEASE_SECONDS):
                return
            await forget_other_models(store, embedder)
            await quiet()
            while await embed_batch(store, embedder):
                await store.claim(EMBED_JOB, PROCESS, LEASE_SECONDS)
                await quiet()
        except EmbeddingUnavailable as error:
            log.warning("embedding messages failed (%s); recall stays lexical", error)
        except Exception:
            log.exception("embedding messages failed")

    return _background(embed(), name)


def _background(work: Coroutine[Any, Any, None], name: str) -> asyncio.Task[None]:
    task = asyncio.get_running_loop().create_task(work, name=name)
    _BACKGROUND.add(task)
    task.add_done_callback(_BACKGROUND.discard)
    return task


async def settle_embedding(location: str) -> None:
    """Wait for the embedding of the store at ``location`` (``AsyncStore.location``), if
    this process is at it: before that store closes (an eval case's), so the job does not
    find its threads gone."""
    name = _embedding_task_name(location)
    mine = [task for task in _BACKGROUND if task.get_name() == name]
    await asyncio.gather(*mine, return_exceptions=True)


async def settle(session_id: str) -> None:
    """Wait for the segment refreshes that the session's turns started (no one else's)."""
    name = _segments_task_name(session_id)
    mine = [task for task in _BACKGROUND if task.get_name() == name]
    await asyncio.gather(*mine, return_exceptions=True)
