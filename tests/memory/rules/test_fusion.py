"""memory.rules.fusion and memory.rules.speaker: pure ranking rules both backends share."""

from __future__ import annotations

import pytest

from memory.rules.fusion import (
    RANK_WEIGHT,
    SPEAKER_BOOST,
    WEAK_WEIGHT,
    fuse,
    kept,
    matched,
    normalised,
    rank,
    rank_fusion,
    score_fusion,
)
from memory.rules.speaker import preferred_speaker, wants_after, wants_before


def test_min_max_scales_to_zero_one_and_equal_scores_all_count_one() -> None:
    assert normalised({1: -3.0, 2: -1.0, 3: -2.0}) == {1: 0.0, 2: 1.0, 3: 0.5}
    assert normalised({7: 0.2}) == {7: 1.0}
    assert normalised({7: 0.2, 8: 0.2}) == {7: 1.0, 8: 1.0}
    assert normalised({}) == {}


def test_score_fusion_weighs_both_and_a_missing_side_counts_zero() -> None:
    lexical = {1: 10.0, 2: 5.0, 3: 0.0}
    dense = {2: 0.9, 4: 0.5, 3: 0.1}
    fused = score_fusion(lexical, dense)
    assert fused == pytest.approx({1: 0.5, 2: 0.75, 3: 0.0, 4: 0.25})
    assert score_fusion(lexical, dense, weight=1.0)[1] == 1.0


def test_rank_fusion_first_in_both_is_one_and_lexical_ranks_weigh_more() -> None:
    fused = rank_fusion({1: 3.0, 2: 2.0, 3: 1.0}, {1: 0.9, 3: 0.8})
    assert fused[1] == pytest.approx(1.0)
    assert fused[1] > fused[3] > fused[2]
    only = rank_fusion({1: 1.0}, {2: 1.0})
    assert only[1] == pytest.approx(0.7) and only[2] == pytest.approx(0.3)
    assert rank_fusion({1: 1.0}, {2: 1.0}, weight=0.5) == pytest.approx({1: 0.5, 2: 0.5})


def test_fuse_with_one_side_empty_is_the_other_scaled() -> None:
    assert fuse({1: 4.0, 2: 2.0}, {}) == {1: 1.0, 2: 0.0}
    assert fuse({}, {5: 0.8, 6: 0.4}) == pytest.approx({5: 1.0, 6: 0.0})
    assert fuse({1: 1.0}, {2: 1.0}, "score") == pytest.approx({1: 0.5, 2: 0.5})


def test_matched_is_the_share_of_the_question_the_best_lexical_hits_hold_between_them() -> None:
    texts = {
        1: "My boss Dana is great",
        2: "Dana started learning the cello",
        3: "a scarf for winter",
        4: "my boss plays cello",
    }
    lexical = {1: 3.0, 2: 2.0, 3: 1.0}
    # boss, instrument, learn* (a prefix root meets "learning"): two of three between them
    assert matched("which instrument is my boss learning", lexical, texts) == pytest.approx(2 / 3)
    assert matched("which instrument is my boss learning", {3: 1.0}, texts) == 0.0
    assert matched("which instrument is my boss learning", {}, texts) == 0.0
    # only the three best lexical hits count (4 holds the question's words but ranks fourth)
    assert matched("boss cello", {1: 4.0, 2: 3.0, 3: 2.0, 4: 1.0}, texts) == pytest.approx(1.0)
    assert matched("boss cello", {3: 4.0, 2: 3.0, 1: 2.0, 4: 1.0}, texts) == pytest.approx(1.0)
    assert matched("plays", {3: 4.0, 2: 3.0, 1: 2.0, 4: 1.0}, texts) == 0.0
    assert matched("what is it", lexical, texts) == 1.0  # no search terms: nothing to judge


def test_a_question_lexical_barely_matched_leans_on_meaning() -> None:
    lexical = {1: 3.0, 2: 2.0}
    dense = {3: 0.9, 4: 0.2}
    words_found = fuse(lexical, dense)
    assert max(words_found, key=words_found.__getitem__) == 1
    assert words_found == fuse(lexical, dense, share=1.0)
    meaning = fuse(lexical, dense, share=0.2)
    assert max(meaning, key=meaning.__getitem__) == 3
    assert meaning == rank_fusion(lexical, dense, weight=WEAK_WEIGHT)
    assert words_found == rank_fusion(lexical, dense, weight=RANK_WEIGHT)
    assert fuse(lexical, dense, "score", share=0.2) == score_fusion(lexical, dense, WEAK_WEIGHT)


def test_each_sides_best_are_kept() -> None:
    lexical = {1: 3.0, 2: 2.0, 3: 1.0}
    dense = {4: 0.5, 5: 0.9, 6: 0.1}
    assert kept(lexical, dense) == [1, 2, 5, 4]
    assert kept({}, dense) == [5, 4]


def test_rank_boosts_the_named_speaker_then_prefers_the_session_then_the_newer() -> None:
    scores = {1: 0.5, 2: 0.5, 3: 0.5, 4: 0.45}
    assert [i for i, _ in rank(scores, limit=4)] == [3, 2, 1, 4]
    assert [i for i, _ in rank(scores, preferred={1}, limit=2)] == [1, 3]
    boosted = rank(scores, boosted={4}, limit=1)
    assert boosted == [(4, pytest.approx(0.45 * (1 + SPEAKER_BOOST)))]


@pytest.mark.parametrize(
    ("query", "names", "speaker"),
    [
        ("what is my cat scared of", (), "user"),
        ("what did I cook last week", (), "user"),
        ("aku masak apa kemarin", (), "user"),
        ("what did you recommend for my back", (), None),
        ("what did you recommend", (), "assistant"),
        ("kamu bilang apa soal film itu", (), "assistant"),
        ("where does Budi work", ("Budi Santoso",), "user"),
        ("where does Budi work", (), None),
        ("the blue bike", (), None),
    ],
)
def test_the_speaker_a_question_names(query: str, names: tuple[str, ...], speaker: str) -> None:
    assert preferred_speaker(query, names) == speaker


def test_a_short_reply_shows_what_it_answered_and_a_question_its_answer() -> None:
    long = "I think we should paint the whole fence on Saturday morning before it gets hot " * 2
    assert wants_before("yes, the blue one", "Blue or red?")
    assert not wants_before("yes, the blue one", " ")
    assert not wants_before(long, "Blue or red?")  # a statement stands on its own
    assert not wants_before("Zara has started learning the ukulele.", "Ha, I love that.")
    assert wants_before("iya yang merah, yang ada keranjangnya", "Yang merah atau biru?")
    assert wants_after("Which bike did you buy in the end, the blue or the red?", long)
    assert not wants_after(long, "Noted! I'll keep that in mind.")  # no budget for that
