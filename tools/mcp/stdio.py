"""The stdio transport, with a cap on each message a server sends.

The SDK's ``stdio_client`` reads a line of any length: a 10 MB answer is held whole,
joined piece by piece (slower the longer it gets) and parsed, and it goes on being read
after the call has timed out. Here each line is read in pieces up to
``MAX_MESSAGE_BYTES``: past that the rest is skipped as it arrives, and the request it
answers (its id is near the start) gets a JSON-RPC error at once, so the call fails
fast with the reason. Otherwise it does what the SDK's does: the server runs in a
session of its own with the SDK's short list of safe environment variables plus its
``env``, its stderr goes to ``errlog``, and on close its stdin is closed, then it is
terminated with its children if it lingers.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TextIO

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp import StdioServerParameters, types
from mcp.client.stdio import get_default_environment
from mcp.os.posix.utilities import terminate_posix_process_tree
from mcp.shared.message import SessionMessage

MAX_MESSAGE_BYTES = 4_000_000
STOP_SECONDS = 2.0
ID_WINDOW = 512  # bytes at a message's start searched for its id
ID_FIELD = re.compile(rb'"id"\s*:\s*(-?\d{1,18}|"(?:[^"\\]|\\.){0,200}")')
TOO_LARGE = "the server's answer is over {limit:g} MB and was not read"


Incoming = MemoryObjectReceiveStream[SessionMessage | Exception]
Outgoing = MemoryObjectSendStream[SessionMessage]


@dataclass(frozen=True)
class Oversize:
    """A message over the cap: its first bytes (where its id is)."""

    head: bytes


class Lines:
    """Splits a byte stream into messages of at most ``limit`` bytes; a longer one is
    reported once, by its head, and the rest of it skipped."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._parts: list[bytes] = []
        self._size = 0
        self._head = b""
        self._skipping = False

    def feed(self, chunk: bytes) -> list[bytes | Oversize]:
        """The messages (or over-long ones) that ``chunk`` completes."""
        done: list[bytes | Oversize] = []
        while chunk:
            piece, newline, chunk = chunk.partition(b"\n")
            if not self._skipping:
                self._take(piece, done)
            if newline:
                if not self._skipping and self._parts:
                    done.append(b"".join(self._parts))
                self._parts, self._size, self._head, self._skipping = [], 0, b"", False
        return done

    def _take(self, piece: bytes, done: list[bytes | Oversize]) -> None:
        if len(self._head) < ID_WINDOW:
            self._head += piece[: ID_WINDOW - len(self._head)]
        self._parts.append(piece)
        self._size += len(piece)
        if self._size > self.limit:
            done.append(Oversize(self._head))
            self._parts, self._size, self._skipping = [], 0, True


def parse(item: bytes | Oversize, limit: int) -> SessionMessage | Exception | None:
    """A message for the session: parsed, an error answering an over-long one, or None
    for a blank line."""
    if isinstance(item, Oversize):
        found = ID_FIELD.search(item.head)
        reason = TOO_LARGE.format(limit=limit / 1_000_000)
        if found is None:
            return ValueError(reason)
        raw = found.group(1).decode()
        request_id: str | int = raw[1:-1] if raw.startswith('"') else int(raw)
        error = types.ErrorData(code=types.INTERNAL_ERROR, message=reason)
        answer = types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error)
        return SessionMessage(types.JSONRPCMessage(answer))
    if not item.strip():
        return None
    try:
        return SessionMessage(types.JSONRPCMessage.model_validate_json(item))
    except Exception as exc:  # the session logs it and reads on
        return exc


@contextlib.asynccontextmanager
async def capped_stdio(
    params: StdioServerParameters, errlog: TextIO, limit: int = MAX_MESSAGE_BYTES
) -> AsyncIterator[
    tuple[
        MemoryObjectReceiveStream[SessionMessage | Exception],
        MemoryObjectSendStream[SessionMessage],
    ]
]:
    """The server's process and its message streams, as ``mcp.client.stdio`` gives them."""
    to_session, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, from_session = anyio.create_memory_object_stream[SessionMessage](0)
    process = await anyio.open_process(
        [params.command, *params.args],
        env={**get_default_environment(), **(params.env or {})},
        stderr=errlog,
        cwd=params.cwd,
        start_new_session=True,  # its children end with it
    )

    async def read() -> None:
        lines = Lines(limit)
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            async with to_session:
                assert process.stdout is not None
                async for chunk in process.stdout:
                    for item in lines.feed(chunk):
                        message = parse(item, limit)
                        if message is not None:
                            await to_session.send(message)

    async def write() -> None:
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            async with from_session:
                assert process.stdin is not None
                async for message in from_session:
                    data = message.message.model_dump_json(by_alias=True, exclude_none=True)
                    await process.stdin.send(f"{data}\n".encode())

    async with anyio.create_task_group() as tasks, process:
        tasks.start_soon(read)
        tasks.start_soon(write)
        try:
            yield read_stream, write_stream
        finally:
            await _stop(process)
            for stream in (read_stream, write_stream, to_session, from_session):
                await stream.aclose()


async def _stop(process: anyio.abc.Process) -> None:
    """Close the server's stdin and let it exit; terminate it (and its children) if not."""
    if process.stdin is not None:
        with contextlib.suppress(Exception):
            await process.stdin.aclose()
    try:
        with anyio.fail_after(STOP_SECONDS):
            await process.wait()
    except TimeoutError:
        await terminate_posix_process_tree(process)
    except ProcessLookupError:
        pass
