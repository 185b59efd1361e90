"""Verify: ask the chat endpoint's ``/models`` and say, by cause, whether it will answer.

``verify_endpoint`` tells apart a refusal by the address guard (``tools.net``), an
unreachable endpoint, a refused key, a wrong URL and a model missing from the list; it
never shows the key. ``endpoint_status`` is the one line the Settings tab shows.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass

import httpx

from config.settings import Settings
from providers.llama_server import local_server
from tools.net import Refused, TooLarge, endpoint_client, read_limited

MODELS_BYTES = 8_000_000  # a /models answer (OpenRouter lists hundreds of models)


@dataclass(frozen=True)
class Verified:
    """What Verify learned about the chat endpoint: a one-line verdict and its models."""

    text: str
    models: tuple[str, ...] = ()
    ok: bool = False


async def verify_endpoint(settings: Settings, timeout: float = 5.0) -> Verified:
    """Ask the endpoint's ``/models`` with the key in effect and tell the causes apart:
    refused by the address guard (a person's endpoint on a private address), unreachable,
    key refused (401/403), wrong URL (404), or OK with or without the chat model in the
    list. Never shows the key."""
    if settings.is_local:
        return Verified(await endpoint_status(settings), ok=True)
    if not settings.base_url:
        return Verified("❌ no base URL is set: enter one (and its API key) above")
    base = settings.base_url.rstrip("/")
    headers = {"Authorization": f"Bearer {settings.api_key}"} if settings.api_key else {}
    try:
        async with (
            endpoint_client(settings, "base_url", timeout=httpx.Timeout(timeout)) as client,
            client.stream("GET", f"{base}/models", headers=headers) as response,
        ):
            status = response.status_code
            body = await read_limited(response, MODELS_BYTES) if status < 400 else b""
    except Refused as exc:
        return Verified(f"❌ {base} was not contacted: {exc}")
    except (httpx.HTTPError, TooLarge) as exc:
        return Verified(
            f"❌ {base} is unreachable ({type(exc).__name__}): check the base URL and that "
            "the server is running"
        )
    if status in (401, 403):
        given = "the API key was refused" if settings.api_key else "it needs an API key"
        return Verified(f"❌ {base}: {given} (HTTP {status}); check the key")
    if status == 404:
        return Verified(
            f"❌ {base}: not found (HTTP 404): the base URL is wrong (it usually ends in /v1)"
        )
    if status >= 400:
        return Verified(f"❌ {base} answered HTTP {status}; try again in a moment")
    models = await asyncio.to_thread(_model_ids, body)
    model = settings.chat_model
    if not model:
        return Verified(f"⚠️ {base}: OK, but no chat model is chosen yet", models, ok=True)
    if models and model not in models:
        return Verified(
            f"⚠️ {base}: OK, but the chat model `{model}` is not in its list of "
            f"{len(models)} models (a wrong name gives HTTP 404 when you chat)",
            models,
            ok=True,
        )
    listed = "listed" if models else "the endpoint lists no models"
    return Verified(f"✅ {base}: OK, chat model `{model}` ({listed})", models, ok=True)


def _model_ids(body: bytes) -> tuple[str, ...]:
    """The model ids of an OpenAI-style ``/models`` answer (none if it is not one)."""
    try:
        data = json.loads(body).get("data") or []
        return tuple(sorted(str(m["id"]) for m in data if isinstance(m, dict) and m.get("id")))
    except (ValueError, AttributeError, TypeError):
        return ()


async def endpoint_status(settings: Settings) -> str:
    """The endpoint's state for the Settings tab, by cause (never shows the key)."""
    if settings.is_local:
        server = local_server()
        running = server.process is not None and server.process.poll() is None
        state = f"running at {server.url}" if running else "starts on the first message"
        return f"local llama.cpp server: {state}"
    return (await verify_endpoint(settings)).text
