"""Text embeddings for recall: the bundled embedder or the chat endpoint's /v1/embeddings.

``open_embedder(settings)`` picks one from ``Settings.embedding_model``: unset or "local"
is the embedded model, "off" is none (recall stays lexical), any other name is that model
on the configured chat endpoint. Every ``Embedder`` returns float32, L2-normalised
vectors; ``model`` names the vector space stored beside each vector. The calls block:
callers run them in a thread. Any failure (down, slow, wrong dimension, weights missing)
is ``EmbeddingUnavailable``, whose message says which.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy

from config.settings import Settings


class EmbeddingUnavailable(Exception):
    """No vector now: the embedder is down, slow, misconfigured or its weights are missing."""


class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of one model's space."""

    model: str  # e.g. "local:multilingual-e5-small" or "endpoint:nomic-embed-text"
    dimensions: int

    def passages(self, texts: Sequence[str]) -> numpy.ndarray:
        """Vectors for stored texts, shape (len(texts), dimensions); blocking."""
        ...

    def query(self, text: str) -> numpy.ndarray:
        """The vector of a search query, shape (dimensions,); blocking."""
        ...


def open_embedder(settings: Settings) -> Embedder | None:
    """The embedder the settings choose, or None when embeddings are off.

    Until the bundled model lands (issue 21), every choice is None: lexical recall.
    """
    return None
