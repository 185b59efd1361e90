"""Reading ``COMPANION_HOME/mcp.json``: the MCP servers the operator trusts.

The file has the ``mcpServers`` shape Claude Desktop and other clients read: each server
is a stdio command (``command``, ``args``, ``env``, ``cwd``) or a streamable-HTTP
endpoint (``url``, ``headers``; ``type`` "http" or "streamable-http" may say so). Our
one addition is ``timeout``: the seconds a call may take (default: the tool limit).
A server the file describes badly, or an http URL off this machine (plain http only on
loopback; anything else must be https), becomes a ``ConfigProblem`` naming it, never an
exception: the other servers still load. Only the operator writes this file; nothing
on the web page changes it.
"""

from __future__ import annotations

import ipaddress
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import httpx

from tools.mcp.names import SEPARATOR
from tools.net import literal_address, url_problem

CONFIG_FILE = "mcp.json"
SERVER_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,30}$")
HTTP_TYPES = ("http", "streamable-http", "streamable_http", "streamableHttp")
LOOPBACK_NAMES = ("localhost",)

NOT_JSON = "{file} is not valid JSON: {detail}"
NO_SERVERS = '{file} has no "mcpServers" object'
BAD_NAME = (
    "the server name {name!r} must start with a letter and hold only letters, digits, "
    f"'-' and single '_' (at most 31 characters; '{SEPARATOR}' joins it to its tools' names)"
)
NOT_AN_OBJECT = "server {name!r}: its entry must be an object"
NO_TRANSPORT = 'server {name!r}: give a "command" (stdio) or a "url" (streamable HTTP)'
BOTH_TRANSPORTS = 'server {name!r}: give a "command" or a "url", not both'
UNSUPPORTED_TYPE = (
    'server {name!r}: type {kind!r} is not supported (stdio, or "http" for streamable HTTP)'
)
NOT_HTTPS = (
    "server {name!r}: {url} is plain http off this machine; use https, or http on "
    "loopback (127.0.0.1, ::1, localhost)"
)
BAD_FIELD = "server {name!r}: {field} must be {kind}"


@dataclass(frozen=True)
class ServerConfig:
    """One MCP server as the operator described it."""

    name: str
    transport: Literal["stdio", "http"]
    command: str = ""
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    timeout: float | None = None  # seconds per call; None: the settings' tool limit

    @property
    def remote(self) -> bool:
        """True for an HTTP server off this machine (what it is sent leaves the machine)."""
        return self.transport == "http" and not is_loopback_url(self.url)

    @property
    def where(self) -> str:
        """The command line or URL, for people (doctor, Settings); no env or headers."""
        if self.transport == "http":
            return self.url
        return " ".join([self.command, *self.args])


@dataclass(frozen=True)
class ConfigProblem:
    """A server (or the whole file, ``name`` "") that could not be read."""

    name: str
    reason: str


@dataclass(frozen=True)
class McpConfig:
    """What ``mcp.json`` holds: the servers to start and the entries refused."""

    servers: tuple[ServerConfig, ...] = ()
    problems: tuple[ConfigProblem, ...] = ()


def config_path(home: Path) -> Path:
    """Where a home's MCP servers are listed."""
    return home / CONFIG_FILE


def is_loopback_url(url: str) -> bool:
    """Whether ``url``'s host is this machine: localhost or a loopback address."""
    host = httpx.URL(url).host
    if host.lower() in LOOPBACK_NAMES:
        return True
    addresses = literal_address(host) or []
    return bool(addresses) and all(ipaddress.ip_address(a).is_loopback for a in addresses)


def read_config(home: Path) -> McpConfig:
    """The servers of ``home``'s mcp.json (none when there is no file)."""
    path = config_path(home)
    if not path.is_file():
        return McpConfig()
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        return McpConfig(problems=(ConfigProblem("", NOT_JSON.format(file=path, detail=exc)),))
    return parse_config(data, path)


def parse_config(data: Any, path: Path | str = CONFIG_FILE) -> McpConfig:
    """Servers and problems from the file's parsed JSON."""
    entries = data.get("mcpServers") if isinstance(data, dict) else None
    if not isinstance(entries, dict):
        return McpConfig(problems=(ConfigProblem("", NO_SERVERS.format(file=path)),))
    servers: list[ServerConfig] = []
    problems: list[ConfigProblem] = []
    for name, entry in entries.items():
        try:
            server = parse_server(str(name), entry)
        except ValueError as exc:
            problems.append(ConfigProblem(str(name), str(exc)))
            continue
        if server is not None:
            servers.append(server)
    return McpConfig(tuple(servers), tuple(problems))


def parse_server(name: str, entry: Any) -> ServerConfig | None:
    """One server entry (None when it is ``"disabled": true``); ValueError says what is
    wrong with it."""
    if not SERVER_NAME.match(name) or SEPARATOR in name:
        raise ValueError(BAD_NAME.format(name=name))
    if not isinstance(entry, dict):
        raise ValueError(NOT_AN_OBJECT.format(name=name))
    if entry.get("disabled") is True:
        return None
    kind = entry.get("type")
    has_command, has_url = "command" in entry, "url" in entry
    if has_command and has_url:
        raise ValueError(BOTH_TRANSPORTS.format(name=name))
    if kind not in (None, "stdio", *HTTP_TYPES):
        raise ValueError(UNSUPPORTED_TYPE.format(name=name, kind=kind))
    timeout = _timeout(name, entry.get("timeout"))
    if has_url:
        return _http_server(name, entry, timeout)
    if has_command:
        return _stdio_server(name, entry, timeout)
    raise ValueError(NO_TRANSPORT.format(name=name))


def _stdio_server(name: str, entry: dict[str, Any], timeout: float | None) -> ServerConfig:
    command = entry["command"]
    if not isinstance(command, str) or not command.strip():
        raise ValueError(BAD_FIELD.format(name=name, field="command", kind="a non-empty string"))
    args = entry.get("args", [])
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise ValueError(BAD_FIELD.format(name=name, field="args", kind="a list of strings"))
    cwd = entry.get("cwd")
    if cwd is not None and not isinstance(cwd, str):
        raise ValueError(BAD_FIELD.format(name=name, field="cwd", kind="a string"))
    env = _strings(name, "env", entry.get("env", {}))
    return ServerConfig(name, "stdio", command, tuple(args), env, cwd, timeout=timeout)


def _http_server(name: str, entry: dict[str, Any], timeout: float | None) -> ServerConfig:
    url = entry["url"]
    problem = url_problem(url) if isinstance(url, str) else "the url must be a string"
    if problem:
        raise ValueError(f"server {name!r}: {problem}")
    if httpx.URL(url).scheme != "https" and not is_loopback_url(url):
        raise ValueError(NOT_HTTPS.format(name=name, url=url))
    headers = _strings(name, "headers", entry.get("headers", {}))
    return ServerConfig(name, "http", url=url, headers=headers, timeout=timeout)


def _strings(name: str, key: str, value: Any) -> dict[str, str]:
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise ValueError(BAD_FIELD.format(name=name, field=key, kind="an object of strings"))
    return {str(k): v for k, v in value.items()}


def _timeout(name: str, value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ValueError(BAD_FIELD.format(name=name, field="timeout", kind="a positive number"))
    return float(value)
