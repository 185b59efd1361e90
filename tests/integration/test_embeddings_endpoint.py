"""The chat endpoint's /v1/embeddings against a real loopback server: vectors in order and
normalised, in batches, with the chat key sent to that endpoint alone; a refused key, a
server error, a changed dimension, a slow answer, a body that is not embeddings, a
redirect and a person's loopback endpoint are each EmbeddingUnavailable saying which."""

from __future__ import annotations

import time
from collections.abc import Iterator

import numpy
import pytest

from app.doctor import embeddings
from config.settings import Settings
from evals.fixtures import FixtureServer, RecordedRequest, Reply
from providers import EmbeddingUnavailable
from providers.embeddings import BATCH, PROBE, EndpointEmbedder
from tests.support.fake_openai import FakeOpenAIServer, Step

KEY = "sk-embedding-secret"


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


def endpoint(url: str, key: str | None = KEY, **fields: object) -> EndpointEmbedder:
    settings = Settings(
        provider="openai-compatible", base_url=url, api_key=key, chat_model="fake-model", **fields
    )
    return EndpointEmbedder(settings, "nomic-embed-text")


def test_passages_come_back_in_order_normalised_and_batched(server: FakeOpenAIServer) -> None:
    embedder = endpoint(server.url)
    texts = [f"remark {i}" for i in range(BATCH + 8)]
    vectors = embedder.passages(texts)
    assert vectors.shape == (BATCH + 8, 8) and vectors.dtype == numpy.float32
    assert numpy.allclose(numpy.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    assert [len(request["input"]) for request in server.requests] == [BATCH, 8]
    assert server.requests[0] == {
        "model": "nomic-embed-text",
        "input": texts[:BATCH],
        "encoding_format": "float",
    }
    assert numpy.allclose(embedder.query("remark 3"), vectors[3], atol=1e-6)
    assert embedder.dimensions == 8
    assert {h["Authorization"] for h in server.headers} == {f"Bearer {KEY}"}


def test_no_key_sends_no_authorization(server: FakeOpenAIServer) -> None:
    endpoint(server.url, key=None).query("hello")
    assert "Authorization" not in server.headers[0]


def test_the_dimension_is_probed_once_when_nothing_was_embedded(server: FakeOpenAIServer) -> None:
    embedder = endpoint(server.url)
    assert (embedder.dimensions, embedder.dimensions) == (8, 8)
    assert [request["input"] for request in server.requests] == [[PROBE]]


@pytest.mark.parametrize("status", [401, 500])
def test_an_http_error_is_unavailable(server: FakeOpenAIServer, status: int) -> None:
    server.push(Step(status=status), Step(status=status))
    embedder = endpoint(server.url)
    with pytest.raises(EmbeddingUnavailable, match=f"nomic-embed-text.*HTTP {status}"):
        embedder.query("hello")
    with pytest.raises(EmbeddingUnavailable, match=f"HTTP {status}"):
        embedder.dimensions  # noqa: B018 (the probe is what is tested)


def test_a_changed_dimension_is_refused(server: FakeOpenAIServer) -> None:
    embedder = endpoint(server.url)
    embedder.passages(["first"])
    server.push(Step(dimensions=4))
    with pytest.raises(EmbeddingUnavailable, match=r"shape \(1, 4\), expected \(1, 8\)"):
        embedder.query("second")
    assert embedder.query("third").shape == (8,)


def test_a_slow_query_gives_up_after_two_seconds(server: FakeOpenAIServer) -> None:
    server.push(Step(delay=4))
    started = time.monotonic()
    with pytest.raises(EmbeddingUnavailable, match="did not answer in time"):
        endpoint(server.url).query("hello")
    assert time.monotonic() - started < 3.5


def test_a_body_that_is_not_embeddings_is_unavailable(server: FakeOpenAIServer) -> None:
    server.push(Step(malformed=True))
    with pytest.raises(EmbeddingUnavailable, match="not embeddings"):
        endpoint(server.url).passages(["hello"])


def test_a_down_endpoint_is_unavailable() -> None:
    with FakeOpenAIServer() as stopped:
        url = stopped.url
    with pytest.raises(EmbeddingUnavailable, match="could not connect"):
        endpoint(url).query("hello")


class Redirect(FixtureServer):
    """Answers every request with a redirect to ``target``."""

    def __init__(self, target: str) -> None:
        super().__init__()
        self.target = target

    def handle(self, request: RecordedRequest) -> Reply:
        return Reply(307, headers={"Location": self.target})


def test_the_key_never_follows_a_redirect(server: FakeOpenAIServer) -> None:
    with Redirect(server.url + "/embeddings") as redirect:
        with pytest.raises(EmbeddingUnavailable, match="HTTP 307"):
            endpoint(redirect.url + "/v1").query("hello")
        assert redirect.requests[0].headers["authorization"] == f"Bearer {KEY}"
    assert server.requests == []


def test_a_persons_loopback_endpoint_is_refused(server: FakeOpenAIServer) -> None:
    embedder = endpoint(server.url, accounts_on=True, personal_endpoints=frozenset({"base_url"}))
    with pytest.raises(EmbeddingUnavailable, match="refused"):
        embedder.query("hello")
    assert server.requests == []


def test_doctor_names_the_endpoint_model_or_why_it_fails(server: FakeOpenAIServer) -> None:
    settings = Settings(
        provider="openai-compatible",
        base_url=server.url,
        chat_model="fake-model",
        embedding_model="nomic-embed-text",
    )
    assert (
        embeddings(settings)
        .line()
        .startswith("✓ embeddings: endpoint:nomic-embed-text, 8 dimensions; the first text took")
    )
    server.push(Step(status=500))
    failed = embeddings(settings)
    assert (failed.status, failed.fatal) == ("fail", False)
    assert "HTTP 500; recall finds words only" in failed.detail
    assert "COMPANION_EMBEDDING_MODEL" in failed.fix
