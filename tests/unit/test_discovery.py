"""Reading what a model server on this machine lists (providers.discovery), in the shapes
Ollama's ``/api/tags`` and an OpenAI-compatible ``/v1/models`` (LM Studio, llama.cpp's
server) answer with; the offer's words; which connection is a found server's."""

from __future__ import annotations

import json

import pytest

from providers.discovery import PROBES, FoundServer, LocalServers, model_names
from tests.support.local_servers import ollama_tags

# LM Studio's /v1/models (OpenAI's list shape; it lists its embedding models too).
LM_STUDIO = {
    "object": "list",
    "data": [
        {"id": "qwen2.5-7b-instruct", "object": "model", "owned_by": "organization_owner"},
        {"id": "text-embedding-nomic-embed-text-v1.5", "object": "model", "owned_by": "x"},
    ],
}
# llama.cpp's server: the OpenAI list in "data", and an Ollama-like "models" beside it.
LLAMA_CPP = {
    "object": "list",
    "data": [{"id": "gemma-3-4b-it-Q4_K_M.gguf", "object": "model", "owned_by": "llamacpp"}],
    "models": [{"name": "gemma-3-4b-it-Q4_K_M.gguf", "model": "gemma-3-4b-it-Q4_K_M.gguf"}],
}


def body(value: object) -> bytes:
    return json.dumps(value).encode()


def test_ollama_lists_its_models_by_name_without_the_embedding_ones() -> None:
    tags = ollama_tags(["qwen2.5:3b", "nomic-embed-text:latest", "llama3.2:latest"])
    assert model_names("/api/tags", body(tags)) == ("qwen2.5:3b", "llama3.2:latest")


@pytest.mark.parametrize(
    ("listed", "models"),
    [(LM_STUDIO, ("qwen2.5-7b-instruct",)), (LLAMA_CPP, ("gemma-3-4b-it-Q4_K_M.gguf",))],
)
def test_an_openai_compatible_list_gives_its_ids(listed: object, models: tuple[str]) -> None:
    assert model_names("/v1/models", body(listed)) == models


@pytest.mark.parametrize(
    "answer", [b"<html>It works!</html>", b"[]", body({"data": "x"}), body({"models": [1]})]
)
def test_anything_else_lists_no_model(answer: bytes) -> None:
    assert model_names("/v1/models", answer) == ()
    assert model_names("/api/tags", answer) == ()


def test_the_offer_names_the_server_and_its_first_model() -> None:
    found = FoundServer("Ollama", "http://127.0.0.1:11434/v1", ("qwen2.5:3b", "llama3.2"))
    assert found.offer == "Ollama is running with qwen2.5:3b — use it?"
    assert found.address == "127.0.0.1:11434"


@pytest.mark.parametrize(
    ("url", "kind"),
    [
        ("http://127.0.0.1:11434/v1", "Ollama"),
        ("http://localhost:1234/v1/", "LM Studio"),
        ("http://127.0.0.1:8080/v1", "llama.cpp"),
        ("http://192.168.1.5:11434/v1", None),
        ("https://openrouter.ai/api/v1", None),
        (None, None),
    ],
)
def test_a_connection_is_a_found_servers_by_its_loopback_port(url: str | None, kind: str) -> None:
    assert LocalServers(PROBES).kind_at(url) == kind
