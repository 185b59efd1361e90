"""Raw message search: safe FTS queries, scope, windows, roles and fallbacks."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory.rules.temporal import TemporalCue, parse_temporal
from memory.sqlite.retrieval import DOC_BUDGET, fts_query, search_messages
from memory.sqlite.store import SqliteStore
from tests.support.naive_search import naive_search

NOW = datetime(2026, 11, 25, 9, 30, tzinfo=UTC)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteStore]:
    s = SqliteStore.open_home(tmp_path, clock=lambda: NOW)
    yield s
    s.close()


def day(n: int, hour: int = 12) -> datetime:
    """n days before NOW's date, at ``hour`` UTC."""
    return datetime(2026, 11, 25, hour, tzinfo=UTC) - timedelta(days=n)


def test_fts_query_keeps_content_words_quoted() -> None:
    assert fts_query("What did I cook last Thursday?") == '"cook"*'
    assert fts_query('nasi "goreng" OR NEAR(x) *') == '"nasi"* OR "goreng"* OR "near"*'
    assert fts_query("what did I do yesterday?") is None


@pytest.fixture(scope="module")
def fts_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SqliteStore]:
    s = SqliteStore.open_home(tmp_path_factory.mktemp("fts"), clock=lambda: NOW)
    s.add_message("s", "user", "hello world")
    yield s
    s.close()


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=60))
def test_any_text_is_a_valid_fts_query(fts_store: SqliteStore, text: str) -> None:
    search_messages(fts_store, text, session_id="s")


def test_keyword_match_ranked_and_limited_to_user_and_assistant(store: SqliteStore) -> None:
    store.add_message("s", "user", "I cooked nasi goreng tonight", created_at=day(3))
    store.add_message("s", "assistant", "Nasi goreng sounds great", created_at=day(3))
    store.add_message("s", "memory_tool", "nasi goreng from memory", created_at=day(3))
    store.add_message("s", "web_tool", "nasi goreng recipe", created_at=day(3))
    store.add_message("s", "user", "went cycling", created_at=day(2))
    found = search_messages(store, "nasi goreng", session_id="s")
    assert {m.role for m in found} == {"user", "assistant"}
    assert len(found) == 2
    assert search_messages(store, "cooking", session_id="s")[0].content.startswith("I cooked")


def test_other_sessions_are_not_searched(store: SqliteStore) -> None:
    store.add_message("a", "user", "my cat is orange")
    store.add_message("b", "user", "hello")
    assert search_messages(store, "cat", session_id="b") == []
    assert len(search_messages(store, "cat", session_id="a")) == 1
    assert len(search_messages(store, "cat")) == 1


def test_a_message_older_than_a_thousand_newer_ones_is_found(store: SqliteStore) -> None:
    store.add_message("s", "user", "the secret word is pineapple", created_at=day(30))
    with store.transaction() as conn:
        conn.executemany(
            "INSERT INTO messages (session_id, role, content, created_at) VALUES (?, ?, ?, ?)",
            [("s", "user", f"filler {i}", "2026-11-20 10:00:00") for i in range(1000)],
        )
    assert len(search_messages(store, "pineapple", session_id="s")) == 1
    assert len(search_messages(store, "pineapple")) == 1


def test_a_word_said_everywhere_is_searched_in_the_newest_slice_only(
    store: SqliteStore,
) -> None:
    """Cost stays bounded: a word in more than DOC_BUDGET messages is scored only over the
    newest slice; a rare word beside it still reaches the whole history."""
    store.add_message("s", "user", "filler with a pineapple", created_at=day(30))
    count = 4 * DOC_BUDGET  # "filler" in a third of them: over the budget, IDF above 0
    with store.transaction() as conn:
        conn.executemany(
            "INSERT INTO messages (session_id, role, content, created_at) VALUES (?, ?, ?, ?)",
            [
                ("s", "user", f"{'filler' if i % 3 == 0 else 'other'} {i}", "2026-11-20 10:00:00")
                for i in range(count)
            ],
        )
    plain = search_messages(store, "filler", limit=50)
    assert len(plain) == 50 and min(m.id for m in plain) > count // 5
    assert search_messages(store, "pineapple filler")[0].content == "filler with a pineapple"


def test_a_word_said_everywhere_is_searched_over_the_whole_of_a_short_window(
    store: SqliteStore,
) -> None:
    """A window holds its share of a common word's documents: all of them are scored,
    not only the window's newest slice."""
    store.add_message("s", "user", "hello", created_at=day(40))
    with store.transaction() as conn:
        conn.executemany(
            "INSERT INTO messages (session_id, role, content, created_at) VALUES (?, ?, ?, ?)",
            [("s", "user", f"filler said then {i}", "2026-11-15 10:00:00") for i in range(400)]
            + [
                ("s", "user", f"{'filler' if i % 3 == 0 else 'other'} {i}", "2026-11-20 10:00:00")
                for i in range(4 * DOC_BUDGET)
            ],
        )
    cue = TemporalCue(day(10, 0), day(9, 0), "that day")
    found = search_messages(store, "filler", cue=cue, limit=400)
    assert len(found) == 400 and found[-1].content == "filler said then 0"


def test_window_restricts_and_falls_back_to_window_messages(store: SqliteStore) -> None:
    store.add_message("s", "user", "I cooked rendang", created_at=day(6, 11))
    store.add_message("s", "user", "I cooked soto", created_at=day(1, 11))
    store.add_message("s", "user", "went to the gym", created_at=day(1, 15))
    cue = parse_temporal("yesterday", NOW)
    assert [
        m.content for m in search_messages(store, "what did I cook", session_id="s", cue=cue)
    ] == ["I cooked soto"]
    # No keyword in the window: the window's messages instead, oldest first.
    assert [m.content for m in search_messages(store, "swimming", session_id="s", cue=cue)] == [
        "I cooked soto",
        "went to the gym",
    ]
    empty = TemporalCue(day(100), day(99), "long ago")
    assert search_messages(store, "cooked", session_id="s", cue=empty) == []


def test_recent_cue_prefers_newest_and_falls_back_to_newest(store: SqliteStore) -> None:
    store.add_message("s", "user", "I went to Bali", created_at=day(20))
    store.add_message("s", "user", "Bali again, so nice", created_at=day(5))
    store.add_message("s", "assistant", "how was it?", created_at=day(5))
    recent = TemporalCue(None, None, "last time", recent=True)
    assert search_messages(store, "bali", session_id="s", cue=recent)[0].content.startswith(
        "Bali again"
    )
    newest = search_messages(store, "zzz", session_id="s", cue=recent, limit=2)
    assert [m.content for m in newest] == ["Bali again, so nice", "how was it?"]
    assert search_messages(store, "zzz", session_id="s") == []


def test_before_id_leaves_out_the_question(store: SqliteStore) -> None:
    store.add_message("s", "user", "I cooked pasta", created_at=day(3))
    question = store.add_message("s", "user", "what did I cook?", created_at=NOW)
    found = search_messages(store, "cook", session_id="s", before_id=question.id)
    assert [m.content for m in found] == ["I cooked pasta"]


def test_naive_search_baseline(store: SqliteStore) -> None:
    store.add_message("s", "user", "100% sure about the cat_toy")
    store.add_message("s", "user", "dog")
    assert [m.content for m in naive_search(store, "cat_toy", session_id="s")] == [
        "100% sure about the cat_toy"
    ]
    assert naive_search(store, "what did I", session_id="s") == []


def test_every_session_and_the_whole_window(store: SqliteStore) -> None:
    store.add_message("a", "user", "I cooked rendang", created_at=day(6, 11))
    store.add_message("b", "user", "hello", created_at=day(2))
    with store.transaction() as conn:
        conn.executemany(
            "INSERT INTO messages (session_id, role, content, created_at) VALUES (?, ?, ?, ?)",
            [("b", "user", f"filler {i}", "2026-11-24 10:00:00") for i in range(1000)],
        )
    assert [m.content for m in search_messages(store, "rendang")] == ["I cooked rendang"]
    thursday = parse_temporal("what did I cook last Thursday", NOW)
    assert [m.content for m in search_messages(store, "cook", cue=thursday)] == ["I cooked rendang"]


def test_preferred_session_wins_equal_scores(store: SqliteStore) -> None:
    store.add_message("here", "user", "the blue bicycle", created_at=day(9))
    store.add_message("there", "user", "the blue bicycle", created_at=day(2))
    store.add_message("there", "user", "a blue bicycle bell, a blue bicycle", created_at=day(1))
    found = search_messages(store, "blue bicycle", prefer="here")
    assert [m.session_id for m in found] == ["there", "here", "there"]
    assert found[0].content.startswith("a blue bicycle bell")  # relevance comes first
    assert [m.session_id for m in search_messages(store, "blue bicycle")][1:] == [
        "there",
        "here",
    ]  # no preference: the newer of equals first
