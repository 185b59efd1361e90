"""bench.first_token with a few turns against a 50 ms server: every path streams the whole
answer, its first token comes after the server's delay, and the printed figures are sane."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bench.first_token import ANSWER, COMPANION, LANGCHAIN, RAW, main, measure
from tests.support.bench_tables import numbers, run_main
from tests.support.fake_openai import FakeOpenAIServer

DELAY = 0.05
TINY = ["--turns", "3", "--warmup", "1", "--delay", str(DELAY), "--profile", "5"]


def test_every_path_streams_the_answer_after_the_delay(tmp_path: Path) -> None:
    with FakeOpenAIServer(latency=DELAY, default=ANSWER) as server:
        samples = asyncio.run(
            measure(server, tmp_path / "home", turns=3, warmup=1, tool_mode="native")
        )
        chats = [r for r in server.requests if "messages" in r]
    assert set(samples) == {RAW, LANGCHAIN, COMPANION}
    for name, taken in samples.items():
        assert len(taken) == 3, name
        for sample in taken:
            assert sample.text == ANSWER, name
            assert DELAY * 1000 < sample.first <= sample.whole, name
            assert 0 < sample.to_request < sample.first, name
            assert sample.after_chunk > 0, name
    # the direct clients replay Companion's request: its system prompt and the question
    assert len({str(chat["messages"]) for chat in chats}) > 1
    assert all(chat["messages"][-1]["content"].endswith("the hills?") for chat in chats)


def test_the_table_and_profile_print(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    table = run_main(main, TINY, monkeypatch, capsys)
    for name in (RAW, LANGCHAIN, COMPANION):
        first, first_p90, whole, whole_p90, to_request, after_chunk = (
            numbers(cell)[0] for cell in table[name]
        )
        assert DELAY * 1000 < first <= first_p90, name
        assert first <= whole <= whole_p90, name
        assert 0 < to_request < first and after_chunk > 0, name
    for baseline in (LANGCHAIN, RAW):
        added = table[f"added by companion vs {baseline}"]
        assert [len(numbers(cell)) for cell in added] == [1, 0, 1, 0, 1, 1]
    assert table["waiting in epoll"]
    assert any(name.startswith("nodes/call_model.py") for name in table)
