"""Issue 21's recall, the same on both backends: every turn of the whole history is
searched, lexical fused with dense (the fake embedder of tests/support/embedders.py), the
named speaker preferred, neighbours shown, the question and what follows never returned;
and the vector index's four calls (unembedded, add_vectors, vector_status, drop_vectors)."""

from __future__ import annotations

import threading
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime, timedelta

import numpy

from memory import AsyncStore, Message, QueryVector, Recollection
from memory.postgres.store import PgStore
from memory.sqlite.async_store import AsyncSqliteStore
from tests.conftest import FIXED_NOW
from tests.support.embedders import FakeEmbedder

NOW = FIXED_NOW
EMBEDDER = FakeEmbedder()


async def say(store: AsyncStore, session: str, role: str, text: str, at: datetime) -> Message:
    """Store a message said at ``at`` (the protocol's add_message stamps the clock's time)."""
    if isinstance(store, AsyncSqliteStore):
        return await store.write(lambda s: s.add_message(session, role, text, created_at=at))
    assert isinstance(store, PgStore)
    return await store.add_message(session, role, text, created_at=at)


async def embed_all(store: AsyncStore) -> None:
    """Give every message a vector of the fake embedder."""
    while rows := await store.unembedded(EMBEDDER.model, 100):
        vectors = EMBEDDER.passages([text for _, text in rows])
        await store.add_vectors(
            EMBEDDER.model, [(i, v) for (i, _), v in zip(rows, vectors, strict=True)]
        )


async def ask(
    store: AsyncStore,
    query: str,
    *,
    hybrid: bool = True,
    session: str = "now",
    vector_source: QueryVector | None = None,
    **kwargs: object,
) -> Recollection:
    """Ask ``query`` as the newest question of ``session`` (hybrid: with the fake's
    vector, or the one ``vector_source`` makes), then take the question back, so the next
    ask does not find it."""
    question = await store.add_message(session, "user", query)
    vector = vector_source or (EMBEDDER.query(query) if hybrid else None)
    found = await store.recall(
        query,
        now=NOW,
        tz="UTC",
        session_id=session,
        question_id=question.id,
        vector=vector,
        vector_model=EMBEDDER.model if hybrid else None,
        **kwargs,  # type: ignore[arg-type]
    )
    await store.delete_messages_from(session, question.id)
    return found


def texts(found: Recollection) -> list[str]:
    return [turn.message.content for turn in found.turns]


async def filler(store: AsyncStore, count: int, start: datetime) -> None:
    for i in range(count):
        role = "user" if i % 2 == 0 else "assistant"
        await say(store, "chatter", role, f"small talk number {i}", start + timedelta(minutes=i))


async def test_a_turn_older_than_a_thousand_newer_messages_is_found(store: AsyncStore) -> None:
    await say(
        store, "old", "user", "my locker code is 4471 at the climbing gym", NOW - timedelta(days=90)
    )
    await filler(store, 1001, NOW - timedelta(days=30))
    found = await ask(store, "climbing gym locker", hybrid=False)
    assert texts(found)[0] == "my locker code is 4471 at the climbing gym"


async def test_a_paraphrase_is_found_by_meaning_and_not_by_words(store: AsyncStore) -> None:
    await say(store, "pets", "user", "Mochi hides whenever I vacuum", NOW - timedelta(days=40))
    await filler(store, 30, NOW - timedelta(days=20))
    await embed_all(store)
    lexical = await ask(store, "what is my cat scared of", hybrid=False)
    assert "Mochi hides whenever I vacuum" not in texts(lexical)
    assert lexical.searched == "lexical"
    hybrid = await ask(store, "what is my cat scared of")
    assert texts(hybrid)[0] == "Mochi hides whenever I vacuum"
    assert hybrid.searched == "hybrid"


async def test_a_paraphrase_is_not_crowded_out_by_turns_sharing_one_word(
    store: AsyncStore,
) -> None:
    await say(store, "pets", "user", "Mochi hides whenever I vacuum", NOW - timedelta(days=40))
    for i in range(15):  # each holds one of the question's three words ("scar*")
        await say(store, "knits", "user", f"a scarf to knit, number {i}", NOW - timedelta(days=9))
    await embed_all(store)
    found = await ask(store, "what is my cat scared of at home")
    assert "Mochi hides whenever I vacuum" in texts(found)
    assert len(found.turns) == 12


async def test_hybrid_keeps_a_strong_lexical_hit(store: AsyncStore) -> None:
    await say(
        store, "trip", "user", "the ferry to Nusa Penida leaves at 7", NOW - timedelta(days=9)
    )
    for i in range(20):  # near in meaning to the question, without its rare words
        await say(
            store, "cars", "user", f"my sedan needed new tyres, visit {i}", NOW - timedelta(days=8)
        )
    await embed_all(store)
    found = await ask(store, "when does the ferry to Penida leave? my car")
    assert "the ferry to Nusa Penida leaves at 7" in texts(found)
    assert len(found.turns) == 12


async def test_the_question_and_what_follows_never_come_back(store: AsyncStore) -> None:
    await say(store, "now", "user", "I bought a red kite", NOW - timedelta(days=3))
    question = await say(store, "now", "user", "what kite did I buy?", NOW)
    await say(store, "now", "assistant", "You bought a kite, a red one", NOW + timedelta(minutes=1))
    await embed_all(store)
    found = await store.recall(
        "what kite did I buy?",
        now=NOW,
        tz="UTC",
        session_id="now",
        question_id=question.id,
        vector=EMBEDDER.query("what kite did I buy?"),
        vector_model=EMBEDDER.model,
    )
    assert texts(found) == ["I bought a red kite"]
    assert all(t.after is None or t.after.id < question.id for t in found.turns)


async def test_a_time_window_filters_both_retrievers(store: AsyncStore) -> None:
    await say(store, "a", "user", "I cooked rendang tonight", NOW - timedelta(days=30))
    await say(store, "b", "user", "I cooked soto tonight", NOW - timedelta(days=1))
    await embed_all(store)
    found = await ask(store, "what did I cook yesterday")
    assert texts(found) == ["I cooked soto tonight"]


async def test_the_speaker_the_question_names_comes_first(store: AsyncStore) -> None:
    when = NOW - timedelta(days=5)
    await say(store, "talk", "user", "the blue tent is the best one", when)
    await say(
        store, "talk", "assistant", "the blue tent is the best one", when + timedelta(hours=1)
    )
    await embed_all(store)
    mine = await ask(store, "which tent did I say was best", hybrid=False)
    assert [t.message.role for t in mine.turns] == ["user", "assistant"]
    yours = await ask(store, "which tent did you say was best", hybrid=False)
    assert [t.message.role for t in yours.turns] == ["assistant", "user"]


async def test_a_short_reply_comes_with_the_turn_it_answers(store: AsyncStore) -> None:
    when = NOW - timedelta(days=12)
    await say(store, "bikes", "assistant", "Which will you take on Sunday?", when)
    await say(store, "bikes", "user", "yes, the blue bicycle", when + timedelta(minutes=1))
    await say(
        store,
        "bikes",
        "assistant",
        "Great choice, enjoy the ride on the coast road " * 3,
        when + timedelta(minutes=2),
    )
    found = await ask(store, "blue bicycle", hybrid=False)
    reply = next(t for t in found.turns if t.message.content == "yes, the blue bicycle")
    assert reply.before is not None and reply.before.content.startswith("Which will")
    assert reply.after is None  # long, and the reply is no question


async def test_recall_returns_at_most_the_turns_asked_for(store: AsyncStore) -> None:
    await filler(store, 40, NOW - timedelta(days=2))
    await embed_all(store)
    found = await ask(store, "small talk number " + "x" * 10_000, turns=5)
    assert len(found.turns) == 5


async def test_the_vector_index_calls(store: AsyncStore) -> None:
    said = [
        await say(store, "s", role, f"line {i}", NOW)
        for i, role in enumerate(["user", "assistant", "user"])
    ]
    await store.add_message("s", "web_tool", "a tool's result")
    assert await store.vector_status("m") == (0, 3)
    assert await store.unembedded("m", 2) == [(said[0].id, "line 0"), (said[1].id, "line 1")]
    one = numpy.eye(4, dtype=numpy.float32)
    await store.add_vectors("m", [(said[0].id, one[0]), (said[1].id, one[1]), (999_999, one[2])])
    await store.add_vectors("m", [(said[0].id, one[3])])  # replaced, not added
    assert await store.vector_status("m") == (2, 3)
    assert await store.unembedded("m", 10) == [(said[2].id, "line 2")]
    await store.add_vectors("other", [(said[2].id, one[2])])
    assert await store.drop_vectors(except_model="m") == 1
    assert await store.vector_status("other") == (0, 3)
    await store.delete_messages_from("s", said[1].id)  # a message's vector goes with it
    assert await store.vector_status("m") == (1, 1)
    assert await store.drop_vectors(except_model=None) == 1
    assert await store.unembedded("m", 10) == [(said[0].id, "line 0")]


async def test_unembedded_finds_a_gap_below_the_newest_vector(store: AsyncStore) -> None:
    said = [await say(store, "s", "user", f"line {i}", NOW) for i in range(4)]
    one = numpy.eye(4, dtype=numpy.float32)
    # A batch that failed in the middle: line 1 has no vector, lines 0 and 2 have.
    await store.add_vectors("m", [(said[0].id, one[0]), (said[2].id, one[2])])
    assert await store.unembedded("m", 10) == [(said[1].id, "line 1"), (said[3].id, "line 3")]
    # Another model's newest vector says nothing of this model's.
    await store.add_vectors("m", [(said[1].id, one[1])])
    await store.add_vectors("other", [(said[3].id, one[3])])
    assert await store.unembedded("m", 10) == [(said[3].id, "line 3")]
    assert await store.unembedded("other", 10) == [
        (said[0].id, "line 0"),
        (said[1].id, "line 1"),
        (said[2].id, "line 2"),
    ]


async def test_the_week_after_an_event_is_that_weeks_turns(store: AsyncStore) -> None:
    dentist = NOW - timedelta(days=30)
    await say(store, "teeth", "user", "The dentist said I need a crown on my molar.", dentist)
    await say(store, "teeth", "assistant", "Ouch, good luck with it.", dentist)
    week_after = dentist + timedelta(days=6)
    await say(store, "later", "user", "Sold the old Honda to a student today.", week_after)
    await say(store, "later", "assistant", "Noted!", week_after + timedelta(minutes=1))
    await say(store, "much later", "user", "Painted the fence blue.", dentist + timedelta(days=20))
    found = await ask(store, "What did I do the week after the dentist visit?", hybrid=False)
    assert texts(found) == ["Sold the old Honda to a student today.", "Noted!"]


async def test_a_vector_still_being_made_is_waited_for_after_the_words(
    store: AsyncStore,
) -> None:
    """memory_search hands recall a QueryVector at once; recall searches the words while
    it is made and takes it for the dense search: the same turns as a ready vector. One
    that fails or is late leaves recall lexical."""
    await say(store, "pets", "user", "Mochi hides whenever I vacuum", NOW - timedelta(days=40))
    await filler(store, 30, NOW - timedelta(days=20))
    await embed_all(store)
    query = "what is my cat scared of"
    ready = await ask(store, query)
    release = threading.Event()

    def slow() -> numpy.ndarray:
        release.wait(5)
        return EMBEDDER.query(query)

    with ThreadPoolExecutor(1) as pool:
        timer = threading.Timer(0.2, release.set)
        timer.start()
        made = await ask(store, query, vector_source=QueryVector(pool.submit(slow), 64, 5.0))
        late = QueryVector(pool.submit(lambda: threading.Event().wait(1) and None), 64, 0.05)
        lexical = await ask(store, query, vector_source=late)
        failed: Future[numpy.ndarray] = Future()
        failed.set_exception(RuntimeError("endpoint refused the connection"))
        refused = await ask(store, query, vector_source=QueryVector(failed, 64, 5.0))
    assert made.searched == ready.searched == "hybrid"
    assert texts(made) == texts(ready) and texts(made)[0] == "Mochi hides whenever I vacuum"
    assert lexical.searched == refused.searched == "lexical"
    assert "Mochi hides whenever I vacuum" not in texts(lexical) + texts(refused)
