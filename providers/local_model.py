"""The embedded model as a LangChain chat model: llama.cpp's server started on first use.

``LazyLocalChatModel`` starts the bundled model's server (``providers.llama_server``) on
its first call, not at construction, and delegates to an OpenAI-compatible client made by
``connect``. A request that fails because the server died is explained by the server's
exit status (``ProviderError``), not blamed on the network. Imported on first use only
(``providers.chat.lazy_local_model``), so importing ``providers`` loads no langchain.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from pydantic import ConfigDict, PrivateAttr

from config.settings import LOCAL_MODEL_NAME, Settings
from providers.errors import ProviderError
from providers.llama_server import local_server

log = logging.getLogger("companion.providers")

DEATH_GRACE = 1.0  # seconds a failed local request waits to learn whether the server died


class LazyLocalChatModel(BaseChatModel):
    """The local model: starts llama.cpp's server on the first call, then delegates."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    settings: Settings
    connect: Callable[[Settings], BaseChatModel]  # the client for the running server
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
            self._inner = self.connect(self.settings)
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


def _raise_if_server_died(exc: Exception) -> None:
    """Explain a failed local request by the server's death when that is the cause.

    The openai client reports a crashed server as a connection error, which would send
    the user looking at the network; the process's exit status says what happened.
    """
    server = local_server()
    if server.dead(grace=DEATH_GRACE):
        log.error("%s (request failed with %s)", server.stopped_reason(), type(exc).__name__)
        raise ProviderError(server.stopped_reason()) from exc
