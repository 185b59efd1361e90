"""A real OpenAI-compatible HTTP server on loopback, scripted, for tests, benches and drills.

``FakeOpenAIServer`` answers ``POST /v1/chat/completions`` (streamed as SSE or not),
``POST /v1/embeddings`` (a vector per input, the same for the same text) and
``GET /v1/models``. Replies come from a queue of steps, or a default; a step can be text,
tool calls, an HTTP error status, a delay, a malformed body, a stream cut mid-answer, or
tool-call arguments that are not JSON — the failures a provider can produce. A
``responder`` answers from the request itself when no step is queued (concurrent
sessions, where a shared queue cannot say whose reply is next). The listen backlog is
deep enough for many clients connecting at once. ``timings`` says, for each request, when
it arrived and when its stream's first chunk was written (``time.perf_counter``: a bench in
the same process splits a client's wait into before the request, the server, and after).
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Step:
    """One scripted reply (or failure) of the server."""

    content: str = ""
    tool_calls: list[tuple[str, str]] = field(default_factory=list)  # (name, raw arguments)
    status: int = 200
    delay: float = 0.0
    malformed: bool = False
    cut: bool = False  # close the stream after the first chunk
    word_delay: float = 0.0  # seconds between two streamed chunks (a slow answer)
    dimensions: int | None = None  # an embeddings answer of this width, not the server's
    # A stream that waits, before its chunk number ``hold_at``, until ``hold`` is set (at
    # most HOLD_LIMIT seconds): a test keeps a turn running until it has seen what it needs.
    hold: threading.Event | None = None
    hold_at: int = 6


HOLD_LIMIT = 60.0


@dataclass
class Timing:
    """When one request reached the server and its first streamed chunk left it."""

    arrived: float  # time.perf_counter() once the request's body was read
    first_chunk: float | None = None  # as its first chunk was written; None: not streamed


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # socketserver's default backlog of 5 drops bursts of clients


class FakeOpenAIServer:
    """Loopback OpenAI-compatible chat server; use as a context manager."""

    def __init__(
        self,
        *,
        latency: float = 0.0,
        default: str = "ok",
        responder: Callable[[dict[str, Any]], Step] | None = None,
    ) -> None:
        self.latency = latency
        self.default = default
        self.responder = responder
        self.steps: deque[Step] = deque()
        self.models_status = 200  # what GET /models answers (401, 404, … for Verify drills)
        self.model_ids = ["fake-model"]
        self.embedding_dimensions = 8  # the width of /v1/embeddings' vectors
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []  # each POST's headers, in order
        self.timings: list[Timing] = []  # each POST's times, in order
        self._lock = threading.Lock()
        self._server = _Server(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        """Base URL to give ChatOpenAI (``.../v1``)."""
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def push(self, *steps: Step | str) -> None:
        """Queue replies, in order."""
        with self._lock:
            for step in steps:
                self.steps.append(Step(content=step) if isinstance(step, str) else step)

    def start(self) -> FakeOpenAIServer:
        """Serve in a background thread."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving."""
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _next(self, request: dict[str, Any]) -> Step:
        with self._lock:
            if self.steps:
                return self.steps.popleft()
        if self.responder is not None:
            return self.responder(request)
        return Step(content=self.default)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def _send(self, status: int, body: bytes, kind: str = "application/json") -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", kind)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up waiting (a drill's timeout): nothing to tell it

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models") and server.models_status != 200:
                    error = {"error": {"message": f"scripted HTTP {server.models_status}"}}
                    self._send(server.models_status, json.dumps(error).encode())
                elif self.path.rstrip("/").endswith("/models"):
                    data = [{"id": name, "object": "model"} for name in server.model_ids]
                    self._send(200, json.dumps({"object": "list", "data": data}).encode())
                else:
                    self._send(404, b'{"error": {"message": "not found"}}')

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                request = json.loads(self.rfile.read(length) or b"{}")
                timing = Timing(arrived=time.perf_counter())
                with server._lock:
                    server.requests.append(request)
                    server.headers.append(dict(self.headers.items()))
                    server.timings.append(timing)
                step = server._next(request)
                time.sleep(server.latency + step.delay)
                if step.status != 200:
                    error = {
                        "error": {
                            "message": f"scripted HTTP {step.status}",
                            "type": "server_error",
                            "code": step.status,
                        }
                    }
                    self._send(step.status, json.dumps(error).encode())
                    return
                if step.malformed:
                    self._send(200, b'{"choices": [{"message": {"content": "unterminated')
                    return
                if self.path.rstrip("/").endswith("/embeddings"):
                    width = step.dimensions or server.embedding_dimensions
                    self._send(200, json.dumps(_embeddings(request, width)).encode())
                elif request.get("stream"):
                    self._stream(request, step, timing)
                else:
                    self._send(200, json.dumps(_completion(request, step)).encode())

            def _stream(self, request: dict[str, Any], step: Step, timing: Timing) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                self.close_connection = True
                try:
                    for index, chunk in enumerate(_chunks(request, step)):
                        if index and step.word_delay:
                            time.sleep(step.word_delay)
                        if step.hold is not None and index == step.hold_at:
                            step.hold.wait(HOLD_LIMIT)
                        if index == 0:
                            timing.first_chunk = time.perf_counter()
                        self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                        self.wfile.flush()
                        if step.cut and index == 0:
                            return
                    self.wfile.write(b"data: [DONE]\n\n")
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    return  # the client went away (a stopped turn): nothing to tell it

        return Handler


def _message(step: Step) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": step.content or None}
    if step.tool_calls:
        message["tool_calls"] = [
            {"id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": args}}
            for i, (name, args) in enumerate(step.tool_calls)
        ]
    return message


def _usage() -> dict[str, int]:
    return {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}


def _completion(request: dict[str, Any], step: Step) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.get("model", "fake-model"),
        "choices": [
            {
                "index": 0,
                "message": _message(step),
                "finish_reason": "tool_calls" if step.tool_calls else "stop",
            }
        ],
        "usage": _usage(),
    }


def _embeddings(request: dict[str, Any], width: int) -> dict[str, Any]:
    """An OpenAI embeddings answer: for each input, ``width`` numbers drawn from its hash."""
    texts = request.get("input") or []
    texts = [texts] if isinstance(texts, str) else texts
    data = []
    for index, text in enumerate(texts):
        seed = hashlib.sha256(str(text).encode()).digest() * (width // 32 + 1)
        vector = [byte / 255 - 0.5 for byte in seed[:width]]
        data.append({"object": "embedding", "index": index, "embedding": vector})
    return {"object": "list", "data": data, "model": request.get("model", "fake-model")}


def _chunks(request: dict[str, Any], step: Step) -> list[dict[str, Any]]:
    base = {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": request.get("model", "fake-model"),
    }
    chunks = []
    words = step.content.split(" ") if step.content else []
    for i, word in enumerate(words):
        delta: dict[str, Any] = {"content": word if i == 0 else f" {word}"}
        if i == 0:
            delta["role"] = "assistant"
        chunks.append({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
    for i, (name, args) in enumerate(step.tool_calls):
        delta = {
            "tool_calls": [
                {
                    "index": i,
                    "id": f"call_{i}",
                    "type": "function",
                    "function": {"name": name, "arguments": args},
                }
            ]
        }
        chunks.append({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
    finish = "tool_calls" if step.tool_calls else "stop"
    chunks.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    if (request.get("stream_options") or {}).get("include_usage"):
        chunks.append({**base, "choices": [], "usage": _usage()})
    return chunks
