"""Embedding vectors kept on disk by model and text, so a bench embeds each text once.

``CachedEmbedder`` wraps an ``providers.embeddings.Embedder``: a passage or query it saw
before (same model, same kind, same text: a SHA-256 key) comes from
``~/.cache/companion/bench/<model>.npz``; the others go to the embedder in one call and
are added to the file. The file also keeps the vector of a probe sentence: when the
embedder gives another one now (its weights or its arithmetic changed under the same
model name), the file is ignored and written anew. A bilingual history embedded on
SQLite is then free on Postgres and on the next run (the bundled embedder does a few
texts a second on a busy 2-core machine).
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy

from providers.embeddings import Embedder

CACHE = Path("~/.cache/companion/bench").expanduser()
PROBE = "The quick brown fox jumps over the lazy dog; rubah cokelat melompati anjing."


def key(kind: str, text: str) -> str:
    """The cache key of a passage or a query."""
    return hashlib.sha256(f"{kind}\0{text}".encode()).hexdigest()


class CachedEmbedder:
    """``embedder`` with its vectors remembered in ``folder``."""

    def __init__(self, embedder: Embedder, folder: Path = CACHE) -> None:
        self.embedder, self.model, self.dimensions = embedder, embedder.model, embedder.dimensions
        self.path = folder / f"{re.sub(r'[^A-Za-z0-9.-]+', '_', self.model)}.npz"
        self.probe = embedder.passages([PROBE])[0]
        self.vectors: dict[str, numpy.ndarray] = {}
        if self.path.exists():
            with numpy.load(self.path) as stored:
                same = "probe" in stored.files and stored["probe"].shape == self.probe.shape
                if same and numpy.allclose(stored["probe"], self.probe, atol=1e-5):
                    keys, vectors = stored["keys"].tolist(), stored["vectors"]
                    self.vectors = dict(zip(keys, vectors, strict=True))

    def _vectors(self, kind: str, texts: Sequence[str]) -> numpy.ndarray:
        keys = [key(kind, text) for text in texts]
        missing = list(
            dict.fromkeys(t for t, k in zip(texts, keys, strict=True) if k not in self.vectors)
        )
        if missing:
            made = (
                self.embedder.passages(missing)
                if kind == "passage"
                else numpy.stack([self.embedder.query(text) for text in missing])
            )
            self.vectors.update({key(kind, t): v for t, v in zip(missing, made, strict=True)})
            self._save()
        if not texts:
            return numpy.zeros((0, self.dimensions), dtype=numpy.float32)
        return numpy.stack([self.vectors[k] for k in keys])

    def _save(self) -> None:
        """Write the file whole, then put it in place (other runs may write it too: the
        last one wins, and a cache missing some vectors only costs time)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle, name = tempfile.mkstemp(dir=self.path.parent, suffix=".partial.npz")
        with os.fdopen(handle, "wb") as partial:
            keys = numpy.array(list(self.vectors))
            vectors = numpy.stack(list(self.vectors.values()))
            numpy.savez(partial, keys=keys, vectors=vectors, probe=self.probe)
        Path(name).replace(self.path)

    def passages(self, texts: Sequence[str]) -> numpy.ndarray:
        """Vectors for stored texts, from the file where it has them."""
        return self._vectors("passage", texts)

    def query(self, text: str) -> numpy.ndarray:
        """The vector of a search query, from the file where it has it."""
        return self._vectors("query", [text])[0]
