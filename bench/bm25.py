"""Textbook Okapi BM25 over a list of texts: the baseline recall_quality compares with.

Words are ``\\w+`` runs of the lower-cased text (no stop words, no stemming); k1 = 1.5,
b = 0.75; idf = ln((N - n + 0.5) / (n + 0.5) + 1), the non-negative form, so a word in
more than half the texts still counts a little instead of counting against.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

WORD = re.compile(r"\w+")
K1 = 1.5
B = 0.75


def words(text: str) -> list[str]:
    """The lower-cased words of ``text``."""
    return WORD.findall(text.lower())


class Okapi:
    """An index of ``texts``; ``rank`` orders them for a query."""

    def __init__(self, texts: Sequence[str]) -> None:
        self.counts = [Counter(words(text)) for text in texts]
        self.lengths = [sum(count.values()) for count in self.counts]
        self.mean = sum(self.lengths) / len(self.lengths) if self.lengths else 0.0
        frequency = Counter(word for count in self.counts for word in count)
        n = len(texts)
        self.idf = {w: math.log((n - df + 0.5) / (df + 0.5) + 1) for w, df in frequency.items()}

    def score(self, query: Sequence[str], index: int) -> float:
        """BM25 of text ``index`` for the query's words."""
        count, scale = self.counts[index], K1 * (1 - B + B * self.lengths[index] / self.mean)
        return sum(
            self.idf[word] * count[word] * (K1 + 1) / (count[word] + scale)
            for word in query
            if word in count
        )

    def rank(self, query: str) -> list[int]:
        """The indices of the texts sharing a word with ``query``, best first (ties: the
        later text first)."""
        asked = words(query)
        scores = {i: self.score(asked, i) for i in range(len(self.counts))}
        matching = [i for i, score in scores.items() if score > 0]
        return sorted(matching, key=lambda i: (-scores[i], -i))
