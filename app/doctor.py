"""``companion doctor``: what a user runs when something is wrong.

Each check prints one line, ✓ or ✗ (or · for something merely not configured), and for a
✗ the fix. The command exits non-zero when the configured chat path cannot answer (the
database or the chat provider fails); an unreachable web service or an unset location
only limits a tool. A failed check's traceback goes to the log file, never the terminal.
"""

from __future__ import annotations

import logging
import platform
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib import metadata
from typing import Literal
from urllib.parse import urlsplit, urlunsplit

import httpx

from app.logs import FILE_ONLY, one_line
from config.settings import NO_CHAT_MODEL, Settings
from memory.backends import postgres_vector_index, sqlite_health
from providers import (
    PLACEHOLDER_KEY,
    EmbeddingUnavailable,
    find_local_servers,
    local_server,
    local_servers,
    open_embedder,
)
from tools.mcp.config import config_path

Status = Literal["ok", "fail", "info"]
MARKS: dict[Status, str] = {"ok": "✓", "fail": "✗", "info": "·"}
PACKAGES = ("langgraph", "langchain-core", "langchain-openai", "gradio", "openai", "httpx")
PROBE_TIMEOUT = 5.0
MCP_TIMEOUT = 10.0  # for an MCP server to start and list its tools
PGVECTOR_MISSING = (
    "not in this database: recall finds words only (an admin's `CREATE EXTENSION vector`, "
    "then `companion db migrate`, adds the vector index)"
)

log = logging.getLogger("companion.doctor")


@dataclass(frozen=True)
class Check:
    """One line of the report; ``fatal`` marks a failure of the chat path itself."""

    status: Status
    name: str
    detail: str
    fix: str = ""
    fatal: bool = False

    def line(self) -> str:
        """The printed line: mark, name, detail, and the fix for a failure."""
        text = f"{MARKS[self.status]} {self.name}: {self.detail}"
        return f"{text}\n    fix: {self.fix}" if self.fix and self.status == "fail" else text


def versions() -> Check:
    """Python and the versions of the packages Companion stands on."""
    found = []
    for name in (*PACKAGES, "llama-cpp-python"):
        try:
            found.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            found.append(f"{name} (not installed)")
    return Check("ok", "versions", f"Python {platform.python_version()}; " + ", ".join(found))


def database(settings: Settings) -> Check:
    """The database file opens, passes its integrity check, and has the current schema."""
    try:
        verdict, version = sqlite_health(settings.home)
    except Exception as exc:
        return Check(
            "fail",
            "database",
            _failure(settings.db_path, exc),
            "check that COMPANION_HOME is writable and the disk has space",
            fatal=True,
        )
    if verdict != "ok":
        return Check(
            "fail",
            "database",
            f"{settings.db_path}: integrity check says {verdict[:200]}",
            "restore from a backup, or move the file aside to start fresh",
            fatal=True,
        )
    return Check("ok", "database", f"{settings.db_path} (integrity ok, schema v{version})")


def postgres(url: str, settings: Settings) -> Iterator[Check]:
    """The shared Postgres database answers the app's role, with Companion's schema; and
    whether it has pgvector's vector index (without it, recall is lexical: not a failure)."""
    import asyncio

    from graph.setup import open_store, release_connections

    async def probe() -> tuple[int, str | None]:
        store = open_store({"home": str(settings.home), "database_url": url})
        try:
            return len(await store.list_sessions()), await postgres_vector_index(store)
        finally:
            await release_connections()

    where = _without_password(url)
    try:
        sessions, pgvector = asyncio.run(probe())
    except Exception as exc:
        yield Check(
            "fail",
            "database",
            _failure(where, exc),
            "check COMPANION_DATABASE_URL and that the server is up; "
            "a new database needs `companion db migrate`",
            fatal=True,
        )
        return
    yield Check("ok", "database", f"{where} (Postgres; {sessions} chat(s) of the owner)")
    if pgvector is None:
        yield Check("info", "pgvector", PGVECTOR_MISSING)
    else:
        yield Check("ok", "pgvector", f"{pgvector}: hybrid recall (words and meaning)")


def _failure(where: object, exc: Exception) -> str:
    """A failed check's detail on one line; its traceback goes to the log file only."""
    detail = f"{where}: {type(exc).__name__}: {one_line(exc)}"
    log.warning("doctor: %s", detail, exc_info=exc, extra=FILE_ONLY)
    return detail


def _without_password(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.replace(f":{parts.password}@", ":***@")))


def _headers(key: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"} if key and key != PLACEHOLDER_KEY else {}


def chat_provider(settings: Settings) -> Iterator[Check]:
    """The chat endpoint: reachable, the model listed, and a one-token completion."""
    if settings.is_local:
        from providers.local_smoke import run_smoke

        smoke = run_smoke()
        if not smoke.ok:
            yield Check("fail", "local model", smoke.detail, "see above", fatal=True)
            return
        yield Check("ok", "local model", f"generated {smoke.detail!r} in {smoke.seconds:.1f} s")
        try:
            base = local_server().ensure()
        except Exception as exc:
            yield Check(
                "fail", "local server", str(exc), "run `companion doctor` again", fatal=True
            )
            return
        key, model = None, "smollm2"
    else:
        if not settings.base_url:
            yield Check(
                "fail",
                "chat endpoint",
                "no endpoint configured",
                "set COMPANION_BASE_URL (and COMPANION_API_KEY), or OPENROUTER_API_KEY",
                fatal=True,
            )
            return
        if not settings.chat_model:
            yield Check("fail", "chat model", NO_CHAT_MODEL, "set COMPANION_CHAT_MODEL", fatal=True)
            return
        base, key, model = settings.base_url.rstrip("/"), settings.api_key, settings.chat_model
    yield from _probe_endpoint(base, key, model)


def _probe_endpoint(base: str, key: str | None, model: str) -> Iterator[Check]:
    headers = _headers(key)
    try:
        listed = httpx.get(f"{base}/models", headers=headers, timeout=PROBE_TIMEOUT)
    except httpx.HTTPError as exc:
        fix = "check the URL and that the server is running"
        yield Check("fail", "chat endpoint", f"{base} unreachable ({exc})", fix, fatal=True)
        return
    if listed.status_code in (401, 403):
        detail = f"{base} refused the key (HTTP {listed.status_code})"
        yield Check("fail", "chat endpoint", detail, advice(listed.status_code), fatal=True)
        return
    yield Check("ok", "chat endpoint", f"{base} reachable (HTTP {listed.status_code})")
    names = _model_ids(listed)
    if names and model not in names and model != "smollm2":
        yield Check(
            "fail",
            "chat model",
            f"{model!r} is not in the endpoint's model list",
            "set COMPANION_CHAT_MODEL to one of: " + ", ".join(sorted(names)[:8]),
        )
    body = {"model": model, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 1}
    try:
        reply = httpx.post(f"{base}/chat/completions", json=body, headers=headers, timeout=60.0)
    except httpx.HTTPError as exc:
        yield Check("fail", "completion", f"no answer ({exc})", "see the log", fatal=True)
        return
    if reply.status_code != 200:
        detail = f"HTTP {reply.status_code}: {reply.text[:160]}"
        yield Check("fail", "completion", detail, advice(reply.status_code), fatal=True)
        return
    yield Check("ok", "completion", f"{model} answered a 1-token request")


def advice(status: int) -> str:
    """The fix an HTTP status points to."""
    if status in (401, 403):
        return "the key was refused: check COMPANION_API_KEY / OPENROUTER_API_KEY"
    if status == 404:
        return "wrong URL or model: check COMPANION_BASE_URL and COMPANION_CHAT_MODEL"
    if status == 429 or status >= 500:
        return "the provider is busy or failing: try again in a moment"
    return "check the model name, the URL and the key"


def _model_ids(response: httpx.Response) -> set[str]:
    try:
        return {str(m.get("id")) for m in response.json().get("data", [])}
    except (ValueError, AttributeError):
        return set()


def model_servers() -> Check:
    """The model servers running on this machine (Ollama, LM Studio, llama.cpp), which the
    app's Settings offers with one click."""
    import asyncio

    probes = local_servers().probes
    found = asyncio.run(find_local_servers(probes))
    if not found:
        looked = ", ".join(f"{p.kind} on 127.0.0.1:{p.port}" for p in probes)
        return Check("info", "model servers here", f"none answering ({looked})")
    listed = "; ".join(f"{f.kind} at {f.address} with {', '.join(f.models[:5])}" for f in found)
    first = found[0]
    use = (
        f"use one in the app's Settings (one click), or set COMPANION_BASE_URL={first.base_url} "
        f"and COMPANION_CHAT_MODEL={first.model}"
    )
    return Check("ok", "model servers here", f"{listed} — {use}")


def embeddings(settings: Settings) -> Check:
    """Recall's embedder: which model, and whether it embeds a text now (without it,
    recall finds words only: not a failure of the chat path)."""
    embedder = open_embedder(settings)
    if embedder is None:
        return Check("info", "embeddings", "off: recall finds words only")
    started = time.perf_counter()
    try:
        embedder.passages(["doctor"])
    except EmbeddingUnavailable as exc:
        local = embedder.model.startswith("local:")
        fix = (
            "run scripts/bootstrap, or set COMPANION_EMBEDDING_MODEL=off"
            if local
            else "set COMPANION_EMBEDDING_MODEL to a model the endpoint embeds with, or to local"
        )
        return Check("fail", "embeddings", f"{embedder.model}: {exc}; recall finds words only", fix)
    took = (time.perf_counter() - started) * 1000
    detail = (
        f"{embedder.model}, {embedder.dimensions} dimensions; the first text took {took:.0f} ms"
    )
    return Check("ok", "embeddings", detail)


def vision(settings: Settings) -> Check:
    """Whether images can be looked at."""
    if settings.vision_model and not settings.is_local:
        return Check("ok", "vision model", settings.vision_model)
    return Check(
        "info",
        "vision model",
        "none: Companion can't see the images it draws or you send "
        "(set COMPANION_VISION_MODEL or choose one in Settings)",
    )


def image_backend(settings: Settings) -> Check:
    """Whether image_generate is offered, and its endpoint answers."""
    if not settings.image_backend:
        return Check("info", "image backend", "none: drawing is not offered")
    if not settings.image_base_url:
        return Check(
            "fail",
            "image backend",
            f"{settings.image_backend} has no base URL",
            "set COMPANION_IMAGE_BASE_URL",
        )
    return _reachable("image backend", settings.image_base_url, "check COMPANION_IMAGE_BASE_URL")


def _reachable(name: str, url: str, fix: str) -> Check:
    try:
        response = httpx.get(url, timeout=PROBE_TIMEOUT, follow_redirects=False)
    except httpx.HTTPError as exc:
        return Check("fail", name, f"{url} unreachable ({type(exc).__name__})", fix)
    return Check("ok", name, f"{url} reachable (HTTP {response.status_code})")


def web_services(settings: Settings) -> Iterator[Check]:
    """DuckDuckGo (web_search) and Open-Meteo (weather)."""
    offline = "web_search/weather need the internet; check the connection or the URL setting"
    yield _reachable("web search", settings.web_search_url, offline)
    yield _reachable("weather", settings.weather_url, offline)


def location(settings: Settings) -> Check:
    """Weather needs a location."""
    if settings.latitude == 0 and settings.longitude == 0:
        return Check(
            "info",
            "location",
            "not set: the companion will ask where you are for the weather "
            "(set latitude/longitude in Settings)",
        )
    return Check("ok", "location", f"{settings.latitude}, {settings.longitude}")


def mcp_servers(settings: Settings) -> Iterator[Check]:
    """Each MCP server of the home's mcp.json: it starts and lists its tools (a failure
    only takes its tools away)."""
    if not config_path(settings.home).is_file():
        yield Check("info", "MCP servers", f"none (list them in {config_path(settings.home)})")
        return
    import asyncio

    from tools.mcp.servers import check_servers  # the MCP SDK loads only when used

    for server in asyncio.run(check_servers(settings.home, MCP_TIMEOUT)):
        name = f"MCP server {server.name}" if server.name else "MCP servers"
        if server.state == "ready":
            tools = ", ".join(server.tools) or "no tools"
            yield Check("ok", name, f"{server.where}: {len(server.tools)} tools ({tools})")
        else:
            fix = f"check its entry in {config_path(settings.home)}"
            if server.state == "failed":
                fix += f"; what it said is in {settings.home / 'logs' / f'mcp-{server.name}.log'}"
            yield Check("fail", name, f"{server.where or 'not used'}: {server.reason}", fix)


def run_checks(settings: Settings, database_url: str | None = None) -> Iterator[Check]:
    """Every check, in the order a person reads them (``database_url``: Postgres)."""
    steps: list[Callable[[], Check | Iterator[Check]]] = [
        versions,
        lambda: database(settings) if database_url is None else postgres(database_url, settings),
        lambda: chat_provider(settings),
        model_servers,
        lambda: embeddings(settings),
        lambda: vision(settings),
        lambda: image_backend(settings),
        lambda: web_services(settings),
        lambda: location(settings),
        lambda: mcp_servers(settings),
    ]
    for step in steps:
        result = step()
        yield from ([result] if isinstance(result, Check) else result)


def doctor(settings: Settings, database_url: str | None = None) -> int:
    """Print the report; 1 when the chat path cannot answer, else 0."""
    remote = f"{settings.chat_model} at {settings.base_url}"
    provider = "the bundled local model" if settings.is_local else remote
    print(f"Companion doctor — home {settings.home}, chat: {provider}")
    fatal = False
    for check in run_checks(settings, database_url):
        print(check.line(), flush=True)
        fatal = fatal or (check.fatal and check.status == "fail")
    print(f"log file: {settings.log_file}")
    if fatal:
        print("✗ the chat path cannot answer: fix the line(s) marked above", file=sys.stderr)
    return 1 if fatal else 0
