"""bench.bm25: textbook Okapi BM25 (k1 1.5, b 0.75, non-negative idf) on a tiny corpus."""

from __future__ import annotations

import math

import pytest

from bench.bm25 import Okapi

TEXTS = ["the cat sat", "the dog sat on the mat", "a cat and a cat", "nothing here"]


def test_the_score_is_the_textbook_formula() -> None:
    okapi = Okapi(TEXTS)
    mean = (3 + 6 + 5 + 2) / 4
    idf = math.log((4 - 2 + 0.5) / (2 + 0.5) + 1)  # "cat" is in two texts
    tf, length = 2, 5
    expected = idf * tf * 2.5 / (tf + 1.5 * (1 - 0.75 + 0.75 * length / mean))
    assert okapi.score(["cat"], 2) == pytest.approx(expected)


def test_rank_orders_matching_texts_best_first_and_drops_the_rest() -> None:
    okapi = Okapi(TEXTS)
    assert okapi.rank("Cat!") == [2, 0]
    assert okapi.rank("sat") == [0, 1]  # the shorter text first
    assert okapi.rank("unicorn") == []


def test_equal_scores_put_the_later_text_first() -> None:
    assert Okapi(["red fox", "red fox"]).rank("fox") == [1, 0]
