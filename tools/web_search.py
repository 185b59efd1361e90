"""web_search: DuckDuckGo's key-free HTML endpoint, parsed into a few clean results.

Redirect links (``//duckduckgo.com/l/?uddg=...``) are unwrapped to the real URL, ads are
skipped, markup and entities are cleaned and duplicates dropped. A page without results
is an empty list with a note; a rate-limit, captcha ("anomaly") or unrecognised page is an
error, never an empty success. The page is streamed under a size cap (decoded bytes, so a
compression bomb stops at the cap too) and parsed in a worker thread, off the event loop.
"""

from __future__ import annotations

import asyncio
import codecs
import logging
import re
from typing import Any
from urllib.parse import parse_qs, urljoin, urlsplit, urlunsplit

import httpx
from bs4 import BeautifulSoup, Tag

from tools.base import ToolContext, ToolSpec
from tools.net import (
    TooLarge,
    describe_http_error,
    endpoint_client,
    read_limited,
    request_timeout,
)

log = logging.getLogger("companion.web")

DEFAULT_RESULTS = 5
# A DuckDuckGo result page is well under 100 KB; anything far bigger is not one.
MAX_PAGE_BYTES = 2 * 1024 * 1024

USE_WHEN = (
    "Search the web when the answer needs current or outside facts (news, prices, exchange "
    "rates, opening hours, anything you are not sure of)."
)
DESCRIPTION = (
    '`query`: search-engine keywords, e.g. "USD to JPY exchange rate"; `max_results`: how '
    "many results to return, 3 to 5 (default 5)."
)
PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {
            "type": "string",
            "minLength": 1,
            "description": "What to search for, as keywords.",
        },
        "max_results": {
            "type": "integer",
            "minimum": 3,
            "maximum": 5,
            "default": DEFAULT_RESULTS,
            "description": "Number of results wanted (3-5).",
        },
    },
    "required": ["query"],
    "additionalProperties": False,
}

NO_RESULTS_NOTE = "No results found for this query."
ONLY_ADS_NOTE = "The page held only sponsored results; no organic results were found."
RATE_LIMITED = "web search is rate-limited by DuckDuckGo right now (HTTP {status}); try again later"
CAPTCHA = "web search was blocked by DuckDuckGo's bot check (captcha); try again later"
UNEXPECTED_PAGE = "web search returned a page that is not a result list; try again later"
BAD_STATUS = "web search failed: DuckDuckGo answered HTTP {status}"
TOO_LARGE = f"web search failed: the result page is larger than {MAX_PAGE_BYTES // 1024**2} MB"

# Phrases and selectors of DuckDuckGo's "anomaly" (bot-check) interstitial.
ANOMALY_SELECTORS = ("form#challenge-form", ".anomaly-modal", "#anomaly-modal", ".g-recaptcha")
ANOMALY_PHRASES = ("bots use duckduckgo too", "confirm this search was made by a human")


def _clean(text: str) -> str:
    """Text with markup already removed, whitespace collapsed."""
    return re.sub(r"\s+", " ", text).strip()


def unwrap_url(href: str) -> str | None:
    """The real destination of a result link, or None for ads and non-web links."""
    absolute = urljoin("https://duckduckgo.com/", href.strip())
    parts = urlsplit(absolute)
    host = parts.hostname or ""
    if host == "duckduckgo.com" or host.endswith(".duckduckgo.com"):
        if parts.path.startswith("/l/"):
            target = parse_qs(parts.query).get("uddg", [""])[0]
            return unwrap_url(target) if target else None
        return None  # /y.js?... ad clicks and other internal links
    if parts.scheme not in ("http", "https") or not host:
        return None
    return absolute


def _dedup_key(url: str) -> str:
    parts = urlsplit(url)
    host = (parts.hostname or "").removeprefix("www.")
    return urlunsplit(("", host, parts.path.rstrip("/"), parts.query, ""))


def _is_ad(block: Tag) -> bool:
    classes = block.get_attribute_list("class")
    if any(name.startswith("result--ad") for name in classes):
        return True
    return block.select_one(".badge--ad, .result__ad-badge") is not None


def parse_results(html: str, limit: int) -> dict[str, Any]:
    """Results (or an error/note) from a DuckDuckGo HTML page."""
    soup = BeautifulSoup(html, "html.parser")
    lowered = soup.get_text(" ").lower()
    if any(soup.select_one(sel) for sel in ANOMALY_SELECTORS) or any(
        phrase in lowered for phrase in ANOMALY_PHRASES
    ):
        return {"error": CAPTCHA}
    blocks = [block for block in soup.select("div.result") if isinstance(block, Tag)]
    if soup.select_one(".no-results") is not None and not any(
        block.select_one("a.result__a") for block in blocks
    ):
        return {"results": [], "note": NO_RESULTS_NOTE}
    if not blocks:
        return {"error": UNEXPECTED_PAGE}
    results: list[dict[str, str]] = []
    seen: set[str] = set()
    for block in blocks:
        link = block.select_one("a.result__a")
        if link is None or _is_ad(block):
            continue
        url = unwrap_url(str(link.get("href") or ""))
        if url is None or _dedup_key(url) in seen:
            continue
        title = _clean(link.get_text())
        if not title:
            continue
        snippet_tag = block.select_one(".result__snippet")
        snippet = _clean(snippet_tag.get_text()) if snippet_tag else ""
        seen.add(_dedup_key(url))
        results.append({"title": title, "snippet": snippet, "url": url})
        if len(results) >= limit:
            break
    if not results:
        return {"results": [], "note": ONLY_ADS_NOTE}
    return {"results": results}


def _charset(response: httpx.Response) -> str:
    """The page's declared charset when Python knows it, else UTF-8."""
    declared = response.charset_encoding or "utf-8"
    try:
        return codecs.lookup(declared).name
    except LookupError:
        return "utf-8"


async def _fetch_page(ctx: ToolContext, query: str) -> tuple[int, str]:
    """The endpoint's HTTP status and, for a 200, its page read under the size cap."""
    # The guarded client sends a browser's User-Agent and the encodings read_limited reads.
    headers = {"Accept": "text/html", "Accept-Language": "en"}
    async with (
        endpoint_client(
            ctx.settings, "web_search_url", timeout=request_timeout(ctx.settings), headers=headers
        ) as client,
        client.stream("POST", ctx.settings.web_search_url, data={"q": query}) as response,
    ):
        if response.status_code != 200:
            return response.status_code, ""
        body = await read_limited(response, MAX_PAGE_BYTES)
        return 200, body.decode(_charset(response), errors="replace")


async def web_search(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    """Run one search against ``settings.web_search_url`` and return clean results."""
    query = _clean(str(args.get("query", "")))
    if not query:
        return {"error": "web_search needs a query"}
    limit = int(args.get("max_results", DEFAULT_RESULTS))
    try:
        status, page = await _fetch_page(ctx, query)
    except TooLarge:
        log.exception("the result page for %r is too large", query)
        return {"error": TOO_LARGE}
    except httpx.HTTPError as exc:
        log.exception("web search for %r failed", query)
        return {"error": "web search failed: " + describe_http_error(exc, "the search service")}
    if status in (202, 403, 429):
        return {"error": RATE_LIMITED.format(status=status)}
    if status != 200:
        return {"error": BAD_STATUS.format(status=status)}
    # html.parser is pure Python: a big page would hold the event loop for seconds.
    parsed = await asyncio.to_thread(parse_results, page, limit)
    if "error" in parsed:
        return parsed
    return {"query": query, **parsed}


def sent(args: dict[str, Any]) -> str | None:
    """What a search sends off the machine: the model's query as searched (None when
    there is none: nothing is sent)."""
    return _clean(str(args.get("query", ""))) or None


def format_results(result: dict[str, Any]) -> str:
    """Numbered results (title, snippet, URL) for the stored tool message."""
    results = result.get("results") or []
    if not results:
        return f'No results for "{result.get("query", "")}". {result.get("note", "")}'.strip()
    lines = [f'Results for "{result.get("query", "")}":']
    for number, item in enumerate(results, start=1):
        lines.append(f"{number}. {item['title']}")
        if item.get("snippet"):
            lines.append(f"   {item['snippet']}")
        lines.append(f"   {item['url']}")
    return "\n".join(lines)


TOOLS = [
    ToolSpec(
        name="web_search",
        use_when=USE_WHEN,
        description=DESCRIPTION,
        parameters=PARAMETERS,
        run=web_search,
        role="web_tool",
        command="web_search",
        format=format_results,
        examples=("/web_search USD to JPY exchange rate",),
        untrusted=True,
        outbound=sent,
    )
]
