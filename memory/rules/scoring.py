"""FSRS-style memory strength: how likely a memory is still "in mind", and how a recall
helps. ``retrievability`` decays as a power law from the last recall; ``recall`` grows
stability most when the memory was nearly forgotten; difficulty drifts back to its
initial value. The formulas and weights (FSRS-4.5 defaults): docs/storage.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime

DECAY = -0.5
FACTOR = 19 / 81

# FSRS-4.5 default weights used here (indices as in the FSRS papers).
W2 = 3.7145  # initial stability for a first "good" rating, in days
W4 = 5.1618  # initial difficulty for a "good" rating
W7 = 0.0310  # difficulty mean-reversion weight
W8 = 1.6474  # stability-growth scale (applied as e^W8)
W9 = 0.1367  # stability-growth damping by current stability
W10 = 1.0461  # stability-growth sensitivity to forgetting (1 - R)

INITIAL_STABILITY = W2
INITIAL_DIFFICULTY = W4
MIN_DIFFICULTY = 1.0
MAX_DIFFICULTY = 10.0
MIN_STABILITY = 0.01
SECONDS_PER_DAY = 86_400.0


@dataclass(frozen=True)
class Strength:
    """The FSRS state of one memory."""

    stability: float
    difficulty: float
    recall_count: int = 0


def retrievability(elapsed_days: float, stability: float) -> float:
    """R(t): the probability of recall ``elapsed_days`` after the last recall."""
    t = max(0.0, elapsed_days)
    s = max(MIN_STABILITY, stability)
    return float((1.0 + FACTOR * t / s) ** DECAY)


def elapsed_days(since: datetime, now: datetime) -> float:
    """Days between two aware moments (0 when ``now`` is earlier, e.g. a skewed clock)."""
    return max(0.0, (now - since).total_seconds() / SECONDS_PER_DAY)


def retrievability_at(strength: Strength, anchor: datetime, now: datetime) -> float:
    """R now, for a memory last recalled (or created) at ``anchor``."""
    return retrievability(elapsed_days(anchor, now), strength.stability)


def clamp_difficulty(difficulty: float) -> float:
    """Keep a difficulty inside FSRS's 1–10 scale."""
    return min(MAX_DIFFICULTY, max(MIN_DIFFICULTY, difficulty))


def recall(strength: Strength, elapsed: float) -> Strength:
    """The state after a successful recall ``elapsed`` days after the previous one."""
    s = max(MIN_STABILITY, strength.stability)
    d = clamp_difficulty(strength.difficulty)
    r = retrievability(elapsed, s)
    growth = math.exp(W8) * (11.0 - d) * s ** (-W9) * (math.exp(W10 * (1.0 - r)) - 1.0)
    new_difficulty = clamp_difficulty(W7 * INITIAL_DIFFICULTY + (1.0 - W7) * d)
    return Strength(s * (1.0 + growth), new_difficulty, strength.recall_count + 1)


def initial_strength() -> Strength:
    """The state of a newly created memory (a first "good" rating)."""
    return Strength(INITIAL_STABILITY, INITIAL_DIFFICULTY, 0)
