"""A fake ``providers.embeddings.Embedder`` for tests: deterministic, tiny, no weights.

Each word is lowercased and mapped through a small synonym table to a concept (so "cat"
and "Mochi" meet, which share no letters), then hashed into one of ``DIMENSIONS`` slots;
a text's vector is its slots' counts, L2-normalised. It can be told to fail: ``fail``
raises EmbeddingUnavailable with that reason, ``wrong_dimension`` returns vectors one
slot short (as a misconfigured endpoint would), ``delay`` sleeps before answering.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Sequence

import numpy

from providers.embeddings import EmbeddingUnavailable

DIMENSIONS = 64
SYNONYMS = {
    "cat": "pet",
    "kitten": "pet",
    "mochi": "pet",
    "kucing": "pet",
    "scared": "fear",
    "afraid": "fear",
    "hides": "fear",
    "hide": "fear",
    "takut": "fear",
    "vacuum": "cleaning",
    "hoover": "cleaning",
    "car": "vehicle",
    "sedan": "vehicle",
    "mobil": "vehicle",
    "bought": "purchase",
    "purchased": "purchase",
    "beli": "purchase",
}
_WORD = re.compile(r"\w+")
_STOP = frozenset(
    {"i", "my", "me", "you", "your", "the", "a", "an", "is", "of", "what", "whenever"}
)


def _slot(word: str) -> int:
    concept = SYNONYMS.get(word, word)
    return int.from_bytes(hashlib.blake2b(concept.encode(), digest_size=4).digest()) % DIMENSIONS


class FakeEmbedder:
    """Hashed bag of concepts; ``calls`` counts the texts it embedded."""

    def __init__(
        self,
        model: str = "fake:bag-of-concepts",
        *,
        fail: str | None = None,
        wrong_dimension: bool = False,
        delay: float = 0.0,
    ) -> None:
        self.model = model
        self.dimensions = DIMENSIONS
        self.fail = fail
        self.wrong_dimension = wrong_dimension
        self.delay = delay
        self.calls = 0

    def _vector(self, text: str) -> numpy.ndarray:
        vector = numpy.zeros(DIMENSIONS, numpy.float32)
        for word in _WORD.findall(text.lower()):
            if word not in _STOP:
                vector[_slot(word)] += 1.0
        norm = float(numpy.linalg.norm(vector))
        if norm:
            vector /= norm
        else:
            vector[0] = 1.0
        return vector[:-1] if self.wrong_dimension else vector

    def _check(self) -> None:
        if self.delay:
            time.sleep(self.delay)
        if self.fail is not None:
            raise EmbeddingUnavailable(self.fail)

    def passages(self, texts: Sequence[str]) -> numpy.ndarray:
        self._check()
        self.calls += len(texts)
        return numpy.stack([self._vector(text) for text in texts])

    def query(self, text: str) -> numpy.ndarray:
        self._check()
        self.calls += 1
        return self._vector(text)
