"""bench.vector_cache: a text is embedded once per model and kind, then read from disk."""

from __future__ import annotations

from pathlib import Path

import numpy

from bench.vector_cache import CachedEmbedder
from tests.support.embedders import FakeEmbedder

TEXTS = ["Mochi hides under the bed", "I sold the old car", "Mochi hides under the bed"]


def test_a_second_run_reads_every_vector_from_the_file(tmp_path: Path) -> None:
    first = FakeEmbedder()
    vectors = CachedEmbedder(first, tmp_path).passages(TEXTS)
    assert first.calls == 1 + 2  # the probe, then the repeated text once
    again = FakeEmbedder()
    assert numpy.array_equal(CachedEmbedder(again, tmp_path).passages(TEXTS), vectors)
    assert again.calls == 1  # the probe only
    assert numpy.array_equal(vectors, first.passages(TEXTS))


def test_queries_models_and_passages_are_kept_apart(tmp_path: Path) -> None:
    embedder = FakeEmbedder()
    cached = CachedEmbedder(embedder, tmp_path)
    cached.passages(["what is my cat scared of"])
    cached.query("what is my cat scared of")
    assert embedder.calls == 1 + 2  # a query is not a passage (e5 prefixes them apart)
    other = FakeEmbedder("fake:another")
    CachedEmbedder(other, tmp_path).passages(["what is my cat scared of"])
    assert other.calls == 1 + 1
    assert cached.passages([]).shape == (0, embedder.dimensions)


class Shifted(FakeEmbedder):
    """The fake embedder with its arithmetic changed, under the same model name."""

    def _vector(self, text: str) -> numpy.ndarray:
        return numpy.roll(super()._vector(text), 1)


def test_an_embedder_that_changed_under_the_same_name_embeds_again(tmp_path: Path) -> None:
    CachedEmbedder(FakeEmbedder(), tmp_path).passages(TEXTS)
    changed = Shifted()
    vectors = CachedEmbedder(changed, tmp_path).passages(TEXTS)
    assert changed.calls == 1 + 2
    assert numpy.array_equal(vectors, changed.passages(TEXTS))
