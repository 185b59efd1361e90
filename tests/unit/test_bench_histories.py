"""bench.histories: long, dated, alternating histories in both languages, and questions
whose evidence is what the category says it is."""

from __future__ import annotations

from collections import Counter
from itertools import pairwise

import pytest

from bench.histories import (
    CATEGORIES,
    FACTS,
    LANGUAGES,
    NEAR,
    VOICES,
    History,
    Language,
    generate,
    render,
    shares_no_word,
    stems,
)


@pytest.fixture(scope="module", params=LANGUAGES)
def history(request: pytest.FixtureRequest) -> History:
    return generate(request.param)


def test_a_person_has_twenty_chats_and_five_hundred_turns_over_months(history: History) -> None:
    assert len(history.chats) >= 20
    assert len(history.turns) >= 500
    days = (history.chats[-1].start - history.chats[0].start).days
    assert days >= 150
    assert len({chat.title for chat in history.chats}) >= 15
    times = [turn.at for turn in history.turns]
    assert times == sorted(times) and times[-1] < history.now


def test_each_chat_alternates_user_and_assistant(history: History) -> None:
    for number in range(len(history.chats)):
        speakers = [t.speaker for t in history.turns if t.chat == number]
        assert speakers[0] == "user"
        assert all(a != b for a, b in pairwise(speakers)), number


def test_forty_questions_per_category_and_some_answered_by_the_assistant(
    history: History,
) -> None:
    counts = Counter(q.category for q in history.questions)
    assert all(counts[category] >= 40 for category in CATEGORIES), counts
    by_assistant = [
        q for q in history.questions if history.turns[q.evidence[0]].speaker == "assistant"
    ]
    assert len(by_assistant) >= 20


def test_multi_hop_evidence_is_two_turns_in_different_chats(history: History) -> None:
    for question in history.questions:
        if question.category == "multi-hop":
            first, second = (history.turns[i] for i in question.evidence)
            assert first.chat < second.chat, question.text


def test_a_paraphrase_shares_no_content_word_with_its_evidence(history: History) -> None:
    for question in history.questions:
        if question.category == "paraphrase":
            (evidence,) = question.evidence
            assert shares_no_word(question.text, history.turns[evidence].text), question.text


def test_third_person_questions_name_the_user(history: History) -> None:
    third = [q for q in history.questions if q.category == "third-person"]
    assert all(history.name in q.text for q in third)
    first = [q for q in history.questions if q.category != "third-person"]
    assert not any(history.name in q.text for q in first)


def test_temporal_questions_ask_when_or_the_week_after(history: History) -> None:
    temporal = [q.text for q in history.questions if q.category == "temporal"]
    week_after = [t for t in temporal if "week after" in t or "seminggu setelah" in t]
    assert len(week_after) >= 10
    assert all(t.startswith(("When", "Kapan")) for t in temporal if t not in week_after)


def test_the_same_seed_gives_the_same_history_and_another_seed_another() -> None:
    assert generate("en", seed=3) == generate("en", seed=3)
    assert generate("en", seed=3).turns != generate("en", seed=4).turns


def test_the_long_size_has_two_thousand_turns_and_the_same_questions() -> None:
    long, full = generate("id", size="long"), generate("id", size="full")
    assert len(long.turns) >= 2000
    assert Counter(q.category for q in long.questions)["paraphrase"] == 42
    assert len(full.questions) - len(long.questions) in range(-10, 11)


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_languages_are_written_apart_not_translated_word_for_word(
    language: Language,
) -> None:
    other: Language = "id" if language == "en" else "en"
    mine = {word for fact in FACTS[language] for word in stems(fact.said)}
    theirs = {word for fact in FACTS[other] for word in stems(fact.said)}
    assert len(mine & theirs) < len(mine) / 5


def test_shares_no_word_counts_an_inflected_or_suffixed_word_as_shared() -> None:
    assert not shares_no_word("when was I cooking", "I cooked adobo")
    assert not shares_no_word("kucingku takut apa", "kucing itu ngumpet")
    assert shares_no_word("what is my cat scared of", "Mochi hides whenever I vacuum")


def test_a_near_miss_shares_the_questions_words_in_another_chat(history: History) -> None:
    facts, voice = FACTS[history.language], VOICES[history.language]
    chat_of = {turn.text: turn.chat for turn in history.turns}
    for fact, near in zip(facts, NEAR[history.language], strict=True):
        assert stems(render(fact.ask, voice, named=False)) & stems(near), near
        assert chat_of[near] != chat_of[fact.said], near
