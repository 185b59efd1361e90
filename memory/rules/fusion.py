"""How memory_search fuses its two retrievers' candidates into one ranking of turns.

Both backends hand in (message id -> relevance) maps, higher is better: lexical (BM25,
negated) and dense (cosine). ``fuse`` combines them by weighted reciprocal-rank fusion
(the default: ``RANK_WEIGHT`` of the lexical rank) or min-max score fusion; then
``rank`` applies the speaker boost and breaks ties toward the current session, then the
newer turn. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Literal

Fusion = Literal["score", "rank"]

# Measured on bench.histories (README): weighted reciprocal-rank fusion, lexical 0.7, kept
# two-chat questions as lexical finds them and gained the most overall; 0.5/0.5 score
# fusion found more paraphrases but lost 11-16 points on the two-chat questions.
FUSION: Fusion = "rank"
LEXICAL_WEIGHT = 0.5  # score fusion's share of the lexical score
RANK_WEIGHT = 0.7  # rank fusion's share of the lexical rank
RRF_K = 60  # reciprocal-rank fusion's damping constant (Cormack et al.)
CANDIDATES = 50  # each retriever's pool before fusion
SPEAKER_BOOST = 0.15  # a turn by the speaker the question names scores this much more
LEXICAL_KEPT = 2  # the best lexical hits hybrid never cuts (a rare name, a number)


def normalised(scores: Mapping[int, float]) -> dict[int, float]:
    """Min-max scaled to 0..1 (the best 1); all equal (or one): every score is 1."""
    if not scores:
        return {}
    low, high = min(scores.values()), max(scores.values())
    if high - low < 1e-12:
        return dict.fromkeys(scores, 1.0)
    return {key: (value - low) / (high - low) for key, value in scores.items()}


def score_fusion(
    lexical: Mapping[int, float], dense: Mapping[int, float], weight: float = LEXICAL_WEIGHT
) -> dict[int, float]:
    """``weight`` × min-max lexical + (1 − ``weight``) × min-max dense; missing counts 0."""
    lex, vec = normalised(lexical), normalised(dense)
    return {
        key: weight * lex.get(key, 0.0) + (1 - weight) * vec.get(key, 0.0)
        for key in lex.keys() | vec.keys()
    }


def _ranks(scores: Mapping[int, float]) -> dict[int, int]:
    ordered = sorted(scores, key=lambda key: (-scores[key], -key))
    return {key: rank for rank, key in enumerate(ordered, start=1)}


def rank_fusion(
    lexical: Mapping[int, float],
    dense: Mapping[int, float],
    k: int = RRF_K,
    weight: float = RANK_WEIGHT,
) -> dict[int, float]:
    """Weighted reciprocal-rank fusion, ``weight``/(k + lexical rank) + (1 − ``weight``)/(k
    + dense rank), scaled so a first place in both is 1."""
    fused: dict[int, float] = {}
    for ranks, share in ((_ranks(lexical), weight), (_ranks(dense), 1 - weight)):
        for key, rank in ranks.items():
            fused[key] = fused.get(key, 0.0) + share / (k + rank)
    return {key: value * (k + 1) for key, value in fused.items()}


def fuse(
    lexical: Mapping[int, float], dense: Mapping[int, float], method: Fusion = FUSION
) -> dict[int, float]:
    """One relevance per candidate, 0..1; a retriever that found nothing leaves the
    other's scores as they rank (min-max)."""
    if not dense:
        return normalised(lexical)
    if not lexical:
        return normalised(dense)
    return score_fusion(lexical, dense) if method == "score" else rank_fusion(lexical, dense)


def rank(
    scores: Mapping[int, float],
    *,
    boosted: Collection[int] = (),
    preferred: Collection[int] = (),
    kept: Collection[int] = (),
    limit: int,
) -> list[tuple[int, float]]:
    """The ``limit`` best (id, score): ``boosted`` ids (the named speaker's turns) score
    ``SPEAKER_BOOST`` more; equal scores go to ``preferred`` ids (the current session's),
    then to the newer (larger) id. ``kept`` ids (the best lexical hits) are never cut:
    they take the places of the weakest others."""
    final = {
        key: value * (1 + SPEAKER_BOOST) if key in boosted else value
        for key, value in scores.items()
    }
    ordered = sorted(final, key=lambda key: (-round(final[key], 9), key not in preferred, -key))
    top = ordered[:limit]
    missing = [key for key in ordered[limit:] if key in kept]
    if missing:
        others = [key for key in top if key not in kept]
        cut = set(others[max(0, len(others) - len(missing)) :])
        top = [key for key in ordered if (key in top and key not in cut) or key in missing]
    return [(key, final[key]) for key in top[:limit]]
