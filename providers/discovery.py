"""Find a model server already running on this machine: Ollama, LM Studio, llama.cpp.

``find_local_servers`` asks each known server's own port on 127.0.0.1 for its models,
all at once, each within ``TIMEOUT``: Ollama's ``/api/tags``, LM Studio's and llama.cpp's
OpenAI-compatible ``/v1/models``. What answers in that shape is a ``FoundServer``, with
the OpenAI-compatible base URL Companion would chat with and its chat models (embedding
models left out). Only the loopback address is asked, never a name, and nothing is
switched here: the app and ``companion doctor`` offer what was found, and a person
chooses. ``LocalServers`` keeps the last answer for a few seconds, so a page load and
the Settings tab opened after it ask once.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from dataclasses import dataclass
from typing import Literal

import httpx

from config.settings import origin
from tools.net import TooLarge, read_limited

log = logging.getLogger("companion.discovery")

Kind = Literal["Ollama", "LM Studio", "llama.cpp"]
LOOPBACK = "127.0.0.1"
TIMEOUT = 0.3  # seconds per server: a local server answers its model list at once
LIST_BYTES = 1_000_000
MAX_AGE = 10.0  # seconds an answer is reused (LocalServers)
EMBEDDING_WORDS = ("embed", "bge-", "minilm")  # in the names of embedding-only models
OFFER = "{kind} is running with {model} — use it?"


@dataclass(frozen=True)
class Probe:
    """Where one kind of server listens by default, and what lists its models."""

    kind: Kind
    port: int
    path: str  # "/api/tags" (Ollama's own list) or "/v1/models" (OpenAI-compatible)


PROBES = (
    Probe("Ollama", 11434, "/api/tags"),
    Probe("LM Studio", 1234, "/v1/models"),
    Probe("llama.cpp", 8080, "/v1/models"),
)


@dataclass(frozen=True)
class FoundServer:
    """A model server found on loopback: what it is, where to chat, its chat models."""

    kind: Kind
    base_url: str  # OpenAI-compatible, e.g. http://127.0.0.1:11434/v1
    models: tuple[str, ...]

    @property
    def model(self) -> str:
        """The model offered: the first it lists (Ollama lists the latest pulled first)."""
        return self.models[0]

    @property
    def offer(self) -> str:
        """'Ollama is running with qwen2.5:3b — use it?'"""
        return OFFER.format(kind=self.kind, model=self.model)

    @property
    def address(self) -> str:
        """'127.0.0.1:11434', for a line that names where it is."""
        return self.base_url.removeprefix("http://").removesuffix("/v1")


def model_names(path: str, body: bytes) -> tuple[str, ...]:
    """The chat models a model list names: ``models[].name`` in Ollama's ``/api/tags``,
    ``data[].id`` in an OpenAI-compatible ``/v1/models``; none when it is neither."""
    try:
        listed = json.loads(body)
    except ValueError:
        return ()
    key, field = ("models", "name") if path == "/api/tags" else ("data", "id")
    entries = listed.get(key) if isinstance(listed, dict) else None
    names = [str(e[field]) for e in entries or [] if isinstance(e, dict) and e.get(field)]
    return tuple(n for n in names if not any(w in n.lower() for w in EMBEDDING_WORDS))


async def _ask(client: httpx.AsyncClient, probe: Probe) -> FoundServer | None:
    origin = f"http://{LOOPBACK}:{probe.port}"
    try:
        async with client.stream("GET", f"{origin}{probe.path}") as response:
            if response.status_code != 200:
                return None
            body = await read_limited(response, LIST_BYTES)
    except (httpx.HTTPError, TooLarge) as exc:
        log.debug("no %s at %s (%s)", probe.kind, origin, type(exc).__name__)
        return None
    models = await asyncio.to_thread(model_names, probe.path, body)
    if not models:
        log.info("%s at %s lists no chat model", probe.kind, origin)
        return None
    return FoundServer(probe.kind, f"{origin}/v1", models)


async def find_local_servers(
    probes: tuple[Probe, ...] = PROBES, timeout: float = TIMEOUT
) -> list[FoundServer]:
    """The model servers answering on loopback now, in ``probes`` order."""
    async with httpx.AsyncClient(
        timeout=httpx.Timeout(timeout), trust_env=False, follow_redirects=False
    ) as client:
        answers = await asyncio.gather(*(_ask(client, probe) for probe in probes))
    return [found for found in answers if found is not None]


class LocalServers:
    """The servers found on loopback, asked again when the last answer is ``MAX_AGE`` old."""

    def __init__(self, probes: tuple[Probe, ...] = PROBES) -> None:
        self.probes = probes
        self._found: tuple[float, list[FoundServer]] | None = None

    async def current(self) -> list[FoundServer]:
        """What answers on loopback (asked now, or a few seconds ago)."""
        if self._found is None or time.monotonic() - self._found[0] > MAX_AGE:
            self._found = (time.monotonic(), await find_local_servers(self.probes))
        return self._found[1]

    def forget(self) -> None:
        """Ask again next time (a switch to a found server, or away from it)."""
        self._found = None

    def kind_at(self, base_url: str | None) -> Kind | None:
        """The kind of server whose loopback port ``base_url`` names, if any."""
        where = origin(base_url)
        if where is None or where[0] != "http" or where[1] not in ("127.0.0.1", "localhost"):
            return None
        return next((p.kind for p in self.probes if p.port == where[2]), None)


_SERVERS = LocalServers()


def local_servers() -> LocalServers:
    """The process-wide finder of local servers."""
    return _SERVERS
