"""One MCP server's session: opened, held by a task of its own, called, closed.

``Connection.open`` starts a task that enters the transport (a child process over stdio
with a cap on each message, ``tools.mcp.stdio``; or streamable HTTP through
``tools.net``'s guarded transport, the configured origin as it is and a redirect only to
a public address, each body read up to the same cap) and the SDK's ``ClientSession``,
loads the tools through ``langchain-mcp-adapters`` (``load_mcp_tools`` on this session,
with ``results.bounded`` as its interceptor), and holds the session until ``close``: the
SDK's contexts are entered and left by that one task, as anyio requires. A call runs the
adapters' tool (``ainvoke`` with a tool call: a ``ToolMessage`` with its status and
structured content) on the held session. A server that does not answer within the
time given, exits, or refuses is reported as ``ConnectFailed`` with a reason a person can
read (for stdio, with the last line it wrote to its log). A session that breaks during a
call is dropped (state "crashed") and opened again by the next call.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any, Literal, TextIO

import anyio
import httpx
from langchain_core.messages import ToolMessage
from langchain_core.messages.tool import tool_call
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langchain_mcp_adapters.tools import load_mcp_tools
from mcp import ClientSession, McpError, StdioServerParameters, types
from mcp.client.streamable_http import streamable_http_client

from tools.mcp.config import ServerConfig
from tools.mcp.results import bounded
from tools.mcp.stdio import MAX_MESSAGE_BYTES, capped_stdio
from tools.net import GuardedTransport, TooLarge

log = logging.getLogger("companion.mcp")

State = Literal["starting", "ready", "failed", "crashed"]
HTTP_TIMEOUT = httpx.Timeout(30.0, read=300.0)  # reads wait on a server's event stream
NO_ANSWER = "did not answer within {seconds:g} s"
CLOSED = "the server closed the connection (its process may have exited)"
LAST_WORDS = "{reason}; it said: {line}"
TAIL_BYTES = 2_000  # of a stdio server's log, read for its last line
NOT_LISTED = "the server no longer lists {tool}"
CALL_ID = "mcp-call"  # the adapters answer a tool call with a ToolMessage
# anyio's errors of a stream whose other end is gone
STREAM_GONE = (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream)


class CappedTransport(httpx.AsyncBaseTransport):
    """Reads each response body up to ``MAX_MESSAGE_BYTES`` (TooLarge past it): a server's
    10 MB answer is not held, and the call ends at its time limit."""

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self._inner = inner

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """The inner transport's response, its body counted as it is read."""
        response = await self._inner.handle_async_request(request)
        body = response.stream
        assert isinstance(body, httpx.AsyncByteStream)

        async def counted() -> AsyncIterator[bytes]:
            read = 0
            try:
                async for chunk in body:
                    read += len(chunk)
                    if read > MAX_MESSAGE_BYTES:
                        raise TooLarge(f"more than {MAX_MESSAGE_BYTES} bytes")
                    yield chunk
            finally:
                await body.aclose()

        response.stream = _Stream(counted())
        return response

    async def aclose(self) -> None:
        """Close the inner transport."""
        await self._inner.aclose()


class _Stream(httpx.AsyncByteStream):
    def __init__(self, chunks: AsyncIterator[bytes]) -> None:
        self._chunks = chunks

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._chunks:
            yield chunk


class ConnectFailed(Exception):
    """The server could not be started or reached; the message says why."""


def describe(exc: BaseException) -> str:
    """The innermost reason of ``exc`` (anyio wraps failures in exception groups)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, McpError):
        closed = exc.error.code == types.CONNECTION_CLOSED
        return CLOSED if closed else exc.error.message
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class Connection:
    """One configured server and its session, on the event loop that opened it."""

    def __init__(self, config: ServerConfig, log_dir: Path | None = None) -> None:
        self.config = config
        self.log_dir = log_dir
        self.state: State = "starting"
        self.reason = ""
        self.tools: list[BaseTool] = []  # the adapters', bound to the live session
        self._session: ClientSession | None = None
        self._stop: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._lock: asyncio.Lock | None = None

    async def open(self, seconds: float) -> ClientSession:
        """A live session, started now if there is none; ConnectFailed after ``seconds``."""
        self._lock = self._lock or asyncio.Lock()
        async with self._lock:
            if self._session is not None:
                return self._session
            ready: asyncio.Future[ClientSession] = asyncio.get_running_loop().create_future()
            self._stop = asyncio.Event()
            self._task = asyncio.create_task(self._hold(ready, self._stop))
            try:
                session = await asyncio.wait_for(asyncio.shield(ready), seconds)
            except TimeoutError:
                await self._cancel()
                raise self._failed(NO_ANSWER.format(seconds=seconds)) from None
            except Exception as exc:
                await self._cancel()
                raise self._failed(describe(exc)) from exc
            except asyncio.CancelledError:  # the call's own time ran out: stop starting
                await self._cancel()
                raise
            self.state, self.reason = "ready", ""
            return session

    async def call(self, tool: str, args: dict[str, Any], seconds: float) -> ToolMessage:
        """Call ``tool`` through the adapters' tool; a broken session is dropped (the
        next call opens another)."""
        await self.open(seconds)
        chosen = next((t for t in self.tools if t.name == tool), None)
        if chosen is None:
            raise LookupError(NOT_LISTED.format(tool=tool))
        config = RunnableConfig(
            run_name=f"mcp {self.config.name}/{tool}", tags=[f"mcp_server:{self.config.name}"]
        )
        try:
            message = await chosen.ainvoke(tool_call(name=tool, args=args, id=CALL_ID), config)
        except McpError as exc:
            if exc.error.code == types.CONNECTION_CLOSED:
                await self.lost(describe(exc))
            raise
        except (OSError, httpx.HTTPError, *STREAM_GONE) as exc:
            await self.lost(describe(exc))
            raise
        assert isinstance(message, ToolMessage)
        return message

    async def lost(self, reason: str) -> None:
        """The session broke: say so, and close what is left of it."""
        log.warning("mcp server %s: connection lost: %s", self.config.name, reason)
        self.state, self.reason = "crashed", reason
        await self.close()

    async def close(self) -> None:
        """End the session (the holding task leaves the SDK's contexts). A server still
        starting is not waited for: its start is cancelled, which ends its process (a
        server that never answers would otherwise outlive Companion)."""
        if self._session is None:
            await self._cancel()
            return
        if self._stop is not None:
            self._stop.set()
        task, self._task = self._task, None
        if task is not None:
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await asyncio.wait_for(task, 5.0)
        self._session = None

    async def _cancel(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await asyncio.wait_for(task, 5.0)
        self._session = None

    def _failed(self, reason: str) -> ConnectFailed:
        line = self._last_words()
        if line:
            reason = LAST_WORDS.format(reason=reason, line=line)
        self.state, self.reason = "failed", reason
        log.warning("mcp server %s could not be started: %s", self.config.name, reason)
        return ConnectFailed(reason)

    async def _hold(self, ready: asyncio.Future[ClientSession], stop: asyncio.Event) -> None:
        """Open the session, hand it over, keep it until ``stop``; then leave in order."""
        try:
            async with AsyncExitStack() as stack:
                errlog = stack.enter_context(self._errlog().open("a", encoding="utf-8"))
                read, write = await stack.enter_async_context(self._transport(errlog))
                session = await stack.enter_async_context(ClientSession(read, write))
                await session.initialize()
                self.tools = await load_mcp_tools(
                    session, server_name=self.config.name, tool_interceptors=[bounded]
                )
                self._session = session
                ready.set_result(session)
                await stop.wait()
        except Exception as exc:
            if not ready.done():
                ready.set_exception(exc)
            else:
                log.info("mcp server %s closed: %s", self.config.name, describe(exc))
        finally:
            self._session = None
            if not ready.done():  # cancelled while starting (``close``): the wait ends too
                ready.cancel()

    @asynccontextmanager
    async def _transport(self, errlog: TextIO) -> AsyncIterator[tuple[Any, Any]]:
        """The server's message streams: its process's pipes, or its HTTP endpoint."""
        config = self.config
        if config.transport == "http":
            async with (
                httpx.AsyncClient(
                    transport=CappedTransport(GuardedTransport(trusted=[config.url])),
                    headers=config.headers,
                    timeout=HTTP_TIMEOUT,
                    follow_redirects=True,
                ) as client,
                streamable_http_client(config.url, http_client=client) as (read, write, _),
            ):
                yield read, write
            return
        params = StdioServerParameters(
            command=config.command,
            args=list(config.args),
            env=config.env or None,  # None: the SDK's short list of safe variables only
            cwd=config.cwd,
        )
        async with capped_stdio(params, errlog) as (read, write):
            yield read, write

    def _last_words(self) -> str:
        """The last line a stdio server wrote to its log (why it would not start)."""
        path = self._errlog()
        if self.config.transport != "stdio" or path == Path(os.devnull):
            return ""
        try:
            with path.open("rb") as log_file:
                log_file.seek(max(0, path.stat().st_size - TAIL_BYTES))
                tail = log_file.read().decode("utf-8", "replace")
        except OSError:
            return ""
        lines = [line.strip() for line in tail.splitlines() if line.strip()]
        return lines[-1][:300] if lines else ""

    def _errlog(self) -> Path:
        """Where the server's stderr goes: ``logs/mcp-<name>.log`` under the home."""
        if self.log_dir is not None:
            with contextlib.suppress(OSError):
                self.log_dir.mkdir(parents=True, exist_ok=True)
                return self.log_dir / f"mcp-{self.config.name}.log"
        return Path(os.devnull)
