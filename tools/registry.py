"""The one place tools are declared: schemas for the model, validated execution.

``ToolRegistry.enabled`` returns the tools that can work now (gates computed per call;
``ToolSpec.schema`` is what the model reads); ``ToolRegistry.execute`` validates arguments
against the schema, runs the tool under a time limit and always returns a
JSON-serialisable dict — ``{"error": ...}`` on any failure, never an exception. Every
error result is logged at WARNING on ``companion.tools``: the tool, the session, the
kind of failure and a one-line reason, with the settings' secrets masked.
``home_registry(home)`` adds the tools of the MCP servers of the home's mcp.json
(``tools.mcp``): they ``join`` as each server answers, under their server's prefix, and
never take a name already in use.

The seed's two plain functions a script calls, ``get_tool_schemas()`` and
``execute_tool(tool_name, arguments, session_id=None)``, have async twins named the
LangChain way for code on an event loop: ``aget_tool_schemas(ctx)`` (the tools enabled for
a context) and ``aexecute_tool``. ``execute_tool`` runs its twin on an event loop of its
own, so it refuses to run on a thread whose loop is running (it would block that loop):
there, ``await aexecute_tool(...)``, or call it through ``asyncio.to_thread``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib
import json
import logging
import threading
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Literal

import jsonschema

from config.settings import Settings, database_url, load_settings
from memory import MemoryGates, open_store, release_connections
from tools.base import ToolContext, ToolSpec
from tools.mcp.config import config_path

log = logging.getLogger("companion.tools")

BUILTIN_MODULES = (
    "tools.web_search",
    "tools.weather",
    "tools.memory_search",
    "tools.memory_sql",
    "tools.memory_write",
    "tools.image_generate",
    "tools.image_analyze",
)
MAX_RESULT_CHARS = 16_000
TRUNCATION_MARK = "\n…[truncated: {dropped} more characters]"

UNKNOWN_TOOL = "unknown tool {name!r}; available tools: {available}"
MALFORMED_ARGUMENTS = "malformed arguments for {name}: {detail}"
INVALID_ARGUMENTS = "invalid arguments for {name}: {detail}"
TOOL_TIMEOUT = "{name} timed out after {seconds:g} s"
TOOL_FAILED = "{name} failed: {detail}"
INSIDE_A_LOOP = (
    "{name}() runs its own event loop and would block the one running on this thread: "
    "use `await {twin}(...)` here, or call {name} through asyncio.to_thread"
)
ERROR_LOGGED = "tool error: tool=%s session=%s kind=%s reason=%s"
REASON_CHARS = 300  # a logged reason is one line of at most this many characters
SECRET_MASK = "[secret]"

ErrorKind = Literal[
    "unknown_tool",  # no tool of that name
    "malformed_arguments",  # not JSON, or not an object
    "invalid_arguments",  # against the tool's schema
    "timeout",  # the tool ran out of time
    "crashed",  # the tool raised
    "no_result",  # the tool returned something that is not a dict
    "tool_error",  # the tool answered with {"error": ...} (a failed request, a refusal)
]


class ToolRegistry:
    """A set of tools; the application uses ``default_registry()``, tests build their own."""

    def __init__(self, specs: Iterable[ToolSpec] = ()) -> None:
        self._tools: dict[str, ToolSpec] = {}
        # Built once per tool: jsonschema.validate would re-check the schema on every call.
        self._validators: dict[str, jsonschema.protocols.Validator] = {}
        for spec in specs:
            self.register(spec)

    def register(self, spec: ToolSpec) -> ToolSpec:
        """Add (or replace) a tool."""
        self._validators[spec.name] = _validator(spec)
        self._tools[spec.name] = spec
        return spec

    def join(self, specs: Iterable[ToolSpec]) -> list[str]:
        """Add tools from outside Companion (an MCP server's), never replacing one: the
        names already taken are refused and returned. Safe from another thread: the
        tables are swapped for new ones, never changed under a reader."""
        tools, validators = dict(self._tools), dict(self._validators)
        refused = []
        for spec in specs:
            if spec.name in tools:
                refused.append(spec.name)
                continue
            validators[spec.name] = _validator(spec)
            tools[spec.name] = spec
        self._validators, self._tools = validators, tools
        return refused

    def get(self, name: str) -> ToolSpec | None:
        """The tool with that name, or None."""
        return self._tools.get(name)

    def by_command(self, command: str) -> ToolSpec | None:
        """The tool a slash command names (its command alias or its own name)."""
        for spec in self._tools.values():
            if command in (spec.command, spec.name):
                return spec
        return None

    @property
    def names(self) -> list[str]:
        """Every registered tool name."""
        return list(self._tools)

    @property
    def private(self) -> frozenset[str]:
        """Tools whose results carry the person's private data (``ToolSpec.private``)."""
        return frozenset(name for name, spec in self._tools.items() if spec.private)

    @property
    def untrusted(self) -> frozenset[str]:
        """Tools whose results carry outside content (``ToolSpec.untrusted``)."""
        return frozenset(name for name, spec in self._tools.items() if spec.untrusted)

    def outbound(self, name: str, args: dict[str, Any]) -> str | None:
        """What this call would send off the machine that the model wrote, or None."""
        spec = self._tools.get(name)
        return spec.outbound(args) if spec is not None and spec.outbound is not None else None

    def writes_memory(self, name: str, args: dict[str, Any]) -> bool:
        """Whether this call would change stored memories or messages."""
        spec = self._tools.get(name)
        return bool(spec and spec.writes_memory and spec.writes_memory(args))

    async def enabled(self, ctx: ToolContext, gates: MemoryGates | None = None) -> list[ToolSpec]:
        """The tools whose gate is open for this context; ``gates``: the memory gates'
        answer when the caller has it already (read with the turn's history)."""
        enabled = []
        ctx.forget_answers(gates)  # gates share their questions within this call only
        for spec in self._tools.values():
            try:
                if await spec.available(ctx):
                    enabled.append(spec)
            except Exception:  # a broken gate closes the tool, it does not break the turn
                log.exception("the gate of %s failed; the tool is not offered", spec.name)
                continue
        return enabled

    async def execute(self, name: str, arguments: Any, ctx: ToolContext) -> dict[str, Any]:
        """Validate and run one call; failures come back as ``{"error": ...}``, logged."""
        result, kind = await self._execute(name, arguments, ctx)
        if kind is not None:
            log_tool_error(name, ctx, kind, str(result["error"]))
        return result

    async def _execute(
        self, name: str, arguments: Any, ctx: ToolContext
    ) -> tuple[dict[str, Any], ErrorKind | None]:
        """The call's result and, for an error result, its kind."""
        spec = self._tools.get(name)
        if spec is None:
            available = ", ".join(self._tools)
            return {"error": UNKNOWN_TOOL.format(name=name, available=available)}, "unknown_tool"
        args, problem = parse_arguments(name, arguments)
        if problem:
            return {"error": problem}, "malformed_arguments"
        error = jsonschema.exceptions.best_match(self._validators[name].iter_errors(args))
        if error is not None:
            where = ".".join(str(p) for p in error.absolute_path)
            detail = f"{where}: {error.message}" if where else error.message
            return {"error": INVALID_ARGUMENTS.format(name=name, detail=detail)}, (
                "invalid_arguments"
            )
        seconds = spec.timeout or ctx.settings.tool_timeout
        try:
            result = await asyncio.wait_for(spec.run(args, ctx), timeout=seconds)
        except TimeoutError:
            return {"error": TOOL_TIMEOUT.format(name=name, seconds=seconds)}, "timeout"
        except Exception as exc:
            log.exception("%s crashed", name)
            detail = f"{type(exc).__name__}: {exc}"
            return {"error": TOOL_FAILED.format(name=name, detail=detail)}, "crashed"
        if not isinstance(result, dict):
            return {"error": TOOL_FAILED.format(name=name, detail="returned no result")}, (
                "no_result"
            )
        clean = json.loads(json.dumps(result, default=str, ensure_ascii=False))
        return clean, "tool_error" if "error" in clean else None

    def format_result(self, name: str, result: dict[str, Any]) -> str:
        """The stored text of a result: ``🔧 TOOL RESULT — NAME`` block, size-capped."""
        spec = self._tools.get(name)
        try:
            body = spec.format(result) if spec and "error" not in result else None
        except Exception:  # a broken formatter still shows the raw result
            log.exception("formatting the result of %s failed", name)
            body = None
        if body is None:
            body = (
                f"Error: {result['error']}"
                if "error" in result
                else json.dumps(result, ensure_ascii=False, indent=1)
            )
        if len(body) > MAX_RESULT_CHARS:
            body = body[:MAX_RESULT_CHARS] + TRUNCATION_MARK.format(
                dropped=len(body) - MAX_RESULT_CHARS
            )
        return f"🔧 TOOL RESULT — {name.upper()}\n\n{body}\n\n---"

    def role_of(self, name: str) -> str:
        """The message role of a tool's results (unknown tools count as memory-free web)."""
        spec = self._tools.get(name)
        return spec.role if spec else "web_tool"


def _validator(spec: ToolSpec) -> jsonschema.protocols.Validator:
    """The checked validator of a tool's parameters (SchemaError for a broken schema)."""
    jsonschema.Draft202012Validator.check_schema(spec.parameters)
    return jsonschema.validators.validator_for(spec.parameters)(spec.parameters)


def parse_arguments(name: str, arguments: Any) -> tuple[dict[str, Any], str | None]:
    """Arguments as a dict, accepting a JSON string; or an error message."""
    if arguments is None or arguments == "":
        return {}, None
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError as exc:
            return {}, MALFORMED_ARGUMENTS.format(name=name, detail=f"not valid JSON ({exc})")
    if not isinstance(arguments, dict):
        return {}, MALFORMED_ARGUMENTS.format(
            name=name, detail=f"expected an object, got {type(arguments).__name__}"
        )
    return arguments, None


def log_tool_error(name: str, ctx: ToolContext, kind: ErrorKind, reason: str) -> None:
    """One WARNING line for an error result: tool, session, kind and the reason on one
    line, cut to ``REASON_CHARS``, with any secret of the settings masked."""
    line = " ".join(mask_secrets(reason, ctx.settings).split())
    if len(line) > REASON_CHARS:
        line = line[: REASON_CHARS - 1] + "…"
    log.warning(ERROR_LOGGED, name, ctx.session_id or "-", kind, line)


def mask_secrets(text: str, settings: Settings) -> str:
    """``text`` with the settings' keys and password replaced by ``SECRET_MASK``."""
    for secret in (settings.api_key, settings.image_api_key, settings.password):
        if secret:
            text = text.replace(secret, SECRET_MASK)
    return text


def builtin_specs() -> list[ToolSpec]:
    """The tools shipped with Companion (each module exposes ``TOOLS``)."""
    specs: list[ToolSpec] = []
    for module_name in BUILTIN_MODULES:
        module = importlib.import_module(module_name)
        specs.extend(module.TOOLS)
    return specs


_DEFAULT: ToolRegistry | None = None


def default_registry() -> ToolRegistry:
    """The registry of built-in tools (built once)."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = ToolRegistry(builtin_specs())
    return _DEFAULT


_HOMES: dict[Path, ToolRegistry] = {}


def home_registry(home: Path) -> ToolRegistry:
    """The registry of a home: the built-in tools, and the tools of the MCP servers its
    mcp.json lists (started once per home, in the background, the SDK's import included:
    they join as each server answers). Without the file, ``default_registry()``."""
    if not config_path(home).is_file():
        return default_registry()
    key = home.expanduser().resolve()
    if key not in _HOMES:
        registry = ToolRegistry(builtin_specs())
        starting = threading.Thread(
            target=_start_mcp, args=(home, registry), name="companion-mcp-start", daemon=True
        )
        starting.start()
        _HOMES[key] = registry
    return _HOMES[key]


def _start_mcp(home: Path, registry: ToolRegistry) -> None:
    try:
        from tools.mcp.servers import start_servers  # the MCP SDK loads only when used

        start_servers(home, registry.join)
    except Exception:  # no MCP tools, and the log says why; the built-in tools stay
        log.exception("the MCP servers of %s could not be started", home)


@asynccontextmanager
async def configured_context(session_id: str | None = None) -> AsyncIterator[ToolContext]:
    """A tool context as the CLI resolves it (flags aside): the home's store, and the
    settings of the environment over its profile (a location saved in Settings counts);
    the store is closed on the way out."""
    store = open_store(load_settings().home, database_url())
    try:
        settings = load_settings(profile=await store.profile())
        yield ToolContext(settings, store, session_id, clock=store.clock)
    finally:
        await store.close()


def get_tool_schemas(*, registry: ToolRegistry | None = None) -> list[dict[str, Any]]:
    """The schemas (OpenAI/OpenRouter function format) of every tool of ``registry``, the
    built-in tools by default, gates aside; ``aget_tool_schemas`` gives a turn's."""
    registry = registry or default_registry()
    return [spec.schema() for name in registry.names if (spec := registry.get(name))]


async def aget_tool_schemas(
    ctx: ToolContext, *, registry: ToolRegistry | None = None
) -> list[dict[str, Any]]:
    """The schemas of the tools of ``registry`` (the built-in tools by default) whose gate
    is open for ``ctx``."""
    return [spec.schema() for spec in await (registry or default_registry()).enabled(ctx)]


def execute_tool(
    tool_name: str,
    arguments: Any,
    session_id: str | None = None,
    *,
    registry: ToolRegistry | None = None,
) -> dict[str, Any]:
    """Run one tool for a script, with the configured settings and store, on an event loop
    of its own; ``{"error": ...}`` on any failure. RuntimeError on a thread whose event
    loop is running: use ``aexecute_tool`` there."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_execute_and_release(tool_name, arguments, session_id, registry))
    raise RuntimeError(INSIDE_A_LOOP.format(name="execute_tool", twin="aexecute_tool"))


async def _execute_and_release(
    tool_name: str, arguments: Any, session_id: str | None, registry: ToolRegistry | None
) -> dict[str, Any]:
    try:
        return await aexecute_tool(tool_name, arguments, session_id, registry=registry)
    finally:
        await release_connections()  # this loop's Postgres pool dies with the loop


async def aexecute_tool(
    tool_name: str,
    arguments: Any,
    session_id: str | None = None,
    *,
    ctx: ToolContext | None = None,
    registry: ToolRegistry | None = None,
) -> dict[str, Any]:
    """Run one tool of ``registry`` (the built-in tools by default) for a session, with
    ``ctx`` or else the configured settings and store; ``{"error": ...}`` on any failure."""
    registry = registry or default_registry()
    if ctx is None:
        async with configured_context(session_id) as configured:
            return await registry.execute(tool_name, arguments, configured)
    if session_id is not None and ctx.session_id != session_id:
        ctx = dataclasses.replace(ctx, session_id=session_id)
    return await registry.execute(tool_name, arguments, ctx)
