"""Model providers: any OpenAI-compatible endpoint, or the embedded local llama.cpp model.

Both go through langchain-openai's ChatOpenAI (streaming, native tool calls, retries with
backoff on 429/5xx and connection errors, timeouts). The local provider reaches the
bundled model through ``graph.local_server``, started on the first call.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import httpx

from config.settings import ConfigError, Settings
from graph.errors import ProviderError
from graph.local_server import local_server

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

log = logging.getLogger("companion.providers")

LOCAL_BANNER = "local model — set OPENROUTER_API_KEY or COMPANION_BASE_URL for a capable one"
LOCAL_MAX_TOKENS = 512
DEATH_GRACE = 1.0  # seconds a failed local request waits to learn whether the server died
PLACEHOLDER_KEY = "not-needed"  # ChatOpenAI refuses to start without a key, even locally


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
        name = model or settings.chat_model
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
    )


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


def describe_provider_error(exc: BaseException) -> str:
    """A short, user-readable cause for a failed model call."""
    import openai

    if isinstance(exc, openai.RateLimitError):
        return "the provider is rate-limiting requests (HTTP 429)"
    if isinstance(exc, openai.AuthenticationError):
        return "the API key was refused (HTTP 401)"
    if isinstance(exc, openai.NotFoundError):
        return "the model or endpoint was not found (HTTP 404)"
    if isinstance(exc, openai.APIStatusError):
        return f"the provider answered HTTP {exc.status_code}"
    if isinstance(exc, openai.APITimeoutError):
        return "the provider timed out"
    if isinstance(exc, openai.APIConnectionError):
        return "the provider could not be reached"
    if isinstance(exc, ProviderError | ConfigError):
        return str(exc)
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}"[:200] if text else type(exc).__name__


def endpoint_status(settings: Settings) -> str:
    """Reachable or not, for the Settings tab (never shows the key)."""
    if settings.is_local:
        server = local_server()
        running = server.process is not None and server.process.poll() is None
        state = f"running at {server.url}" if running else "starts on the first message"
        return f"local llama.cpp server: {state}"
    if not settings.base_url:
        return "no endpoint configured"
    try:
        headers = {"Authorization": f"Bearer {settings.api_key}"} if settings.api_key else {}
        response = httpx.get(
            f"{settings.base_url.rstrip('/')}/models", headers=headers, timeout=5.0
        )
        return f"{settings.base_url}: reachable (HTTP {response.status_code})"
    except httpx.HTTPError as exc:
        return f"{settings.base_url}: unreachable ({type(exc).__name__})"


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
            return self.settings.chat_model

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


def lazy_local_model(settings: Settings) -> BaseChatModel:
    """The local chat model, its server started on the first call (not at construction)."""
    local_server().log_dir = settings.home / "logs"
    model: BaseChatModel = _lazy_model_class()(settings=settings)
    return model
