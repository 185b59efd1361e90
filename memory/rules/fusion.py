"""How memory_search fuses its two retrievers' candidates into one ranking of turns.

Both backends hand in (message id -> relevance) maps, higher is better: lexical (BM25,
negated) and dense (cosine). ``fuse`` combines them by weighted reciprocal-rank fusion
(the default: ``RANK_WEIGHT`` of the lexical rank) or min-max score fusion. The lexical
side leads only when it found the question's words: when none of its best hits holds
``MATCHED_ENOUGH`` of them (``matched``), its share drops to ``WEAK_WEIGHT`` and the
question is left to meaning. Then ``rank`` applies the speaker boost, keeps each side's
best few (``kept``), and breaks ties toward the current session, then the newer turn.
Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Literal

from memory.rules.search import query_terms
from memory.rules.text import words

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
# Measured on bench.histories' long history (README): a question whose words the best
# lexical hits barely hold (a paraphrase) lost its dense finds to word matches at 0.7;
# below half its terms, lexical's share falls to 0.3, and dense's best two are kept.
MATCHED_ENOUGH = 0.5  # share of the question's terms the best lexical hits hold
MATCHED_TOP = 3  # the lexical hits whose words are counted
WEAK_WEIGHT = 0.3  # lexical's share (either method) when they hold less
DENSE_KEPT = 2  # the best dense hits hybrid never cuts (a paraphrase's answer)


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


def best(scores: Mapping[int, float], count: int) -> list[int]:
    """The ``count`` ids with the highest scores, best first."""
    return sorted(scores, key=lambda key: -scores[key])[:count]


def matched(query: str, lexical: Mapping[int, float], texts: Mapping[int, str]) -> float:
    """The share of ``query``'s search terms (``query_terms``) that the ``MATCHED_TOP``
    best lexical hits hold between them (a two-chat question's hits each hold a part), a
    prefix term counting when it starts a word; ``texts`` are the hits' texts. 1 when
    the query has no terms; 0 when nothing matched."""
    terms = query_terms(query)
    if not terms:
        return 1.0
    held = {word for key in best(lexical, MATCHED_TOP) for word in words(texts.get(key, ""))}
    found = sum(
        any(word == root or (prefix and word.startswith(root)) for word in held)
        for root, prefix in terms
    )
    return found / len(terms)


def kept(lexical: Mapping[int, float], dense: Mapping[int, float]) -> list[int]:
    """The ids ``rank`` never cuts: lexical's ``LEXICAL_KEPT`` best, dense's ``DENSE_KEPT``."""
    return best(lexical, LEXICAL_KEPT) + best(dense, DENSE_KEPT)


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
    lexical: Mapping[int, float],
    dense: Mapping[int, float],
    method: Fusion = FUSION,
    *,
    share: float = 1.0,
) -> dict[int, float]:
    """One relevance per candidate, 0..1; a retriever that found nothing leaves the
    other's scores as they rank (min-max). ``share`` is ``matched``'s: under
    ``MATCHED_ENOUGH``, lexical weighs ``WEAK_WEIGHT``."""
    if not dense:
        return normalised(lexical)
    if not lexical:
        return normalised(dense)
    weak = share < MATCHED_ENOUGH
    if method == "score":
        return score_fusion(lexical, dense, WEAK_WEIGHT if weak else LEXICAL_WEIGHT)
    return rank_fusion(lexical, dense, weight=WEAK_WEIGHT if weak else RANK_WEIGHT)


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
