"""memory_search with an embedder (tests/support/embedders.py) and the background jobs
that give messages their vectors: the budget, failures falling back to lexical with the
reason logged, embedding after a turn, ``reindex`` resuming and re-embedding."""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import replace
from datetime import timedelta
from typing import Any

import numpy
import pytest

from config.settings import Settings
from graph import jobs
from memory import Message, RecalledSegment, RecalledTurn, Recollection, Segment
from memory.rules.budget import CHAR_BUDGET, TURN_BUDGET
from memory.sqlite.async_store import AsyncSqliteStore
from memory.sqlite.store import SqliteStore
from providers import EmbeddingUnavailable
from tests.conftest import FIXED_NOW
from tests.support.embedders import FakeEmbedder
from tools import memory_search as tool
from tools.base import ToolContext
from tools.registry import ToolRegistry


@pytest.fixture(autouse=True)
def fresh_model_checks() -> None:
    jobs._MODEL_CHECKED.clear()


def history(store: SqliteStore, count: int) -> None:
    for i in range(count):
        role = "user" if i % 2 == 0 else "assistant"
        text = f"we talked about the garden and the roses, number {i} " + "lorem ipsum " * 30
        store.add_message("old", role, text, created_at=FIXED_NOW - timedelta(days=60, minutes=-i))
    store.add_message(
        "pets", "user", "Mochi hides whenever I vacuum", created_at=FIXED_NOW - timedelta(days=90)
    )


async def search(ctx: ToolContext, query: str) -> tuple[dict[str, Any], str]:
    question = await ctx.store.add_message("now", "user", query)
    turn = replace(ctx, session_id="now", user_message_id=question.id)
    result = await ToolRegistry(tool.TOOLS).execute("memory_search", {"query": query}, turn)
    await ctx.store.delete_messages_from("now", question.id)  # the next search's past
    return result, tool.format_search(result)


def context(async_store: AsyncSqliteStore, embedder: FakeEmbedder | None) -> ToolContext:
    settings = Settings(home=async_store.blocking.path.parent, timezone="UTC")
    return ToolContext(settings, async_store, "now", lambda: FIXED_NOW, embedder=embedder)


async def embed_everything(async_store: AsyncSqliteStore, embedder: FakeEmbedder) -> None:
    await jobs.reindex(async_store, embedder, lambda done, total: None)


async def test_a_paraphrase_is_found_once_the_messages_have_vectors(
    store: SqliteStore, async_store: AsyncSqliteStore
) -> None:
    history(store, 30)
    embedder = FakeEmbedder()
    ctx = context(async_store, embedder)
    before, _ = await search(ctx, "what is my cat scared of")
    assert before["searched"] == "lexical"  # no vectors yet: lexical, never an error
    assert all("Mochi" not in t["content"] for t in before["raw_messages"])
    await embed_everything(async_store, embedder)
    after, text = await search(ctx, "what is my cat scared of")
    assert after["searched"] == "hybrid"
    assert after["raw_messages"][0]["content"] == "Mochi hides whenever I vacuum"
    assert "you said: Mochi hides whenever I vacuum" in text


@pytest.mark.parametrize("query", ["garden roses " * 1000, "庭のバラ " * 2000, "🌹" * 10_000])
async def test_a_long_or_foreign_query_stays_within_budget(
    store: SqliteStore, async_store: AsyncSqliteStore, query: str
) -> None:
    history(store, 60)
    embedder = FakeEmbedder()
    await embed_everything(async_store, embedder)
    started = time.perf_counter()
    result, text = await search(context(async_store, embedder), query[:10_000])
    assert time.perf_counter() - started < 2.0
    assert len(result["raw_messages"]) <= TURN_BUDGET
    assert len(text) <= CHAR_BUDGET


async def test_the_budget_keeps_facts_first_and_whole_turns(
    store: SqliteStore, async_store: AsyncSqliteStore
) -> None:
    history(store, 60)
    result, text = await search(context(async_store, None), "garden roses")
    assert 0 < len(result["raw_messages"]) < TURN_BUDGET  # 4,000 characters ran out first
    assert len(text) <= CHAR_BUDGET
    assert all(t["content"].endswith("…") for t in result["raw_messages"])  # each clipped, not cut


@pytest.mark.parametrize(
    ("embedder", "reason"),
    [
        (FakeEmbedder(fail="endpoint refused the connection"), "endpoint refused the connection"),
        (FakeEmbedder(wrong_dimension=True), "not (64,)"),
        (FakeEmbedder(delay=3.0), "took over 2.0 s"),
    ],
    ids=["down", "wrong-dimension", "slow"],
)
async def test_an_embedder_failure_falls_back_to_lexical_and_says_why(
    store: SqliteStore,
    async_store: AsyncSqliteStore,
    caplog: pytest.LogCaptureFixture,
    embedder: FakeEmbedder,
    reason: str,
) -> None:
    history(store, 10)
    await embed_everything(async_store, FakeEmbedder())
    with caplog.at_level(logging.WARNING, logger="companion"):
        result, _ = await search(context(async_store, embedder), "garden roses")
    assert result["searched"] == "lexical"
    assert result["raw_messages"]
    assert reason in caplog.text and "recall is lexical" in caplog.text


class Interrupting(FakeEmbedder):
    """Fails (as a dropped endpoint would) once it has embedded ``budget`` texts."""

    def __init__(self, budget: int) -> None:
        super().__init__()
        self.budget = budget

    def passages(self, texts: Any) -> numpy.ndarray:
        if self.calls + len(texts) > self.budget:
            raise EmbeddingUnavailable("connection reset")
        return super().passages(texts)


async def test_reindex_resumes_where_it_stopped(
    store: SqliteStore, async_store: AsyncSqliteStore
) -> None:
    history(store, 99)  # 100 messages: three full batches, then a short one
    first = Interrupting(budget=2 * jobs.EMBED_BATCH)
    seen: list[tuple[int, int]] = []
    with pytest.raises(EmbeddingUnavailable):
        await jobs.reindex(async_store, first, lambda done, total: seen.append((done, total)))
    assert seen == [(0, 100), (32, 100), (64, 100)]
    assert await async_store.vector_status(first.model) == (64, 100)  # kept
    again = FakeEmbedder()
    assert await jobs.reindex(async_store, again, lambda done, total: None) == (100, 100)
    assert again.calls == 36  # only what was missing


async def test_a_changed_model_re_embeds_everything(
    store: SqliteStore, async_store: AsyncSqliteStore
) -> None:
    history(store, 9)
    await embed_everything(async_store, FakeEmbedder("fake:one"))
    assert await async_store.vector_status("fake:one") == (10, 10)
    other = FakeEmbedder("fake:two")
    assert await jobs.reindex(async_store, other, lambda done, total: None) == (10, 10)
    assert other.calls == 10
    assert await async_store.vector_status("fake:one") == (0, 10)


async def test_after_a_turn_the_new_messages_get_vectors_in_the_background(
    store: SqliteStore, async_store: AsyncSqliteStore, caplog: pytest.LogCaptureFixture
) -> None:
    history(store, 9)
    embedder = FakeEmbedder()
    # graph.jobs reads only the context's store and embedder
    ctx: Any = type("Ctx", (), {"store": async_store, "embedder": embedder})()
    task = jobs.schedule_embedding(ctx)
    assert task is not None
    assert jobs.schedule_embedding(ctx) is None  # one at a time per database
    await task
    assert await async_store.vector_status(embedder.model) == (10, 10)
    broken = type(
        "Ctx", (), {"store": async_store, "embedder": FakeEmbedder("fake:x", fail="no weights")}
    )()
    store.add_message("now", "user", "and one more")
    with caplog.at_level(logging.WARNING, logger="companion.jobs"):
        failing = jobs.schedule_embedding(broken)
        assert failing is not None
        await failing
    assert "no weights" in caplog.text and "recall stays lexical" in caplog.text


def test_an_extractive_episode_counts_the_lines_it_quotes_toward_the_turns_shown() -> None:
    said = [Message(i, "s", "user", f"line {i}", "2026-11-20 10:00:00") for i in range(1, 13)]
    quoting = Segment(
        1,
        "s",
        1,
        3,
        "2026-11-20 10:00:00",
        "2026-11-20 10:05:00",
        "Fri 20 Nov, morning: line 1 · line 2 · line 3",
        "extractive",
    )
    modelled = Segment(
        2,
        "s",
        1,
        3,
        "2026-11-20 10:00:00",
        "2026-11-20 10:05:00",
        "They talked about lines.",
        "model",
    )
    segments = [RecalledSegment(quoting, "Lines"), RecalledSegment(modelled, "Lines")]

    def shown(turns: int) -> list[int]:
        hits = [RecalledTurn(m, "Lines", 1.0) for m in said[:turns]]
        result = tool.shape(Recollection([], segments, hits, None), "UTC")
        return [e["id"] for e in result["structured"]["segments"]]

    assert shown(TURN_BUDGET) == [2]  # the budget is spent: only the one quoting nothing
    assert shown(TURN_BUDGET - 3) == [1, 2]


async def test_a_store_closed_after_settle_embedding_has_all_its_vectors(
    store: SqliteStore, caplog: pytest.LogCaptureFixture
) -> None:
    """An eval case closes its store right after its last turn: waiting for the store's
    embedding first (jobs.settle_embedding) leaves no job to find the threads gone."""
    history(store, 70)  # three batches
    closing = AsyncSqliteStore(SqliteStore.open_home(store.path.parent))
    embedder = FakeEmbedder()
    ctx: Any = type("Ctx", (), {"store": closing, "embedder": embedder})()
    with caplog.at_level(logging.ERROR, logger="companion.jobs"):
        assert jobs.schedule_embedding(ctx) is not None
        await jobs.settle_embedding(closing.location)
        assert await closing.vector_status(embedder.model) == (71, 71)
        await closing.close()
    assert "embedding messages failed" not in caplog.text


async def test_the_embedding_waits_while_a_turn_runs(
    store: SqliteStore, async_store: AsyncSqliteStore
) -> None:
    """Issue 27: the background embedding takes no core from running turns; it starts
    once none runs (or after EMBED_PATIENCE)."""
    history(store, 3)
    embedder = FakeEmbedder()
    ctx: Any = type("Ctx", (), {"store": async_store, "embedder": embedder})()
    with jobs.turn_running():
        task = jobs.schedule_embedding(ctx)
        assert task is not None
        await asyncio.sleep(0.3)
        assert embedder.calls == 0 and not task.done()
    await task
    assert embedder.calls == 4
    assert await async_store.vector_status(embedder.model) == (4, 4)
