"""image_generate: draw an image with the configured backend and model, saved under media/.

``Settings.image_backend`` picks one of ``BACKENDS`` (``openai``: images/generations;
``openrouter``: chat/completions with an image modality; ``url``: a key-free
``GET {base}/prompt/{prompt}``), never swapped for another. The result is the saved
image's path, mime, size, model and backend, or ``{"error": ...}`` for a missing
setting, a backend failure or bytes that are not an image under the size cap. Every
request goes through ``tools.net.endpoint_client``; the key goes with the generation
request only. The model and endpoint are logged on ``companion.image``. See docs/tools.md.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import logging
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

from config.settings import IMAGE_BACKENDS, Settings
from tools.base import ToolContext, ToolSpec
from tools.images import MAX_IMAGE_BYTES, NotAnImage, inspect_image, write_image
from tools.net import TooLarge, describe_http_error, endpoint_client, read_limited

logger = logging.getLogger("companion.image")

GENERATION_TIMEOUT = 120.0  # image models are slow; the tool gets more than the default
CONNECT_TIMEOUT = 10.0
MAX_JSON_BYTES = MAX_IMAGE_BYTES * 4 // 3 + 1_000_000  # a base64 image at the cap, plus envelope
ERROR_BYTES = 64_000  # enough of an error body to quote its message

USE_WHEN = (
    'Generate an image when the user asks for a picture, drawing or photo (e.g. "send a pic").'
)
DESCRIPTION = (
    "`prompt`: a complete visual description of the image — subject, setting, style — e.g. "
    '"a ginger cat asleep on a sunny windowsill, photo". The image is shown to the user '
    "automatically."
)
PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "prompt": {
            "type": "string",
            "minLength": 1,
            "description": "What the image should show.",
        }
    },
    "required": ["prompt"],
    "additionalProperties": False,
}

NOT_CONFIGURED = (
    "image generation is not configured: set the image backend (openai, openrouter or url)"
)
MISSING_SETTING = "image generation is not configured: the {backend} backend needs {what}"
NO_IMAGE = "the image model returned no image{detail}"


class GenerationError(Exception):
    """A backend failure whose message is the tool's error text."""


def configuration_problem(settings: Settings) -> str | None:
    """What is missing for image generation to work, or None when it can."""
    backend = settings.image_backend
    if not backend:
        return NOT_CONFIGURED
    if backend not in IMAGE_BACKENDS:
        return f"unknown image backend {backend!r} (expected one of {', '.join(IMAGE_BACKENDS)})"
    if not settings.image_base_url:
        return MISSING_SETTING.format(backend=backend, what="a base URL")
    if not settings.image_model:
        return MISSING_SETTING.format(backend=backend, what="a model name")
    return None


async def available(ctx: ToolContext) -> bool:
    """Offered only when a backend, its base URL and a model are configured."""
    return configuration_problem(ctx.settings) is None


def endpoint_for(settings: Settings, prompt: str) -> str:
    """The URL a generation request goes to."""
    base = (settings.image_base_url or "").rstrip("/")
    if settings.image_backend == "openai":
        return f"{base}/images/generations"
    if settings.image_backend == "openrouter":
        return f"{base}/chat/completions"
    return f"{base}/prompt/{quote(prompt, safe='')}"


def _headers(settings: Settings) -> dict[str, str]:
    if settings.image_api_key:
        return {"Authorization": f"Bearer {settings.image_api_key}"}
    return {}


def _backend_error(status: int, body: bytes) -> GenerationError:
    detail = ""
    try:
        parsed = json.loads(body)
        error = parsed.get("error") if isinstance(parsed, dict) else None
        detail = str(error.get("message", "")) if isinstance(error, dict) else str(error or "")
    except ValueError:
        detail = body[:200].decode("utf-8", "replace")
    suffix = f": {detail[:200]}" if detail else ""
    return GenerationError(f"the image backend answered HTTP {status}{suffix}")


async def _post_json(
    client: httpx.AsyncClient, endpoint: str, payload: dict[str, Any], settings: Settings
) -> Any:
    """POST to the backend; its JSON answer, read under the size cap and parsed off the loop."""
    async with client.stream("POST", endpoint, json=payload, headers=_headers(settings)) as reply:
        body = await read_limited(reply, MAX_JSON_BYTES)
    if reply.status_code != 200:
        raise _backend_error(reply.status_code, body)
    try:
        return await asyncio.to_thread(json.loads, body)
    except ValueError as exc:
        raise GenerationError("the image backend answered with something that is not JSON") from exc


async def _download(client: httpx.AsyncClient, url: str) -> bytes:
    """A backend-supplied image URL, fetched through the backend's guarded client (no key)."""
    async with client.stream("GET", url, headers={"Accept": "image/*"}) as response:
        if response.status_code != 200:
            # The error body is not read: it comes from wherever the URL points.
            raise GenerationError(f"the image URL answered HTTP {response.status_code}")
        return await read_limited(response, MAX_IMAGE_BYTES)


def decode_data_url(url: str) -> bytes:
    """The bytes of a ``data:image/...;base64,...`` URL."""
    header, _, payload = url.partition(",")
    if not header.startswith("data:") or ";base64" not in header:
        raise GenerationError("the image model returned an image URL that is not base64 data")
    try:
        return base64.b64decode(payload, validate=True)
    except binascii.Error as exc:
        raise GenerationError("the image model returned invalid base64 data") from exc


async def _openai(
    client: httpx.AsyncClient, endpoint: str, prompt: str, settings: Settings
) -> bytes:
    payload = {"model": settings.image_model, "prompt": prompt, "n": 1}
    answer = await _post_json(client, endpoint, payload, settings)
    items = (answer.get("data") if isinstance(answer, dict) else None) or []
    item = items[0] if items and isinstance(items[0], dict) else {}
    if item.get("b64_json"):
        try:
            return base64.b64decode(item["b64_json"], validate=True)
        except binascii.Error as exc:
            raise GenerationError("the image backend returned invalid base64 data") from exc
    if item.get("url"):
        return await _download(client, str(item["url"]))
    raise GenerationError(NO_IMAGE.format(detail=""))


async def _openrouter(
    client: httpx.AsyncClient, endpoint: str, prompt: str, settings: Settings
) -> bytes:
    payload = {
        "model": settings.image_model,
        "messages": [{"role": "user", "content": prompt}],
        "modalities": ["image", "text"],
    }
    answer = await _post_json(client, endpoint, payload, settings)
    choices = (answer.get("choices") if isinstance(answer, dict) else None) or []
    message = choices[0].get("message", {}) if choices else {}
    for image in message.get("images") or []:
        url = (image.get("image_url") or {}).get("url", "")
        if url.startswith("data:"):
            return decode_data_url(url)
        if url.startswith(("http://", "https://")):
            return await _download(client, url)
    text = str(message.get("content") or "").strip()
    raise GenerationError(NO_IMAGE.format(detail=f" (it said: {text[:200]})" if text else ""))


async def _url(client: httpx.AsyncClient, endpoint: str, prompt: str, settings: Settings) -> bytes:
    async with client.stream(
        "GET", endpoint, params={"model": settings.image_model}, headers={"Accept": "image/*"}
    ) as response:
        if response.status_code != 200:
            raise _backend_error(response.status_code, await read_limited(response, ERROR_BYTES))
        return await read_limited(response, MAX_IMAGE_BYTES)


Fetch = Callable[[httpx.AsyncClient, str, str, Settings], Awaitable[bytes]]
BACKENDS: dict[str, Fetch] = {"openai": _openai, "openrouter": _openrouter, "url": _url}


def _media_path(media_dir: Path, extension: str) -> Path:
    return media_dir / f"generated-{uuid.uuid4().hex}.{extension}"


async def image_generate(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    """Generate one image from ``prompt`` and save it under the media folder."""
    prompt = str(args.get("prompt", "")).strip()
    if not prompt:
        return {"error": "image_generate needs a prompt"}
    settings = ctx.settings
    problem = configuration_problem(settings)
    if problem:
        return {"error": problem}
    backend = str(settings.image_backend)
    endpoint = endpoint_for(settings, prompt)
    logger.info("[IMAGE TOOL] Selected model: %s", settings.image_model)
    logger.info("[IMAGE TOOL] Endpoint: %s", endpoint)
    timeout = httpx.Timeout(
        min(settings.request_timeout, GENERATION_TIMEOUT * 0.9), connect=CONNECT_TIMEOUT
    )
    try:
        async with endpoint_client(settings, "image_base_url", timeout=timeout) as client:
            data = await BACKENDS[backend](client, endpoint, prompt, settings)
        info = inspect_image(data)
    except GenerationError as exc:
        logger.exception("image generation failed")
        return {"error": str(exc)}
    except TooLarge:
        logger.exception("the generated image is too large")
        return {"error": f"the generated image is larger than {MAX_IMAGE_BYTES} bytes"}
    except NotAnImage as exc:
        logger.exception("the image backend did not return an image")
        return {"error": f"the image backend did not return a usable image: {exc}"}
    except httpx.HTTPError as exc:
        logger.exception("the request to the image backend failed")
        return {"error": describe_http_error(exc, "the image backend")}
    except ValueError:
        logger.exception("the image backend answered something that is not JSON")
        return {"error": "the image backend returned something that is not JSON"}
    path = write_image(data, _media_path(settings.media_dir, info.extension))
    logger.info("[IMAGE TOOL] Saved %s (%dx%d, %s)", path.name, info.width, info.height, info.mime)
    return {
        "image_path": str(path),
        "mime": info.mime,
        "model": settings.image_model,
        "backend": backend,
        "prompt": prompt,
        "width": info.width,
        "height": info.height,
    }


def format_generated(result: dict[str, Any]) -> str:
    """What is stored and the model reads: the saved image's path (in the home's media
    folder, named from there, so no machine's folders reach the endpoint) and that the user
    sees the image already, so there is nothing to link."""
    path = Path(result["image_path"])
    return (
        f"Image generated (model {result['model']}, {result['width']}x{result['height']}) and "
        f"saved as {path.parent.name}/{path.name}. It is shown to the user automatically; "
        "don't repeat the path."
    )


TOOLS = [
    ToolSpec(
        name="image_generate",
        use_when=USE_WHEN,
        description=DESCRIPTION,
        parameters=PARAMETERS,
        run=image_generate,
        role="image_tool",
        command="imagine",
        available=available,
        format=format_generated,
        timeout=GENERATION_TIMEOUT,
        examples=("/imagine a ginger cat asleep on a sunny windowsill, photo",),
    )
]
