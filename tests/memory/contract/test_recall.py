"""memory_search's recall and segment cutting, the same scenarios on both backends:
SQLite (``AsyncSqliteStore.recall`` / ``.refresh_segments``, memory.sqlite.recall underneath) and
Postgres (memory.postgres.recall on a ``PgStore``). Each scenario asserts the same results on
both; one runs a corpus through both side by side; the last ones are Postgres's own:
one person's recall never reaches another's rows."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory import Memory, Message, Recollection, Segment, Summarizer, format_time
from memory.postgres import recall as pg_recall
from memory.postgres.schema import migrate
from memory.postgres.store import PgStore
from memory.rules.memories import recalled_strength
from memory.sqlite.async_store import AsyncSqliteStore
from memory.sqlite.store import SqliteStore
from tests.conftest import FIXED_NOW
from tests.support.postgres import APP_ROLE, PostgresServer

NOW = FIXED_NOW  # Wed 25 Nov 2026, 09:30 UTC
YESTERDAY_EVENING = datetime(2026, 11, 24, 19, 0, tzinfo=NOW.tzinfo)
SATURDAY = datetime(2026, 11, 21, 8, 0, tzinfo=NOW.tzinfo)
_people = itertools.count()


@pytest.fixture(scope="module")
def postgres() -> Iterator[PostgresServer]:
    """One server for the module, migrated once; each test is a new person on it."""
    with PostgresServer() as server:
        asyncio.run(migrate(server.admin_url, APP_ROLE))
        yield server


class Clock:
    """A clock the test sets: both backends read it."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


@dataclass
class Backend:
    """One backend's store, reached the way its callers reach it."""

    store: AsyncSqliteStore | PgStore
    clock: Clock

    @property
    def name(self) -> str:
        return "sqlite" if isinstance(self.store, AsyncSqliteStore) else "postgres"

    async def say(self, session_id: str, role: str, content: str, at: datetime) -> Message:
        """Store a message said at ``at``."""
        if isinstance(self.store, AsyncSqliteStore):
            return await self.store.write(
                lambda s: s.add_message(session_id, role, content, created_at=at)
            )
        return await self.store.add_message(session_id, role, content, created_at=at)

    async def chat(self, title: str, lines: list[tuple[str, str]], start: datetime) -> str:
        """A new session titled ``title``: ``lines`` (role, text) a minute apart."""
        session = await self.store.create_session(title)
        for minute, (role, text) in enumerate(lines):
            await self.say(session.id, role, text, start + timedelta(minutes=minute))
        return session.id

    async def recall(
        self,
        query: str,
        *,
        session_id: str | None = None,
        question_id: int | None = None,
        tz: str = "UTC",
    ) -> Recollection:
        now = self.clock.now
        if isinstance(self.store, AsyncSqliteStore):
            return await self.store.recall(
                query, now=now, tz=tz, session_id=session_id, question_id=question_id
            )
        return await pg_recall.recall(
            self.store, query, now=now, tz=tz, session_id=session_id, question_id=question_id
        )

    async def refresh(
        self, session_id: str, summarize: Summarizer | None = None, *, force: bool = False
    ) -> int:
        if isinstance(self.store, AsyncSqliteStore):
            return await self.store.refresh_segments(session_id, summarize, force=force, tz="UTC")
        return await pg_recall.refresh_segments(
            self.store, session_id, summarize, force=force, tz="UTC"
        )

    async def catch_up(self, summarize: Summarizer | None = None) -> int:
        if isinstance(self.store, AsyncSqliteStore):
            return await self.store.catch_up_segments(summarize, tz="UTC")
        return await pg_recall.catch_up_segments(self.store, summarize, tz="UTC")

    async def segments(self) -> list[tuple[str, str, str, str, str]]:
        """Every segment as (session title, start, end, summary, kind), oldest first."""
        titles = {s.id: s.title for s in await self.store.list_sessions()}
        found = sorted(await self.store.recent_segments(1000), key=lambda s: s.start_at)
        return [
            (titles[s.session_id], s.start_at, s.end_at, s.summary, s.summary_kind) for s in found
        ]


async def open_backend(kind: str, home: Path, postgres: PostgresServer) -> Backend:
    clock = Clock(NOW)
    if kind == "sqlite":
        return Backend(AsyncSqliteStore(SqliteStore.open_home(home, clock=clock)), clock)
    return Backend(await PgStore.open(postgres.url, f"recall-{next(_people)}", clock=clock), clock)


async def close_backend(backend: Backend) -> None:
    await backend.store.close()


@pytest.fixture(params=["sqlite", "postgres"])
async def backend(
    request: pytest.FixtureRequest, tmp_path: Path, postgres: PostgresServer
) -> AsyncIterator[Backend]:
    opened = await open_backend(request.param, tmp_path / "home", postgres)
    yield opened
    await close_backend(opened)


async def summarise(messages: list[Message]) -> str:
    """A scripted summariser: the span's words in order."""
    return " / ".join(message.content for message in messages)


def said(found: Recollection) -> list[tuple[str, str, str]]:
    """The recalled messages as (session title, role, text)."""
    return [(r.session_title, r.message.role, r.message.content) for r in found.turns]


def shape(found: Recollection) -> dict[str, Any]:
    """Everything a recollection says, without ids (each backend numbers its own)."""
    return {
        "facts": [(f.category, f.key, f.value, f.recall_count) for f in found.facts],
        "segments": [
            (e.session_title, e.segment.start_at, e.segment.end_at, e.segment.summary)
            for e in found.segments
        ],
        "messages": [
            (r.session_title, r.message.role, r.message.content, r.message.created_at)
            for r in found.turns
        ],
        "cue": found.cue,
    }


def fact(memories: list[Memory], key: str) -> Memory:
    return next(memory for memory in memories if memory.key == key)


# facts --------------------------------------------------------------------------------


async def test_a_fact_is_found_and_marked_recalled(backend: Backend) -> None:
    await backend.store.create_memory("signals", "favourite food", "rendang, very spicy")
    await backend.store.create_memory("identity", "name", "Budi")
    backend.clock.now = NOW + timedelta(days=3)
    before = await backend.store.ranked_memories(backend.clock.now)

    found = await backend.recall("what food do I like?")

    assert [(f.key, f.value) for f in found.facts] == [("favourite food", "rendang, very spicy")]
    assert found.facts[0].recall_count == 0  # as it was when recalled
    after = await backend.store.ranked_memories(backend.clock.now)
    food = fact(after, "favourite food")
    strength = recalled_strength(fact(before, "favourite food"), backend.clock.now)
    assert food.recall_count == 1
    assert food.last_recalled_at == format_time(backend.clock.now)
    assert (food.stability, food.difficulty) == (strength.stability, strength.difficulty)
    assert food.stability > fact(before, "favourite food").stability
    assert fact(after, "name") == fact(before, "name")  # not returned: not recalled

    backend.clock.now += timedelta(days=10)
    again = await backend.recall("spicy food")
    assert again.facts[0].recall_count == 1
    twice = fact(await backend.store.ranked_memories(backend.clock.now), "favourite food")
    assert twice.recall_count == 2
    assert twice.stability == recalled_strength(food, backend.clock.now).stability


# segments -----------------------------------------------------------------------------


async def seed_week(backend: Backend) -> dict[str, str]:
    """Three chats: dinner yesterday evening, a run on Saturday, a question now."""
    dinner = await backend.chat(
        "Dinner ideas",
        [
            ("user", "Tonight I cooked rendang with my sister"),
            ("assistant", "Rendang takes hours! How did it turn out?"),
            ("memory_tool", "SECRET tool output about rendang"),
            ("user", "Aku lagi masak rendang, enak banget"),
        ],
        YESTERDAY_EVENING,
    )
    run = await backend.chat(
        "Running",
        [("user", "Went jogging around the lake"), ("assistant", "Nice, how far did you go?")],
        SATURDAY,
    )
    now = await backend.chat("Today", [], NOW)
    return {"dinner": dinner, "run": run, "now": now}


async def test_an_episode_is_found_by_a_summary_word_and_by_a_time_cue(
    backend: Backend,
) -> None:
    chats = await seed_week(backend)
    assert await backend.catch_up(summarise) == 2
    assert await backend.catch_up(summarise) == 0

    by_word = await backend.recall("rendang", session_id=chats["now"])
    (segment,) = by_word.segments
    assert segment.session_title == "Dinner ideas"
    # Summaries see only the speakers (not the memory_tool result).
    assert segment.segment.summary == (
        "Tonight I cooked rendang with my sister / Rendang takes hours! How did it turn out?"
        " / Aku lagi masak rendang, enak banget"
    )
    # The turns are searched whatever else matched: shorter ones first, never a tool's.
    assert said(by_word) == [
        ("Dinner ideas", "user", "Aku lagi masak rendang, enak banget"),
        ("Dinner ideas", "user", "Tonight I cooked rendang with my sister"),
        ("Dinner ideas", "assistant", "Rendang takes hours! How did it turn out?"),
    ]

    for question in ("what did we talk about yesterday?", "kemarin kita ngobrol apa?"):
        by_time = await backend.recall(question, session_id=chats["now"])
        assert by_time.cue is not None and by_time.cue.has_window, question
        assert [e.session_title for e in by_time.segments] == ["Dinner ideas"], question
        # No keyword matches inside the window: the window's messages, newest first.
        assert said(by_time) == [
            ("Dinner ideas", "user", "Aku lagi masak rendang, enak banget"),
            ("Dinner ideas", "assistant", "Rendang takes hours! How did it turn out?"),
            ("Dinner ideas", "user", "Tonight I cooked rendang with my sister"),
        ], question

    jogging = await backend.recall("jogging")
    assert [e.session_title for e in jogging.segments] == ["Running"]
    # A word from another day inside yesterday's window: yesterday's segment.
    outside = await backend.recall("jogging yesterday")
    assert [e.session_title for e in outside.segments] == ["Dinner ideas"]
    assert (await backend.recall("nothing like this")).segments == []


# raw messages -------------------------------------------------------------------------


async def test_raw_messages_match_english_and_indonesian_words_by_prefix(
    backend: Backend,
) -> None:
    kitchen = await backend.chat(
        "Kitchen",
        [
            ("user", "I was cooking dinner for the kids"),
            ("assistant", "What were you making?"),
            ("user", "Aku suka masakan Padang"),
            ("user", "Ibu sedang memasak sayur"),
            ("user", "Aku lagi masak rendang"),
            ("web_tool", "cooking masak recipe from the web"),
        ],
        SATURDAY,
    )

    assert said(await backend.recall("what did I cook?", session_id=kitchen)) == [
        ("Kitchen", "user", "I was cooking dinner for the kids")
    ]
    # "masak" is a prefix of "masakan", not of "memasak" (no Indonesian stemming).
    assert said(await backend.recall("masak apa?", session_id=kitchen)) == [
        ("Kitchen", "user", "Aku lagi masak rendang"),
        ("Kitchen", "user", "Aku suka masakan Padang"),
    ]
    assert said(await backend.recall("memasak", session_id=kitchen)) == [
        ("Kitchen", "user", "Ibu sedang memasak sayur")
    ]
    # Short roots (under four letters) match whole words only.
    assert said(await backend.recall("kid", session_id=kitchen)) == []
    assert said(await backend.recall("kids", session_id=kitchen)) == [
        ("Kitchen", "user", "I was cooking dinner for the kids")
    ]
    # More of the query's words rank higher.
    assert said(await backend.recall("masak rendang", session_id=kitchen))[0] == (
        "Kitchen",
        "user",
        "Aku lagi masak rendang",
    )


# Links, addresses and file names are split at their punctuation, and accents dropped, on
# both (Postgres's migration 4, as SQLite's unicode61 does).


async def test_a_word_inside_a_link_or_an_address_is_found(backend: Backend) -> None:
    await backend.chat(
        "Links", [("user", "recipe at budi.dev/posts/rendang, ask budi@example.com")], SATURDAY
    )
    assert len((await backend.recall("rendang")).turns) == 1
    assert len((await backend.recall("example")).turns) == 1


async def test_an_accented_word_is_found_without_its_accent(backend: Backend) -> None:
    await backend.chat("Coffee", [("user", "we met at the Café Kopitiam")], SATURDAY)
    assert len((await backend.recall("cafe")).turns) == 1
    assert len((await backend.recall("café")).turns) == 1


async def test_the_question_and_what_follows_it_are_never_recalled(backend: Backend) -> None:
    session = await backend.chat("Dinner", [("user", "I cooked soto ayam")], SATURDAY)
    question = await backend.say(session, "user", "What did I cook?", NOW)
    await backend.say(session, "assistant", "You cooked soto ayam", NOW + timedelta(seconds=5))

    found = await backend.recall("what did I cook?", session_id=session, question_id=question.id)
    assert said(found) == [("Dinner", "user", "I cooked soto ayam")]
    # Inside a window too: today's window holds the question, it is still left out.
    today = await backend.recall("cook today", session_id=session, question_id=question.id)
    assert today.cue is not None and today.turns == []
    assert (await backend.recall("cook", question_id=1)).turns == []


async def test_the_current_session_wins_a_tie(backend: Backend) -> None:
    current = await backend.chat("Current", [("user", "my cat is orange")], SATURDAY)
    other = await backend.chat("Other", [("user", "my cat is orange")], SATURDAY + timedelta(1))

    assert said(await backend.recall("cat", session_id=current)) == [
        ("Current", "user", "my cat is orange"),
        ("Other", "user", "my cat is orange"),
    ]
    # No preference: the newer message first.
    assert [t for t, _, _ in said(await backend.recall("cat"))] == ["Other", "Current"]
    assert [t for t, _, _ in said(await backend.recall("cat", session_id=other))] == [
        "Other",
        "Current",
    ]


async def test_a_recent_cue_returns_the_newest_first(backend: Backend) -> None:
    await backend.chat(
        "Runs",
        [
            ("user", "jogging"),  # the best match by wording, and the oldest
            ("user", "went jogging with a friend along the beach at sunrise"),
            ("user", "jogging again today, my knees hurt after jogging"),
        ],
        SATURDAY,
    )
    found = await backend.recall("when did I go jogging last time?")
    assert found.cue is not None and found.cue.recent
    assert [text for _, _, text in said(found)] == [
        "jogging again today, my knees hurt after jogging",
        "went jogging with a friend along the beach at sunrise",
        "jogging",
    ]
    # Without the cue, the best-worded first.
    assert said(await backend.recall("jogging"))[0][2] == "jogging"
    # A recent cue with no keyword match: the newest messages, newest first.
    fallback = await backend.recall("what did we say last time?")
    assert said(fallback)[0][2].startswith("jogging again")


HOSTILE = [
    "",
    "   ",
    "'",
    '"',
    "''''",
    "\\",
    "\\\\' OR 1=1 --",
    "&|!():*",
    "cat & | ! ( ) : * <-> <2>",
    "a:* | b:*",
    "'; DROP TABLE messages; --",
    "NEAR(cat orange) AND NOT *",
    "foo_bar baz__",
    "___",
    "\x00cat\x00",
    'kucing\'s "oren"!',
    "ÄÖÜ ß café naïve",
    "猫 кот 🐈",
    "cat " * 200,
    "12:30 e-mail C++ 3.14",
]


@pytest.mark.parametrize("query", HOSTILE, ids=range(len(HOSTILE)))
async def test_a_hostile_query_never_errors(backend: Backend, query: str) -> None:
    await backend.chat("Pets", [("user", "my cat is orange"), ("user", "jogging")], SATURDAY)
    found = await backend.recall(query)
    assert isinstance(found, Recollection)
    expected = [("Pets", "user", "my cat is orange")] if "cat" in query else []
    assert said(found) == expected


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80))
def test_any_text_makes_a_valid_tsquery(postgres: PostgresServer, text: str) -> None:
    """Whatever the words, Postgres reads the query (no syntax error, no NUL)."""
    query = pg_recall.tsquery(text)
    if query is None:
        return
    with psycopg.connect(postgres.url) as conn:
        conn.execute("SELECT to_tsquery('simple', %s)", (query,))


# cutting segments ---------------------------------------------------------------------


async def test_refresh_and_catch_up_cut_the_same_spans(backend: Backend) -> None:
    evening = await backend.chat(
        "Evening",
        [("user", "I cooked nasi goreng"), ("assistant", "Yum"), ("memory_tool", "SECRET")],
        YESTERDAY_EVENING,
    )
    await backend.say(evening, "user", "Went jogging around the lake", NOW - timedelta(hours=2))
    await backend.say(evening, "user", "still here", NOW - timedelta(minutes=5))

    # The first two spans are closed (by the gaps); the last is open: the talk may go on.
    assert await backend.refresh(evening) == 2
    assert await backend.refresh(evening) == 0
    assert await backend.refresh(evening, force=True) == 1
    assert await backend.segments() == [
        (
            "Evening",
            "2026-11-24 19:00:00",
            "2026-11-24 19:02:00",
            "Tue 24 Nov, evening: I cooked nasi goreng",
            "extractive",
        ),
        (
            "Evening",
            "2026-11-25 07:30:00",
            "2026-11-25 07:30:00",
            "Wed 25 Nov, morning: Went jogging around the lake",
            "extractive",
        ),
        (
            "Evening",
            "2026-11-25 09:25:00",
            "2026-11-25 09:25:00",
            "Wed 25 Nov, morning: still here",
            "extractive",
        ),
    ]

    # Forty messages close a span; a failing summariser falls back to the extractive one.
    await backend.chat("Quiet", [("user", "an old chat")], SATURDAY)
    long = await backend.chat(
        "Long", [("user", f"line {i}") for i in range(45)], NOW - timedelta(hours=3)
    )
    await backend.say(long, "user", "just now", NOW)  # open: the talk may go on
    calls: list[int] = []

    async def flaky(messages: list[Message]) -> str:
        calls.append(len(messages))
        if len(calls) == 2:
            raise RuntimeError("model down")
        return await summarise(messages)

    assert await backend.catch_up(flaky) == 3
    assert await backend.catch_up(flaky) == 0
    cut = [s for s in await backend.segments() if s[0] in ("Long", "Quiet")]
    assert [(title, start, end, kind) for title, start, end, _, kind in cut] == [
        ("Quiet", "2026-11-21 08:00:00", "2026-11-21 08:00:00", "model"),
        ("Long", "2026-11-25 06:30:00", "2026-11-25 07:09:00", "extractive"),
        ("Long", "2026-11-25 07:10:00", "2026-11-25 07:14:00", "model"),
    ]
    assert calls == [1, 40, 5]  # least recently active session first
    assert cut[0][3] == "an old chat"


async def test_refresh_after_deleting_messages_cuts_them_again(backend: Backend) -> None:
    chat = await backend.chat(
        "Edited", [("user", "first try"), ("assistant", "ok")], YESTERDAY_EVENING
    )
    assert await backend.refresh(chat, summarise, force=True) == 1
    messages = await backend.store.messages(chat)
    await backend.store.delete_messages_from(chat, messages[1].id)
    assert await backend.segments() == []
    assert await backend.refresh(chat, summarise, force=True) == 1
    assert [s[3] for s in await backend.segments()] == ["first try"]


# both side by side --------------------------------------------------------------------

QUERIES = [
    "what did I cook?",
    "rendang",
    "masak apa kemarin?",
    "what did we talk about yesterday?",
    "last Saturday",
    "hari sabtu lalu aku ngapain?",
    "jogging last time",
    "lake",
    "spicy food",
    "what is my name?",
    "Budi",
    "waktu itu kita bahas apa?",
    "orange cat",
    "nothing at all matches",
    "",
]


async def test_both_backends_recall_the_same_for_a_whole_corpus(
    tmp_path: Path, postgres: PostgresServer
) -> None:
    both = [await open_backend(kind, tmp_path / "home", postgres) for kind in ("sqlite", "pg")]
    try:
        for backend in both:
            chats = await seed_week(backend)
            await backend.chat("Pets", [("user", "my cat is orange")], SATURDAY - timedelta(3))
            await backend.store.create_memory("signals", "favourite food", "rendang, spicy")
            await backend.store.create_memory("identity", "name", "Budi")
            assert await backend.catch_up(None) == 3
            await backend.say(chats["now"], "user", "hello again", NOW)
        for query in QUERIES:
            for backend in both:
                backend.clock.now += timedelta(hours=1)
            sqlite, pg = [await b.recall(query, tz="Asia/Jakarta") for b in both]
            assert shape(sqlite) == shape(pg), query
        memories = [await b.store.ranked_memories(b.clock.now) for b in both]
        assert [replace_id(m) for m in memories[0]] == [replace_id(m) for m in memories[1]]
        assert fact(memories[0], "favourite food").recall_count > 0
    finally:
        for backend in both:
            await close_backend(backend)


def replace_id(memory: Memory) -> tuple[object, ...]:
    return (memory.key, memory.value, memory.recall_count, memory.last_recalled_at)


# Postgres: one person never recalls another's -----------------------------------------


async def test_one_persons_recall_never_reaches_anothers(postgres: PostgresServer) -> None:
    clock = Clock(NOW)
    alice = await PgStore.open(postgres.url, f"alice-{next(_people)}", clock=clock)
    bob = await PgStore.open(postgres.url, f"bob-{next(_people)}", clock=clock)
    try:
        a, b = Backend(alice, clock), Backend(bob, clock)
        await seed_week(a)
        await alice.create_memory("signals", "favourite food", "rendang")
        assert await a.catch_up(summarise) == 2
        # Bob's own chat, in a session with the same id as one of alice's.
        alice_first = (await alice.list_sessions())[-1].id
        await b.say(alice_first, "user", "I only talk about bikes", SATURDAY)

        for query in ("rendang", "what food do I like?", "kemarin", "jogging last time", ""):
            found = await b.recall(query)
            assert found.facts == [] and found.segments == [], query
            texts = " ".join(text for _, _, text in said(found))
            assert "rendang" not in texts and "jogging" not in texts, query
        assert said(await b.recall("bikes")) == [("New chat", "user", "I only talk about bikes")]
        # Bob's refresh and catch-up cut only his own messages.
        assert await b.catch_up(summarise) == 1
        assert await b.refresh(alice_first, summarise, force=True) == 0
        assert [s.summary for s in await bob.recent_segments()] == ["I only talk about bikes"]
        assert len(await alice.recent_segments()) == 2
        # Alice's fact was not recalled by bob's questions.
        (food,) = await alice.ranked_memories(NOW)
        assert food.recall_count == 0
        assert (await a.recall("rendang")).facts[0].key == "favourite food"
    finally:
        await alice.close()
        await bob.close()


async def test_concurrent_refreshes_store_each_span_once(postgres: PostgresServer) -> None:
    clock = Clock(NOW)
    store = await PgStore.open(postgres.url, f"racer-{next(_people)}", clock=clock)
    try:
        backend = Backend(store, clock)
        session = await backend.chat("Race", [("user", "one"), ("user", "two")], SATURDAY)

        together = asyncio.Barrier(4)

        async def slow(messages: list[Message]) -> str:
            await together.wait()  # all four store their span at the same moment
            return "summary"

        added = await asyncio.gather(*(backend.refresh(session, slow) for _ in range(4)))
        assert sum(added) == 1
        one, two = await store.messages(session)
        segments: list[Segment] = await store.recent_segments()
        assert [(s.summary, s.start_message_id, s.end_message_id) for s in segments] == [
            ("summary", one.id, two.id)
        ]
    finally:
        await store.close()
