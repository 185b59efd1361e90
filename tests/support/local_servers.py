"""Model servers as they run on a person's machine, on loopback ports, for discovery tests.

``FakeOllama`` answers Ollama's ``GET /api/tags`` in the shape of Ollama's API docs
("List Local Models": ``models[]`` with ``name``, ``model``, ``modified_at``, ``size``,
``digest``, ``details``) and chats through its OpenAI-compatible ``/v1`` like
``FakeOpenAIServer``; every GET's path is recorded, so a test sees that nobody asked.
``silent_port`` listens and never answers (a hung server). ``probes_for`` points
discovery's probes at these ports instead of the real defaults.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from typing import Any

from providers.discovery import Kind, Probe
from tests.support.fake_openai import FakeOpenAIServer


def ollama_tags(names: list[str]) -> dict[str, Any]:
    """Ollama's answer to ``GET /api/tags`` listing ``names``."""
    return {
        "models": [
            {
                "name": name,
                "model": name,
                "modified_at": "2026-11-04T14:56:49.277302595-07:00",
                "size": 1_929_912_432,
                "digest": f"{index:064x}",
                "details": {
                    "format": "gguf",
                    "family": "qwen2",
                    "families": ["qwen2"],
                    "parameter_size": "3.1B",
                    "quantization_level": "Q4_K_M",
                },
            }
            for index, name in enumerate(names)
        ]
    }


class FakeOllama(FakeOpenAIServer):
    """Ollama on a loopback port: its model list at /api/tags, chat at /v1."""

    def __init__(self, names: list[str], **kwargs: Any) -> None:
        self.tags = names
        self.gets: list[str] = []
        super().__init__(**kwargs)
        self.model_ids = list(names)

    @property
    def port(self) -> int:
        return int(self.url.split(":")[2].split("/")[0])

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self
        base: Any = super()._handler()

        class Handler(base):  # type: ignore[misc, valid-type]
            def do_GET(self) -> None:
                server.gets.append(self.path)
                if self.path == "/api/tags":
                    self._send(200, json.dumps(ollama_tags(server.tags)).encode())
                else:
                    super().do_GET()

        return Handler


@contextmanager
def silent_port() -> Iterator[int]:
    """A loopback port that takes connections and never answers."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        yield int(listener.getsockname()[1])


def probes_for(**ports: int) -> tuple[Probe, ...]:
    """Discovery's probes at test ports: ollama=, lm_studio=, llama_cpp= (those given)."""
    known: dict[str, tuple[Kind, str]] = {
        "ollama": ("Ollama", "/api/tags"),
        "lm_studio": ("LM Studio", "/v1/models"),
        "llama_cpp": ("llama.cpp", "/v1/models"),
    }
    return tuple(Probe(known[name][0], port, known[name][1]) for name, port in ports.items())
