"""Feedback that becomes evals (issue 25, item 7): a thumb rates the answer of the bubbles
it sits under, the ratings show again on the right bubbles, and rated answers export as
cases in the harness's own format that the harness loads and runs."""

from __future__ import annotations

import json
from pathlib import Path

from app.chat_view import history_messages
from app.cli import main
from app.feedback_view import feedback_values, rated_answer
from config.settings import Settings
from evals.cases import parse_suite
from evals.feedback import (
    export_feedback,
    key_words,
    named_tools,
    quoted,
    registry_tools,
    run_command,
    write_cases,
)
from evals.runner import arun_suites
from memory.sqlite import chats
from memory.sqlite.async_store import AsyncSqliteStore
from memory.sqlite.store import SqliteStore
from tests.support.policy import scripted_model

TOOLS = {"weather": "weather", "web_search": "web_search", "image_generate": "imagine"}
TOKYO = Settings(latitude=35.68, longitude=139.69, timezone="Asia/Tokyo")


async def two_turns(store: AsyncSqliteStore) -> list[int]:
    """A chat of two turns, the first with a weather step and an intermediate line: the
    ids of the two answers."""
    await store.add_message("s1", "user", "How's the weather?")
    await store.add_message("s1", "assistant", "Let me look.", meta={"intermediate": True})
    await store.add_message(
        "s1", "weather_tool", "🔧 sunny", tool_name="weather", meta={"arguments": {}}
    )
    first = await store.add_message("s1", "assistant", "It is 14.2 °C and overcast.")
    await store.add_message("s1", "user", "What is 2+2?")
    second = await store.add_message("s1", "assistant", "That makes 4.")
    return [first.id, second.id]


async def test_a_thumb_rates_the_answer_of_its_bubbles(async_store) -> None:
    first, second = await two_turns(async_store)
    messages = await async_store.messages("s1")
    bubbles = history_messages(messages)
    roles = [b.role for b in bubbles]
    assert roles == ["user", "assistant", "assistant", "assistant", "user", "assistant"]
    # the thumbs of a group sit under its last bubble (the LikeData's index)
    assert rated_answer(messages, 3).id == first  # type: ignore[union-attr]
    assert rated_answer(messages, [5, None]).id == second  # type: ignore[union-attr]
    assert rated_answer(messages, "x") is None
    await async_store.set_feedback(second, -1, "wrong")
    ratings = {f.message_id: f.rating for f in await async_store.feedback("s1")}
    assert feedback_values(messages, ratings) == [None, "Dislike"]  # one per bubble group


def test_a_comment_names_tools_to_use_and_not_to_use() -> None:
    assert named_tools("it should have checked the weather", TOOLS) == [("weather", False)]
    assert named_tools("No web search, just /imagine it", TOOLS) == [
        ("web_search", True),
        ("image_generate", False),
    ]
    assert named_tools("you didn't need web_search. the weather was enough", TOOLS) == [
        ("web_search", True),
        ("weather", False),
    ]
    assert named_tools("nice answer", TOOLS) == []
    assert quoted('say "14.2" and “overcast”') == ["14.2", "overcast"]


def test_key_words_are_numbers_and_names_not_in_the_question() -> None:
    assert key_words(
        "Paris is the capital of France, 2.1 million live there.", "Capital of France?"
    ) == ["2.1"]
    assert key_words("It is 4. Ask Budi.", "What is 2+2?") == ["4", "Budi"]
    assert key_words("The capital is Paris, on the Seine.", "capital?") == ["Paris", "Seine"]


async def test_rated_answers_become_cases_the_harness_loads_and_runs(
    async_store, tmp_path: Path
) -> None:
    first, second = await two_turns(async_store)
    await async_store.set_feedback(first, 1, 'good, it said "14.2"')
    await async_store.set_feedback(second, 1)
    await async_store.add_message("s1", "user", "Draw me a cat")
    third = (await async_store.add_message("s1", "assistant", "Here is a cat.")).id
    await async_store.set_feedback(third, -1, "it should have used /imagine, not web search")
    await async_store.add_message("s1", "user", "hmm")
    vague = (await async_store.add_message("s1", "assistant", "Mm.")).id
    await async_store.set_feedback(vague, -1, "meh")
    exported = await export_feedback(async_store, TOKYO, registry_tools())
    cases = {case["id"]: case for case in exported.cases}
    assert list(cases) == [f"fb-{first}", f"fb-{second}", f"fb-{third}"]
    assert exported.skipped == [
        f"answer {vague} (👎): its comment names no tool and quotes no fact, so there is "
        "nothing to check"
    ]
    weather, sums, drawing = cases.values()
    assert weather["message"] == "How's the weather?"
    assert weather["expect"] == {"tools": [{"name": "weather"}], "answer_contains": ["14.2"]}
    assert weather["location"] == {"lat": 35.68, "lon": 139.69}
    assert weather["timezone"] == "Asia/Tokyo"
    assert sums["expect"] == {
        "tools": [],
        "forbidden_tools": ["*"],
        "answer_contains": ["4"],
    }
    assert [m["text"] for m in sums["history"]] == [
        "How's the weather?",
        "It is 14.2 °C and overcast.",
    ]
    assert drawing["expect"] == {
        "tools": [{"name": "image_generate"}],
        "forbidden_tools": ["web_search"],
    }

    path = tmp_path / "feedback.jsonl"
    assert write_cases(exported.cases, path) == 3
    loaded = parse_suite(path, registry_tools())
    assert [case.id for case in loaded] == list(cases)
    assert run_command(path) == f"companion eval --suite feedback --datasets {tmp_path}"
    del cases[f"fb-{third}"]  # the scripted companion cannot draw (no image backend here)
    write_cases(cases.values(), path)
    run = await arun_suites(
        ["feedback"], model=scripted_model("native"), folder=tmp_path, progress=False
    )
    assert {r.case.id: r.passed for r in run.runs} == {case_id: True for case_id in cases}, [
        r.reasons for r in run.runs
    ]


def test_the_cli_writes_the_cases(home: Path, tmp_path: Path, capsys) -> None:
    store = SqliteStore.open_home(home)
    try:
        asked = store.add_message("s1", "user", "What is 2+2?")
        answer = store.add_message("s1", "assistant", "Four.")
        chats.set_feedback(store, answer.id, 1, "")
    finally:
        store.close()
    out = tmp_path / "mine.jsonl"
    code = main(["eval", "export-feedback", "--home", str(home), "--out", str(out)])
    assert code == 0
    said = capsys.readouterr().out
    assert f"1 case(s) from rated answers written to {out}" in said
    assert f"companion eval --suite mine --datasets {tmp_path}" in said
    (case,) = map(json.loads, out.read_text().splitlines())
    assert case["id"] == f"fb-{answer.id}" and case["message"] == asked.content
    assert case["expect"] == {"tools": [], "forbidden_tools": ["*"]}
