"""A home's MCP servers, on an event loop of their own thread, their tools in the registry.

``start_servers`` reads the home's mcp.json and returns at once: each server is opened
in the background (never delaying the page or a turn), its tools join the registry
through ``join`` once listed, and a server that fails to start is logged, shown in
``statuses`` (doctor, Settings) and simply has no tools. A call from any event loop runs
on the servers' loop (``McpServers.call``); the registry's time limit cancels it there
too. Failures are data: ``{"error": ...}`` for the registry to log and the model to read.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tools.base import ToolSpec
from tools.mcp.config import McpConfig, ServerConfig, read_config
from tools.mcp.connection import ConnectFailed, Connection, describe
from tools.mcp.names import tool_name
from tools.mcp.results import TooLarge, to_result
from tools.mcp.specs import tool_specs

log = logging.getLogger("companion.mcp")

CONNECT_SECONDS = 20.0
STOP_SECONDS = 5.0
UNAVAILABLE = "the {server} server is not available: {reason}"
CALL_FAILED = "{name} failed: {reason}"
TAKEN = "{name}: a tool of that name exists already"

Join = Callable[[Iterable[ToolSpec]], list[str]]  # adds tools, returns the names refused


@dataclass(frozen=True)
class ServerStatus:
    """A server as a person checks it: where it runs, its state, its tools."""

    name: str
    where: str
    state: str  # starting, ready, failed, crashed, or refused (mcp.json could not use it)
    reason: str = ""
    tools: tuple[str, ...] = ()
    skipped: tuple[str, ...] = ()  # tools left out, and why


class McpServers:
    """The servers of one mcp.json; ``start`` opens them in the background."""

    def __init__(
        self,
        config: McpConfig,
        *,
        log_dir: Path | None = None,
        connect_seconds: float = CONNECT_SECONDS,
    ) -> None:
        self.config = config
        self.connect_seconds = connect_seconds
        self.connections = {s.name: Connection(s, log_dir) for s in config.servers}
        self.joined: dict[str, tuple[str, ...]] = {}
        self.skipped: dict[str, tuple[str, ...]] = {}
        self.started = threading.Event()  # set once every server was tried
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="companion-mcp", daemon=True
        )

    def start(self, join: Join) -> McpServers:
        """Open every server in the background; their tools go to ``join``."""
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._open_all(join), self._loop)
        atexit.register(self.stop)
        return self

    def stop(self) -> None:
        """Close every session (ending stdio servers' processes) and the loop."""
        if not self._thread.is_alive():
            return
        closing = asyncio.run_coroutine_threadsafe(self._close_all(), self._loop)
        with contextlib.suppress(Exception):
            closing.result(STOP_SECONDS)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(STOP_SECONDS)

    def statuses(self) -> list[ServerStatus]:
        """Every server of the file, in its order, refused entries last."""
        shown = [
            ServerStatus(
                name,
                connection.config.where,
                connection.state,
                connection.reason,
                self.joined.get(name, ()),
                self.skipped.get(name, ()),
            )
            for name, connection in self.connections.items()
        ]
        return shown + refused_entries(self.config)

    async def call(self, server: str, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        """Call ``server``'s ``tool`` from any event loop (run on the servers' loop)."""
        running = asyncio.run_coroutine_threadsafe(self._call(server, tool, args), self._loop)
        return await asyncio.wrap_future(running)

    async def _call(self, server: str, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        name = tool_name(server, tool) or tool
        started = time.perf_counter()
        try:
            message = await self.connections[server].call(tool, args, self.connect_seconds)
        except ConnectFailed as exc:
            return {"error": UNAVAILABLE.format(server=server, reason=exc)}
        except TooLarge as exc:
            log.warning("mcp call %s refused: %s", name, exc)
            return {"error": str(exc)}
        except Exception as exc:  # the server broke or refused: the model reads why
            log.warning("mcp call %s failed (%s)", name, type(exc).__name__)
            return {"error": CALL_FAILED.format(name=name, reason=describe(exc))}
        ms = (time.perf_counter() - started) * 1000
        log.info("mcp call: tool=%s ms=%.0f status=%s", name, ms, message.status)
        return to_result(name, message)

    async def _open_all(self, join: Join) -> None:
        try:
            await asyncio.gather(*(self._open(c, join) for c in self.connections.values()))
        finally:
            self.started.set()

    async def _open(self, connection: Connection, join: Join) -> None:
        """Open one server and give its tools to the registry (taken names refused)."""
        config = connection.config
        try:
            await connection.open(self.connect_seconds)
        except ConnectFailed:
            return  # logged and kept in its state
        built = tool_specs(config, connection.tools, self.call)
        refused = join(built.specs)
        skipped = [*built.skipped, *(TAKEN.format(name=name) for name in refused)]
        self.joined[config.name] = tuple(s.name for s in built.specs if s.name not in refused)
        self.skipped[config.name] = tuple(skipped)
        for reason in skipped:
            log.warning("mcp server %s: tool left out: %s", config.name, reason)
        log.info("mcp server %s ready: %d tools", config.name, len(self.joined[config.name]))

    async def _close_all(self) -> None:
        await asyncio.gather(*(c.close() for c in self.connections.values()))


async def check_server(
    config: ServerConfig, seconds: float, log_dir: Path | None = None
) -> ServerStatus:
    """Open one server on the caller's loop, list its tools and close it (doctor)."""
    connection = Connection(config, log_dir)
    try:
        await connection.open(seconds)
    except ConnectFailed as exc:
        return ServerStatus(config.name, config.where, "failed", str(exc))
    finally:
        await connection.close()
    built = tool_specs(config, connection.tools, _no_call)
    names = tuple(spec.name for spec in built.specs)
    return ServerStatus(config.name, config.where, "ready", "", names, tuple(built.skipped))


async def check_servers(home: Path, seconds: float) -> list[ServerStatus]:
    """Every server of ``home``'s mcp.json checked at once, refused entries last."""
    config = read_config(home)
    checked = await asyncio.gather(
        *(check_server(s, seconds, home / "logs") for s in config.servers)
    )
    return [*checked, *refused_entries(config)]


def refused_entries(config: McpConfig) -> list[ServerStatus]:
    """The entries of mcp.json that could not be used, as statuses."""
    return [ServerStatus(p.name, "", "refused", p.reason) for p in config.problems]


async def _no_call(server: str, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"error": "not connected"}


_RUNNING: dict[Path, McpServers] = {}


def start_servers(home: Path, join: Join) -> McpServers:
    """Start the servers of ``home``'s mcp.json (once per home) in the background."""
    key = home.expanduser().resolve()
    if key not in _RUNNING:
        servers = McpServers(read_config(home), log_dir=home / "logs")
        _RUNNING[key] = servers.start(join)
    return _RUNNING[key]


def running_servers(home: Path) -> McpServers | None:
    """The servers started for ``home``, or None (no mcp.json, or not started yet)."""
    return _RUNNING.get(home.expanduser().resolve())
