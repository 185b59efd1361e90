"""web_search against the local DuckDuckGo HTML fixture: parsing, limits and failures."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Iterator
from pathlib import Path
from typing import Any

import pytest

import tools.web_search as web_search_module
from config.settings import Settings
from evals.fixtures import DuckDuckGoFixture
from memory.sqlite.async_store import AsyncSqliteStore
from memory.sqlite.store import SqliteStore
from tools.base import ToolContext
from tools.registry import ToolRegistry
from tools.web_search import (
    TOO_LARGE,
    TOOLS,
    format_results,
    parse_results,
    unwrap_url,
    web_search,
)


@pytest.fixture(scope="module")
def ddg() -> Iterator[DuckDuckGoFixture]:
    with DuckDuckGoFixture(slow_seconds=3.0) as server:
        yield server


@pytest.fixture(autouse=True)
def fresh_requests(ddg: DuckDuckGoFixture) -> None:
    ddg.clear()


def make_ctx(home: Path, server: DuckDuckGoFixture, **settings: Any) -> ToolContext:
    values: dict[str, Any] = {"home": home, **server.settings_overrides(), **settings}
    return ToolContext(Settings(**values), AsyncSqliteStore(SqliteStore.open_home(home)), "s1")


async def test_currency_query_gives_clean_unwrapped_results(tmp_path, ddg):
    result = await web_search({"query": "USD to JPY"}, make_ctx(tmp_path, ddg))

    assert "error" not in result
    results = result["results"]
    assert len(results) == 5
    assert results[0] == {
        "title": "1 USD to JPY - US Dollars to Japanese Yen Exchange Rate - Xe",
        "snippet": "Get the latest 1 US Dollar to Japanese Yen rate for FREE with the original "
        "Universal Currency Converter. 1 USD = 154.32 JPY — mid-market rate at 09:14 UTC.",
        "url": "https://www.xe.com/currencyconverter/convert/?Amount=1&From=USD&To=JPY",
    }
    urls = [item["url"] for item in results]
    assert all("duckduckgo.com" not in url for url in urls)
    assert len(set(urls)) == len(urls), "the duplicate Xe listing is dropped"
    assert not any("Send Money to Japan" in item["title"] for item in results), "ad skipped"
    assert "it's free" in results[2]["snippet"]
    assert all("<b>" not in item["title"] + item["snippet"] for item in results)


async def test_request_is_a_form_post_with_the_query(tmp_path, ddg):
    await web_search({"query": "  USD   to JPY "}, make_ctx(tmp_path, ddg))

    (request,) = ddg.requests
    assert request.method == "POST"
    assert request.path == "/html/"
    assert request.form["q"] == ["USD to JPY"]


async def test_generic_results_drop_fragment_duplicates(tmp_path, ddg):
    result = await web_search({"query": "python asyncio"}, make_ctx(tmp_path, ddg))

    titles = [item["title"] for item in result["results"]]
    assert titles[0] == "python asyncio - Wikipedia"
    assert "python asyncio - Wikipedia (mobile)" not in titles
    assert result["results"][0]["url"] == (
        "https://en.wikipedia.org/wiki/Special:Search?search=python+asyncio"
    )
    assert "Encyclopædia Britannica" in result["results"][1]["snippet"]


async def test_max_results_limits_the_list(tmp_path, ddg):
    result = await web_search(
        {"query": "python asyncio", "max_results": 3}, make_ctx(tmp_path, ddg)
    )
    assert len(result["results"]) == 3


async def test_no_results_page_is_an_empty_list_with_a_note(tmp_path, ddg):
    result = await web_search({"query": "noresults zxqv"}, make_ctx(tmp_path, ddg))
    assert result == {
        "query": "noresults zxqv",
        "results": [],
        "note": "No results found for this query.",
    }
    assert "No results" in format_results(result)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("captcha please", "captcha"),
        ("anomaly", "captcha"),
        ("ratelimit now", "rate-limited"),
        ("servererror", "HTTP 500"),
        ("unexpected page", "not a result list"),
    ],
)
async def test_blocked_or_broken_pages_are_errors(tmp_path, ddg, query, expected):
    result = await web_search({"query": query}, make_ctx(tmp_path, ddg))
    assert expected in result["error"]
    assert "results" not in result


async def test_slow_answer_times_out_with_an_error(tmp_path, ddg):
    started = time.perf_counter()
    result = await web_search({"query": "slow query"}, make_ctx(tmp_path, ddg, tool_timeout=0.5))
    assert result == {"error": "web search failed: the search service did not answer in time"}
    # The 0.5 s tool timeout, with room for a loaded machine.
    assert time.perf_counter() - started < 5


async def test_unreachable_endpoint_is_an_error(tmp_path):
    with DuckDuckGoFixture() as closed:
        overrides = closed.settings_overrides()
    ctx = ToolContext(
        Settings(home=tmp_path, **overrides), AsyncSqliteStore(SqliteStore.open_home(tmp_path))
    )
    result = await web_search({"query": "anything"}, ctx)
    assert result["error"].startswith("web search failed: could not connect")


async def longest_stall(work: Awaitable[dict[str, Any]]) -> tuple[dict[str, Any], float]:
    """The result of ``work`` and the longest the event loop went without running a tick."""
    stalls = [0.0]
    done = asyncio.Event()

    async def tick() -> None:
        while not done.is_set():
            before = time.perf_counter()
            await asyncio.sleep(0.005)
            stalls.append(time.perf_counter() - before)

    ticker = asyncio.create_task(tick())
    try:
        result = await work
    finally:
        done.set()
        await ticker
    return result, max(stalls)


async def test_a_huge_page_is_cut_off_at_the_cap(tmp_path, ddg):
    started = time.perf_counter()
    result, stall = await longest_stall(web_search({"query": "hugepage"}, make_ctx(tmp_path, ddg)))
    assert result == {"error": TOO_LARGE}
    # Generous bounds for a loaded 2-core machine; unbounded, this read 300 MB and
    # stalled the loop for 7 s.
    assert time.perf_counter() - started < 10
    assert stall < 2


async def test_a_gzip_bomb_stops_at_the_cap_without_stalling_the_loop(tmp_path, ddg):
    assert len(ddg.gzip_bomb) < 400 * 1024  # 0.3 MB that decodes to 300 MB (made up front)
    work = web_search({"query": "gzipbomb"}, make_ctx(tmp_path, ddg))
    result, stall = await longest_stall(work)
    assert result == {"error": TOO_LARGE}
    assert stall < 2  # generous for a loaded machine; the bomb stalled the loop for 7 s


async def test_only_encodings_read_under_the_cap_are_asked_for(tmp_path, ddg):
    await web_search({"query": "USD to JPY"}, make_ctx(tmp_path, ddg))
    (request,) = ddg.requests
    assert request.headers["accept-encoding"] == "gzip, deflate"


async def test_a_big_result_page_is_parsed_off_the_event_loop(tmp_path, ddg, monkeypatch):
    # Which thread parsed, not how long the loop paused: a timing bound flakes on a
    # loaded 2-core machine, the thread does not.
    threads: list[int] = []

    def spy(page: str, limit: int) -> dict:
        threads.append(threading.get_ident())
        return parse_results(page, limit)

    monkeypatch.setattr(web_search_module, "parse_results", spy)
    result = await web_search({"query": "manyresults"}, make_ctx(tmp_path, ddg))
    assert [item["title"] for item in result["results"]] == [f"Result {n}" for n in range(5)]
    assert threads and threads[0] != threading.get_ident()


def test_unwrap_url_handles_redirects_ads_and_plain_links():
    assert (
        unwrap_url("//duckduckgo.com/l/?uddg=https%3A%2F%2Fexample.com%2Fa%3Fb%3D1&rut=x")
        == "https://example.com/a?b=1"
    )
    assert unwrap_url("https://duckduckgo.com/y.js?ad_domain=x.com&u3=abc") is None
    assert unwrap_url("https://example.org/page") == "https://example.org/page"
    assert unwrap_url("javascript:alert(1)") is None


def test_parse_results_skips_ads_marked_by_badge_and_dedups_trailing_slash():
    page = """
    <div id="links" class="results">
      <div class="result web-result"><a class="result__a" href="https://a.example/x/">A &amp; B</a>
        <a class="result__snippet">one</a></div>
      <div class="result web-result">
        <a class="result__a" href="https://www.a.example/x">A again</a></div>
      <div class="result"><a class="result__a" href="https://ad.example/">Ad</a>
        <span class="badge--ad">Ad</span></div>
      <div class="result web-result"><a class="result__a" href="https://c.example/">C</a></div>
    </div>"""
    parsed = parse_results(page, 5)
    assert [item["title"] for item in parsed["results"]] == ["A & B", "C"]


async def test_through_the_registry_validates_arguments(tmp_path, ddg):
    registry = ToolRegistry(TOOLS)
    ctx = make_ctx(tmp_path, ddg)

    ok = await registry.execute("web_search", '{"query": "weather Tokyo"}', ctx)
    assert ok["results"][0]["url"] == "https://weather.com/weather/today/l/Tokyo+Japan"
    text = registry.format_result("web_search", ok)
    assert text.startswith("🔧 TOOL RESULT — WEB_SEARCH")
    assert "The Weather Channel" in text

    too_many = await registry.execute("web_search", {"query": "x", "max_results": 9}, ctx)
    assert too_many["error"].startswith("invalid arguments for web_search")
    missing = await registry.execute("web_search", {}, ctx)
    assert "query" in missing["error"]
    assert len(ddg.requests) == 1


def test_command_text_becomes_the_query():
    (spec,) = TOOLS
    assert spec.command == "web_search"
    assert spec.role == "web_tool"
    assert spec.command_arguments(" USD to JPY ") == {"query": "USD to JPY"}
