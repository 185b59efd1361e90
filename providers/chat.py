"""Chat models for the configured provider: an OpenAI-compatible endpoint or the local model.

Both go through langchain-openai's ChatOpenAI (streaming, native tool calls, retries with
backoff on 429/5xx and connection errors, timeouts). Requests to a configured endpoint go
through the address guard of ``tools.net`` (``model_clients``): the operator's endpoint is
reached as configured, a person's (accounts on) only at public addresses. The local model
is the bundled llama.cpp server (``providers.llama_server``), started on the first call.
Until a chat model is chosen, ``unchosen_model`` stands in and raises ``ConfigError``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from config.settings import NO_CHAT_MODEL, ConfigError, Settings
from providers.llama_server import local_server
from tools.net import model_clients

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

LOCAL_MAX_TOKENS = 512
PLACEHOLDER_KEY = "not-needed"  # ChatOpenAI refuses to start without a key, even locally


def make_chat_model(settings: Settings, model: str | None = None) -> BaseChatModel:
    """A chat model for the configured provider (``model`` overrides the chat model)."""
    from langchain_openai import ChatOpenAI

    from providers.plain_body import plain_bodies

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
    chat = ChatOpenAI(
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
    return plain_bodies(chat)  # the SDK's request transform is skipped: 8.8 ms a call


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
    from providers.local_model import LazyLocalChatModel, choose

    choose(local_server(), settings)  # the warm start then loads the chosen model
    return LazyLocalChatModel(settings=settings, connect=make_chat_model)
