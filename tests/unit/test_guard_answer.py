"""After a guard fires the user reads a real answer: one more call with tools withheld and
the command protocol off; a command in its reply is dropped and the rest kept; a reply
left empty says what this turn's tools found. Both tool modes, English and Indonesian."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage

from app.graph_view import describe
from graph.runner import run_turn
from nodes.call_model import found_so_far
from nodes.execute_tool import GIST_CHARS, gist
from prompts.templates import EMPTY_ANSWER, FOUND_SO_FAR, language_of
from tests.support.chat_model import tool_call
from tools import web_search
from tools.registry import ToolRegistry

CITIES = {
    "en": ["Tokyo", "London", "Paris", "Jakarta"],
    "id": ["Tokyo", "Bandung", "Medan", "Bali"],
}
ASKED = {"en": "Weather in four cities?", "id": "Cuaca di empat kota gimana?"}
KEPT = {"en": "Tokyo is mild today.", "id": "Tokyo hari ini sejuk."}


def step(mode: str, city: str, number: int) -> str | AIMessage:
    """One tool call the way the model writes it in ``mode``."""
    if mode == "commands":
        return f"/echo {city}"
    return tool_call("echo", {"text": city}, f"c{number}")


def insisting(mode: str, language: str, extra: str = "") -> list[Any]:
    """Three loops, then a fourth call after the cap (with ``extra`` text after it)."""
    cities = CITIES[language]
    script: list[Any] = [step(mode, city, n) for n, city in enumerate(cities[:3])]
    last = step(mode, cities[3], 3)
    if extra and isinstance(last, str):
        last = f"{last}\n{extra}"
    elif extra:
        assert isinstance(last, AIMessage)
        last = AIMessage(content=extra, tool_calls=last.tool_calls)
    return [*script, last]


def stored_answer(ctx: Any, result: Any) -> str:
    stored = ctx.store.blocking.messages("s1")
    answer = next(m for m in stored if m.id == result.answer_message_id)
    assert answer.role == "assistant" and not answer.meta.get("error")
    assert stored[-1].id == answer.id
    return answer.content


def the_last_call_had_no_tools(ctx: Any) -> None:
    last = ctx.chat_model.calls[-1]
    system = last["messages"][0].content
    assert last["tools"] == []  # schemas withheld
    assert "/echo" not in system and "reply with only the command" not in system
    assert "Do not call any tool" in system


@pytest.mark.parametrize("language", ["en", "id"])
@pytest.mark.parametrize("mode", ["native", "commands"])
async def test_a_command_after_the_cap_becomes_what_was_found(make_context, mode, language):
    ctx = make_context(insisting(mode, language), tool_mode=mode)
    result = await run_turn(ctx, "s1", ASKED[language])
    cities = CITIES[language]
    assert result.tool_names == ["echo"] * 3 and len(ctx.chat_model.calls) == 4
    the_last_call_had_no_tools(ctx)
    answer = stored_answer(ctx, result)
    assert answer == result.answer != EMPTY_ANSWER
    assert "lost my train of thought" not in answer and "/echo" not in answer
    assert answer.startswith(FOUND_SO_FAR[language].split("{")[0])  # the person's language
    for city in cities[:3]:
        assert city in answer  # built from the results the loops found
    assert cities[3] not in answer  # the call after the cap never ran
    last = next(e for e in reversed(result.trace) if e["kind"] == "model")
    assert describe(last).startswith("model scripted-chat (chat); dropped echo(")


@pytest.mark.parametrize("language", ["en", "id"])
@pytest.mark.parametrize("mode", ["native", "commands"])
async def test_text_beside_a_command_after_the_cap_is_the_answer(make_context, mode, language):
    ctx = make_context(insisting(mode, language, KEPT[language]), tool_mode=mode)
    result = await run_turn(ctx, "s1", ASKED[language])
    assert result.tool_names == ["echo"] * 3
    assert stored_answer(ctx, result) == result.answer == KEPT[language]


@pytest.mark.parametrize("mode", ["native", "commands"])
async def test_a_command_after_a_repeat_becomes_what_was_found(make_context, mode):
    script = [step(mode, "Tokyo", 0), step(mode, "tokyo!", 1), step(mode, "Tokyo", 2)]
    ctx = make_context(script, tool_mode=mode)
    result = await run_turn(ctx, "s1", "Weather in Tokyo?")
    assert result.tool_names == ["echo"]
    guards = [e["name"] for e in result.trace if e["kind"] == "guard"]
    assert guards == ["repeat"]
    the_last_call_had_no_tools(ctx)
    answer = stored_answer(ctx, result)
    assert answer != EMPTY_ANSWER and "echo: Tokyo" in answer and "tokyo!" not in answer


async def test_when_every_call_failed_the_answer_says_why(make_context):
    script = [tool_call("boom", {"text": f"n{i}"}, f"c{i}") for i in range(4)]
    ctx = make_context(script)
    result = await run_turn(ctx, "s1", "go")
    answer = stored_answer(ctx, result)
    assert answer != EMPTY_ANSWER and answer.startswith("I stopped looking things up")
    assert "kaboom" in answer


def test_found_so_far_quotes_the_first_different_results_that_worked() -> None:
    def ran(name: str, ok: bool, gist: str) -> Any:
        return {"name": name, "signature": name + gist, "ok": ok, "message_id": 1, "gist": gist}

    executed = [
        ran("web_search", False, "rate limited"),
        ran("weather", True, "Tokyo: 14.2 °C, overcast."),
        ran("weather", True, "Tokyo: 14.2 °C, overcast."),
        ran("weather", True, "London: 8.3 °C"),
        ran("weather", True, "Paris: 10.6 °C"),
        ran("weather", True, "Jakarta: 31.4 °C"),
    ]
    assert found_so_far(executed) == (
        "I stopped looking things up before writing an answer. What I found: "
        "Tokyo: 14.2 °C, overcast; London: 8.3 °C; Paris: 10.6 °C."
    )
    assert found_so_far(executed[:1]) == (
        "I stopped looking things up before finding an answer: rate limited."
    )
    assert "no tool ran" in found_so_far([])


def test_a_gist_is_one_readable_line_of_the_tools_own_formatting(make_context) -> None:
    ctx = make_context([], registry=ToolRegistry(web_search.TOOLS))
    found = {
        "query": "usd jpy",
        "results": [
            {
                "title": "USD to JPY - Xe",
                "snippet": "1 USD = 154.32 JPY.",
                "url": "https://x.example/a",
            },
            {"title": "Wise", "snippet": "x" * 500, "url": "https://w.example/b"},
        ],
    }
    line = gist(ctx, "web_search", found)
    assert line.startswith("USD to JPY - Xe — 1 USD = 154.32 JPY. — Wise — xxx")
    assert "Results for" not in line and "https://" not in line and "1." not in line[:3]
    assert len(line) == GIST_CHARS and line.endswith("…")
    assert gist(ctx, "web_search", {"error": "rate\nlimited"}) == "rate — limited"


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("Cuaca di empat kota gimana?", "id"),
        ("aku masak apa kamis lalu?", "id"),
        ("tolong carikan harga tiket ke Bali", "id"),
        ("Weather in four cities?", "en"),
        ("What did I cook in Bali last Thursday?", "en"),
        ("", "en"),
    ],
)
def test_the_answer_after_a_guard_speaks_the_persons_language(text: str, language: str) -> None:
    assert language_of(text) == language
    assert found_so_far([], text).startswith(
        {"en": "I stopped looking", "id": "Aku berhenti mencari"}[language]
    )
