"""The one place tools are declared: schemas for the model, validated execution.

``ToolRegistry.enabled`` returns the tools that can work now (gates computed per call;
``ToolSpec.schema`` is what the model reads); ``ToolRegistry.execute`` validates arguments
against the schema, runs the tool under a time limit and always returns a
JSON-serialisable dict — ``{"error": ...}`` on any failure, never an exception.
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib
import json
import logging
from collections.abc import Iterable
from typing import Any

import jsonschema

from config.settings import database_url, load_settings
from memory import open_store
from tools.base import ToolContext, ToolSpec

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
        jsonschema.Draft202012Validator.check_schema(spec.parameters)
        self._tools[spec.name] = spec
        validator = jsonschema.validators.validator_for(spec.parameters)
        self._validators[spec.name] = validator(spec.parameters)
        return spec

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

    async def enabled(self, ctx: ToolContext) -> list[ToolSpec]:
        """The tools whose gate is open for this context."""
        enabled = []
        ctx.forget_answers()  # gates share their questions within this call only
        for spec in self._tools.values():
            try:
                if await spec.available(ctx):
                    enabled.append(spec)
            except Exception:  # a broken gate closes the tool, it does not break the turn
                log.exception("the gate of %s failed; the tool is not offered", spec.name)
                continue
        return enabled

    async def execute(self, name: str, arguments: Any, ctx: ToolContext) -> dict[str, Any]:
        """Validate and run one call; failures come back as ``{"error": ...}``."""
        spec = self._tools.get(name)
        if spec is None:
            return {"error": UNKNOWN_TOOL.format(name=name, available=", ".join(self._tools))}
        args, problem = parse_arguments(name, arguments)
        if problem:
            return {"error": problem}
        error = jsonschema.exceptions.best_match(self._validators[name].iter_errors(args))
        if error is not None:
            where = ".".join(str(p) for p in error.absolute_path)
            detail = f"{where}: {error.message}" if where else error.message
            return {"error": INVALID_ARGUMENTS.format(name=name, detail=detail)}
        seconds = spec.timeout or ctx.settings.tool_timeout
        try:
            result = await asyncio.wait_for(spec.run(args, ctx), timeout=seconds)
        except TimeoutError:
            log.warning("%s timed out after %s s", name, seconds)
            return {"error": TOOL_TIMEOUT.format(name=name, seconds=seconds)}
        except Exception as exc:
            log.exception("%s crashed", name)
            return {"error": TOOL_FAILED.format(name=name, detail=f"{type(exc).__name__}: {exc}")}
        if not isinstance(result, dict):
            return {"error": TOOL_FAILED.format(name=name, detail="returned no result")}
        return json.loads(json.dumps(result, default=str, ensure_ascii=False))

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


def configured_context(session_id: str | None = None) -> ToolContext:
    """A tool context built from configuration (flags aside): settings and their store."""
    settings = load_settings()
    return ToolContext(settings, open_store(settings.home, database_url()), session_id)


async def get_tool_schemas(
    ctx: ToolContext | None = None, *, registry: ToolRegistry | None = None
) -> list[dict[str, Any]]:
    """Schemas of the tools enabled for ``ctx`` (every tool without one), of ``registry``
    or the built-in tools."""
    registry = registry or default_registry()
    if ctx is not None:
        return [spec.schema() for spec in await registry.enabled(ctx)]
    return [spec.schema() for name in registry.names if (spec := registry.get(name))]


async def execute_tool(
    tool_name: str,
    arguments: Any,
    session_id: str | None = None,
    *,
    ctx: ToolContext | None = None,
    registry: ToolRegistry | None = None,
) -> dict[str, Any]:
    """Run one tool of ``registry`` (the built-in tools by default) for a session; without
    ``ctx``, with the configured settings and store."""
    ctx = ctx or configured_context(session_id)
    if session_id is not None and ctx.session_id != session_id:
        ctx = dataclasses.replace(ctx, session_id=session_id)
    return await (registry or default_registry()).execute(tool_name, arguments, ctx)
