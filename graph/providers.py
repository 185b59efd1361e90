"""Model providers: any OpenAI-compatible endpoint, or the embedded local llama.cpp model.

Both go through langchain-openai's ChatOpenAI (streaming, native tool calls, retries with
backoff on 429/5xx and connection errors, timeouts). The local provider reaches the
bundled model through ``graph.local_server``, started on the first call.

Requests to a configured endpoint, Verify's included, go through the address guard of
``tools.net`` (``model_clients``, ``endpoint_client``): the operator's endpoint is reached
as configured, a person's (accounts on) only at public addresses, and every redirect hop
to another origin is checked.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import httpx

from config.settings import LOCAL_MODEL_NAME, NO_CHAT_MODEL, ConfigError, Settings
from graph.errors import ProviderError
from graph.local_server import local_server
from tools.net import Refused, TooLarge, endpoint_client, model_clients, read_limited

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

log = logging.getLogger("companion.providers")

LOCAL_BANNER = "local model — set OPENROUTER_API_KEY or COMPANION_BASE_URL for a capable one"
LOCAL_MAX_TOKENS = 512
DEATH_GRACE = 1.0  # seconds a failed local request waits to learn whether the server died
PLACEHOLDER_KEY = "not-needed"  # ChatOpenAI refuses to start without a key, even locally
MODELS_BYTES = 8_000_000  # a /models answer (OpenRouter lists hundreds of models)


def make_chat_model(settings: Settings, model: str | None = None) -> BaseChatModel:
    """A chat model for the configured provider (``model`` overrides the chat model)."""
    from langchain_openai import ChatOpenAI

    if settings.is_local:
        base_url = local_server().ensure()
        name = "smollm2"
        api_key = PLACEHOLDER_KEY
    else:
        if not settings.base_url:
            raise ConfigError("COMPANION_BASE_URL (or OPENROUTER_API_KEY) is not set")
        base_url = settings.base_url
        chosen = model or settings.chat_model
        if not chosen:
            raise ConfigError(NO_CHAT_MODEL)
        name = chosen
        api_key = settings.api_key or PLACEHOLDER_KEY
    return ChatOpenAI(
        model=name,
        base_url=base_url,
        api_key=api_key,  # type: ignore[arg-type]
        timeout=settings.request_timeout,
        max_retries=settings.max_retries,
        streaming=True,
        stream_usage=True,
        temperature=0.3 if settings.is_local else None,
        # SmolLM2 can repeat itself until its context is full; llama.cpp's server reads
        # max_tokens (not max_completion_tokens, which ChatOpenAI sends).
        extra_body={"max_tokens": LOCAL_MAX_TOKENS} if settings.is_local else None,
        **_http_clients(settings),
    )


def _http_clients(settings: Settings) -> dict[str, Any]:
    """ChatOpenAI's HTTP clients: the address guard's (``tools.net``) for an endpoint; the
    OpenAI client's own for the bundled server, whose loopback URL is Companion's."""
    if settings.is_local:
        return {}
    sync, asynchronous = model_clients(settings)
    # No socket options: langchain would set them on a transport of its own, not ours.
    return {"http_client": sync, "http_async_client": asynchronous, "http_socket_options": ()}


def make_vision_model(settings: Settings) -> BaseChatModel | None:
    """The vision model, or None when none is configured (never a silent substitute)."""
    if settings.is_local or not settings.vision_model:
        return None
    return make_chat_model(settings, settings.vision_model)


def is_provider_error(exc: BaseException) -> bool:
    """True for a failure of the model provider (HTTP, connection, its process, its
    configuration); False for a bug in Companion's own code."""
    import openai

    provider_side = (
        openai.APIError | httpx.HTTPError | ConnectionError | ProviderError | ConfigError
    )
    return isinstance(exc, provider_side)


ErrorKind = Literal["key", "not_found", "refused", "setup", "transient"]


def provider_error_kind(exc: BaseException) -> ErrorKind:
    """What a failed model call asks of the user, by cause.

    ``key``: 401/403, the key was refused; ``not_found``: 404, a wrong URL or model name;
    ``refused``: any other 4xx, the request itself was refused (trying again won't help);
    ``setup``: Companion is not configured to answer (no chat model, no endpoint);
    ``transient``: 429, 5xx, timeouts, connection errors, a broken stream — try again.
    """
    import openai

    if isinstance(exc, ConfigError):
        return "setup"
    if isinstance(exc, openai.AuthenticationError | openai.PermissionDeniedError):
        return "key"
    if isinstance(exc, openai.NotFoundError):
        return "not_found"
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        return "refused" if 400 <= status < 500 and status not in (408, 409, 429) else "transient"
    return "transient"


def describe_provider_error(exc: BaseException) -> str:
    """A short, user-readable cause for a failed model call."""
    import openai

    if isinstance(exc, openai.RateLimitError):
        return "the provider is rate-limiting requests (HTTP 429)"
    if isinstance(exc, openai.AuthenticationError | openai.PermissionDeniedError):
        return f"the API key was refused (HTTP {exc.status_code})"
    if isinstance(exc, openai.NotFoundError):
        return "the model or endpoint was not found (HTTP 404)"
    if isinstance(exc, openai.APIStatusError):
        return f"the provider answered HTTP {exc.status_code}"
    if isinstance(exc, openai.APITimeoutError):
        return "the provider timed out"
    refused = _refusal(exc)
    if refused is not None:
        return f"the endpoint was not contacted: {refused}"
    if isinstance(exc, openai.APIConnectionError):
        return "the provider could not be reached"
    if isinstance(exc, ProviderError | ConfigError):
        return str(exc)
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}"[:200] if text else type(exc).__name__


def _refusal(exc: BaseException) -> Refused | None:
    """The address guard's refusal behind a failed call (the OpenAI client and langchain
    wrap it in their connection errors), or None."""
    cause: BaseException | None = exc
    while cause is not None and not isinstance(cause, Refused):
        cause = cause.__cause__
    return cause


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


def _lazy_model_class() -> Any:
    """Defined on first use so importing this module stays light (no langchain import)."""
    from collections.abc import AsyncIterator

    from langchain_core.callbacks import AsyncCallbackManagerForLLMRun
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessageChunk, BaseMessage
    from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
    from pydantic import ConfigDict, PrivateAttr

    class LazyLocalChatModel(BaseChatModel):
        """The local model: starts llama.cpp's server on the first call, then delegates."""

        model_config = ConfigDict(arbitrary_types_allowed=True)
        settings: Settings
        _inner: Any = PrivateAttr(default=None)
        _url: str | None = PrivateAttr(default=None)

        @property
        def _llm_type(self) -> str:
            return "local-llama-cpp"

        @property
        def model_name(self) -> str:
            """The name shown to the user."""
            return self.settings.chat_model or LOCAL_MODEL_NAME

        def bind_tools(self, tools: Any, *, tool_choice: Any = None, **kwargs: Any) -> Any:
            """Tools pass through to the OpenAI-compatible call (for tool_mode=native)."""
            from langchain_core.utils.function_calling import convert_to_openai_tool

            formatted = [convert_to_openai_tool(t) for t in tools]
            return self.bind(tools=formatted, tool_choice=tool_choice, **kwargs)

        def _model(self) -> Any:
            """The client for the running server, (re)started if it is not running."""
            url = local_server().ensure()
            if self._inner is None or self._url != url:
                self._inner = make_chat_model(self.settings)
                self._url = url
            return self._inner

        def _generate(
            self,
            messages: list[BaseMessage],
            stop: list[str] | None = None,
            run_manager: Any = None,
            **kwargs: Any,
        ) -> ChatResult:
            try:
                reply = self._model().invoke(messages, stop=stop, **kwargs)
            except Exception as exc:
                _raise_if_server_died(exc)
                raise
            return ChatResult(generations=[ChatGeneration(message=reply)])

        async def _agenerate(
            self,
            messages: list[BaseMessage],
            stop: list[str] | None = None,
            run_manager: Any = None,
            **kwargs: Any,
        ) -> ChatResult:
            import asyncio

            inner = await asyncio.to_thread(self._model)
            try:
                reply = await inner.ainvoke(messages, stop=stop, **kwargs)
            except Exception as exc:
                _raise_if_server_died(exc)
                raise
            return ChatResult(generations=[ChatGeneration(message=reply)])

        async def _astream(
            self,
            messages: list[BaseMessage],
            stop: list[str] | None = None,
            run_manager: AsyncCallbackManagerForLLMRun | None = None,
            **kwargs: Any,
        ) -> AsyncIterator[ChatGenerationChunk]:
            import asyncio

            inner = await asyncio.to_thread(self._model)
            try:
                async for chunk in inner.astream(messages, stop=stop, **kwargs):
                    assert isinstance(chunk, AIMessageChunk)
                    generation = ChatGenerationChunk(message=chunk)
                    if run_manager and isinstance(chunk.content, str) and chunk.content:
                        await run_manager.on_llm_new_token(chunk.content, chunk=generation)
                    yield generation
            except Exception as exc:
                _raise_if_server_died(exc)
                raise
            if local_server().dead():  # a crash can end the stream without an error
                raise ProviderError(local_server().stopped_reason())

    return LazyLocalChatModel


def _raise_if_server_died(exc: Exception) -> None:
    """Explain a failed local request by the server's death when that is the cause.

    The openai client reports a crashed server as a connection error, which would send
    the user looking at the network; the process's exit status says what happened.
    """
    server = local_server()
    if server.dead(grace=DEATH_GRACE):
        log.error("%s (request failed with %s)", server.stopped_reason(), type(exc).__name__)
        raise ProviderError(server.stopped_reason()) from exc


def unchosen_model() -> BaseChatModel:
    """Stands where the chat model goes until one is chosen: every call raises
    ConfigError saying so (no hidden default model is ever asked)."""
    from langchain_core.language_models import BaseChatModel as Base

    class UnchosenChatModel(Base):
        @property
        def _llm_type(self) -> str:
            return "unchosen"

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

        def _generate(
            self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any
        ) -> Any:
            raise ConfigError(NO_CHAT_MODEL)

    return UnchosenChatModel()


def lazy_local_model(settings: Settings) -> BaseChatModel:
    """The local chat model, its server started on the first call (not at construction)."""
    local_server().log_dir = settings.home / "logs"
    model: BaseChatModel = _lazy_model_class()(settings=settings)
    return model
