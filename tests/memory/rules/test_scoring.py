"""FSRS scoring: the retrievability curve and the effect of a recall."""

from __future__ import annotations

import itertools
import math

import pytest

from memory.rules import scoring
from memory.rules.scoring import Strength


def test_retrievability_is_one_at_zero_and_ninety_percent_at_stability() -> None:
    assert scoring.retrievability(0, 5.0) == 1.0
    for stability in (0.5, 1.0, 3.7, 30.0, 365.0):
        assert math.isclose(scoring.retrievability(stability, stability), 0.9, rel_tol=1e-12)


def test_retrievability_decays_monotonically_and_stays_positive() -> None:
    values = [scoring.retrievability(t, 3.0) for t in range(0, 2000, 7)]
    assert all(a > b for a, b in itertools.pairwise(values))
    assert values[-1] > 0


def test_higher_stability_forgets_slower() -> None:
    assert scoring.retrievability(10, 20.0) > scoring.retrievability(10, 2.0)


def test_negative_elapsed_time_counts_as_zero() -> None:
    assert scoring.retrievability(-3, 2.0) == 1.0


@pytest.mark.parametrize("elapsed", [0.5, 1.0, 5.0, 30.0])
def test_recall_raises_stability_and_counts(elapsed: float) -> None:
    before = Strength(3.0, 5.0, 2)
    after = scoring.recall(before, elapsed)
    assert after.stability > before.stability
    assert after.recall_count == 3
    assert scoring.MIN_DIFFICULTY <= after.difficulty <= scoring.MAX_DIFFICULTY


def test_recall_when_nearly_forgotten_helps_more_than_cramming() -> None:
    start = Strength(3.0, 5.0)
    assert scoring.recall(start, 60).stability > scoring.recall(start, 1).stability
    assert scoring.recall(start, 0).stability == pytest.approx(start.stability)


def test_easy_memories_grow_faster_than_hard_ones() -> None:
    easy = scoring.recall(Strength(3.0, 2.0), 5)
    hard = scoring.recall(Strength(3.0, 9.0), 5)
    assert easy.stability > hard.stability


def test_difficulty_reverts_toward_initial() -> None:
    assert scoring.recall(Strength(3.0, 10.0), 2).difficulty < 10.0
    assert scoring.recall(Strength(3.0, 1.0), 2).difficulty > 1.0


def test_initial_strength_uses_fsrs_defaults() -> None:
    first = scoring.initial_strength()
    assert first.stability == scoring.W2
    assert first.difficulty == scoring.W4
    assert first.recall_count == 0
