"""The eval harness: its regression run (the scripted keyword policy through the real
graph, tools and fixtures, in both tool modes — a test of the plumbing, not a score); each
evaluator check can fail; datasets and paraphrases are validated; the runner stages forced
replies for any model; ``companion eval`` evaluates the configured model; reports compute
pass rates and pass^k."""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from config.settings import LOCAL_MODEL_NAME, ConfigError
from evals import evaluators as ev
from evals.cases import Case, CaseError, ScriptStep, load_cases, suite_names
from evals.judge import ChatJudge
from evals.report import markdown, report_data, suite_stats, summary_lines, write_reports
from evals.results import CaseRun, EvalRun
from evals.runner import model_under_test, run_from_cli, run_suites
from evals.staged import PromptLog, StagedChatModel, command_line
from memory.sqlite.store import SqliteStore
from prompts.templates import persona_text
from providers import LOCAL_MAX_TOKENS
from tests.support.chat_model import ScriptedChatModel, tool_call
from tests.support.fake_openai import FakeOpenAIServer, Step
from tests.support.policy import read_view, scripted_model
from tools.registry import default_registry

NOW = "2026-11-25T09:30:00Z"


def make_case(**fields: Any) -> Case:
    """A valid case with the given fields changed."""
    data: dict[str, Any] = {
        "id": "t",
        "language": "en",
        "now": NOW,
        "message": "How's the weather?",
        "expect": {},
    }
    data.update(fields)
    return Case.model_validate({**data, "suite": "unit"})


def judge() -> ChatJudge:
    return ChatJudge(ScriptedChatModel(script=["unused"]), "unit-judge")


def call(name: str, ok: bool = True, **args: Any) -> ev.ObservedCall:
    return ev.ObservedCall(name, args, ok, f"🔧 TOOL RESULT — {name.upper()}")


# --- the harness's regression run ---------------------------------------------------------

# Cases that fail for a product gap being fixed under its issue. The regression test fails
# when one of them starts passing, so its entry goes with the fix.
KNOWN_GAPS: dict[str, str] = {}


@pytest.fixture(scope="module")
def scripted_runs() -> dict[str, EvalRun]:
    """Every suite's original cases, once per tool mode (module-scoped: ~8 s each)."""
    return {
        mode: run_suites(None, model=scripted_model(mode), paraphrases=False, progress=False)
        for mode in ("native", "commands")
    }


@pytest.mark.parametrize("mode", ["native", "commands"])
def test_the_harness_regression_run_passes(scripted_runs, mode) -> None:
    """The scripted keyword policy passes every original case through the real graph.

    A regression test of the harness and the graph (tool routing, guards, memory, images,
    prompts), not a measure of any model. The policy was written against the original
    cases' own sentences, so it runs on those only: paraphrases exist to catch exactly
    this kind of keyword matching, and the policy is never tuned to them.
    """
    run = scripted_runs[mode]
    failures = {r.case.id: r.reasons for r in run.runs if not r.passed}
    assert {k: v for k, v in failures.items() if k not in KNOWN_GAPS} == {}
    assert set(KNOWN_GAPS) - set(failures) == set(), "fixed: remove these from KNOWN_GAPS"
    for case_id in KNOWN_GAPS:
        assert all(reason.startswith("prompt_identity:") for reason in failures[case_id])
    assert run.tool_mode == mode
    assert run.model == "scripted"
    assert len(run.runs) >= 60
    assert all(r.case.paraphrase_of is None for r in run.runs)
    assert {c.language for c in run.cases} == {"en", "id"}


GENERATED_NAME = re.compile(r"generated-[0-9a-f]{32}")  # a drawn image's file: new each time


def same_calls(calls: list[ev.ObservedCall]) -> list[ev.ObservedCall]:
    """The calls with each generated image's file name (random) left out."""
    return [
        dataclasses.replace(c, result=GENERATED_NAME.sub("generated-…", c.result)) for c in calls
    ]


def test_scripted_runs_are_deterministic(scripted_runs) -> None:
    again = run_suites(
        ["acceptance", "guards"], model=scripted_model("native"), paraphrases=False, progress=False
    )
    first = {r.case.id: r for r in scripted_runs["native"].runs}
    for second in again.runs:
        before = first[second.case.id].observation
        assert second.observation.answer == before.answer
        assert same_calls(second.observation.calls) == same_calls(before.calls)
        assert second.observation.loops == before.loops


def test_tools_ran_through_the_real_graph_and_fixtures(scripted_runs) -> None:
    runs = {r.case.id: r.observation for r in scripted_runs["commands"].runs}
    assert runs["acc-usd-jpy-en"].calls[0].result.startswith("🔧 TOOL RESULT — WEB_SEARCH")
    assert "154.32 JPY" in runs["acc-usd-jpy-en"].calls[0].result
    # the guards did their work: the cap stopped the fourth search, the repeat never ran
    assert [c.name for c in runs["grd-loop-cap-persist-en"].calls] == ["web_search"] * 3
    assert runs["grd-loop-cap-persist-en"].loops == 3
    assert len(runs["grd-dup-weather-en"].calls) == 1
    # the vision model answered after the image tools
    roles = [s.role for s in runs["acc-send-pap-en"].steps if s.kind == "model"]
    assert roles == ["chat", "vision"]
    # the refused statement failed and the table is intact
    assert runs["ref-forced-drop-en"].calls[0].ok is False
    assert runs["ref-forced-drop-en"].db_rows == [[[2]], [[1]]]


def test_all_suites_and_acceptance_scenarios_are_there() -> None:
    assert suite_names() == [
        "acceptance",
        "guards",
        "images",
        "irrelevance",
        "memory",
        "multistep",
        "persona",
        "refusal",
    ]
    cases = {c.id: c for c in load_cases(known_tools=default_registry().names)}
    messages = {c.message for c in cases.values()}
    for scenario in (
        "What is 2+2?",
        "USD to JPY rate",
        "How's the weather?",
        "What did I cook last Thursday?",
        "What color was the cat in that photo?",
        "Send pap",
    ):
        assert scenario in messages
    assert cases["acc-weather-unset-en"].location is None
    assert cases["acc-weather-set-en"].location is not None


def test_every_acceptance_case_has_two_paraphrases_in_its_language() -> None:
    cases = load_cases(["acceptance"])
    originals = [c for c in cases if c.paraphrase_of is None]
    assert {c.language for c in originals} == {"en", "id"}
    for original in originals:
        variants = [c for c in cases if c.paraphrase_of == original.id]
        assert len(variants) >= 2, original.id
        for variant in variants:
            assert variant.language == original.language
            assert variant.expect == original.expect and variant.history == original.history
            assert variant.message.casefold() != original.message.casefold()
    # each scenario in both languages: the English-only ones have Indonesian originals
    assert {"acc-arith-id", "acc-cook-kamis-id"} <= {c.id for c in originals}


def test_companion_memory_and_persona_cases_are_there_in_both_languages() -> None:
    cases = {c.id: c for c in load_cases(known_tools=default_registry().names)}

    def tools(case_id: str) -> list[str]:
        return [t.name for t in cases[case_id].expect.tools]

    for language in ("en", "id"):
        # recall from another chat, asked in a new one, with and without a time cue
        recall = [
            c
            for c in cases.values()
            if c.language == language and c.sessions and tools(c.id) == ["memory_search"]
        ]
        assert {c.id for c in recall} >= {
            f"mem-xs-{'cook-thursday' if language == 'en' else 'masak-kamis'}-{language}",
            f"mem-xs-ramen-{language}",
        }
        for case in recall:
            assert all(m.session for m in case.history)  # nothing in the chat asked from
        styled = [c for c in cases.values() if c.language == language and c.style_note]
        assert styled
    assert tools("mem-pref-vegetarian-en") == ["create_memory"]
    assert tools("mem-pref-alergi-id") == ["create_memory"]
    category = cases["mem-pref-alergi-id"].expect.tools[0].args["category"]
    assert category.holds(True, "identity") and not category.holds(True, "signals")
    for case_id in ("mem-correct-drink-en", "mem-correct-kota-id"):
        assert tools(case_id) == ["update_memory"]
        assert "create_memory" in cases[case_id].expect.forbidden_tools
    assert tools("mem-forget-that-en") == tools("mem-forget-that-id") == ["delete_memory"]
    rainy = cases["irr-rainy-mood-en"].expect
    assert rainy.optional_tools == ["create_memory"]
    assert {"web_search", "weather"} <= set(rainy.forbidden_tools)
    assert "*" not in rainy.forbidden_tools


# --- datasets are validated ------------------------------------------------------------


def write_suite(folder: Path, name: str, *cases: dict[str, Any]) -> None:
    folder.mkdir(exist_ok=True)
    lines = [json.dumps(c) for c in cases]
    (folder / f"{name}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")


GOOD = {"id": "ok", "language": "en", "now": NOW, "message": "hi", "expect": {}}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"colour": "red"}, "colour"),
        ({"now": "2026-11-25T09:30:00"}, "now"),
        ({"language": "fr"}, "language"),
        ({"expect": {"tools": [{"name": "teleport"}]}}, "unknown tool(s) teleport"),
        ({"script": [{"say": "x", "tool": "weather"}]}, "either `say` or `tool`"),
        ({"expect": {"tools": [{"name": "weather", "args": {"location": {}}}]}}, "exactly one"),
        (
            {"history": [{"at": "2026-11-26T09:00:00Z", "role": "user", "text": "later"}]},
            "later than `now`",
        ),
    ],
)
def test_invalid_cases_are_refused_with_file_and_line(tmp_path, change, message) -> None:
    write_suite(tmp_path, "bad", GOOD, {**GOOD, "id": "second", **change})
    with pytest.raises(CaseError) as error:
        load_cases(folder=tmp_path, known_tools=default_registry().names)
    assert "bad.jsonl:2" in str(error.value)
    assert message in str(error.value)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ({"id": "p", "paraphrase_of": "nothing", "message": "hey"}, "names no earlier original"),
        ({"id": "p", "paraphrase_of": "ok", "message": "hey", "now": NOW}, "remove now"),
        ({"id": "p", "paraphrase_of": "ok", "message": "hi"}, "in other words"),
    ],
)
def test_bad_paraphrases_are_refused(tmp_path, line, message) -> None:
    write_suite(tmp_path, "bad", GOOD, line)
    with pytest.raises(CaseError, match=message) as error:
        load_cases(folder=tmp_path)
    assert "bad.jsonl:2" in str(error.value)


def test_a_paraphrase_takes_the_world_and_expectations_of_its_original(tmp_path) -> None:
    original = {
        **GOOD,
        "description": "about the original",
        "location": {"lat": 35.68, "lon": 139.69},
        "expect": {"tools": [{"name": "weather"}], "answer_contains": ["14.2"]},
    }
    write_suite(tmp_path, "s", original, {"id": "p", "paraphrase_of": "ok", "message": "Outside?"})
    first, second = load_cases(folder=tmp_path)
    assert second.paraphrase_of == "ok" and second.message == "Outside?"
    assert second.expect == first.expect and second.location == first.location
    assert second.description == ""  # the original's description is about its own wording


def test_history_in_other_chats_names_declared_sessions(tmp_path) -> None:
    at = "2026-11-19T19:05:00Z"
    elsewhere = {"at": at, "role": "user", "text": "nasi goreng", "session": "dinner"}
    good = {**GOOD, "sessions": {"dinner": "Thursday dinner"}, "history": [elsewhere]}
    write_suite(tmp_path, "s", good)
    (case,) = load_cases(folder=tmp_path)
    assert case.history[0].session == "dinner"
    write_suite(tmp_path, "s", {**good, "sessions": {}})
    with pytest.raises(CaseError, match="undeclared session"):
        load_cases(folder=tmp_path)
    write_suite(tmp_path, "s", {**good, "sessions": {"Bad Key": "x"}})
    with pytest.raises(CaseError, match="session key"):
        load_cases(folder=tmp_path)


def test_duplicate_ids_and_unknown_suites_are_refused(tmp_path) -> None:
    write_suite(tmp_path, "one", GOOD)
    write_suite(tmp_path, "two", GOOD)
    with pytest.raises(CaseError, match="duplicate case id 'ok'"):
        load_cases(folder=tmp_path)
    with pytest.raises(CaseError, match="unknown suite"):
        load_cases(["three"], folder=tmp_path)


# --- each check can fail ---------------------------------------------------------------


def test_tool_correctness_uses_deepeval_and_fails_on_missing_or_unexpected_tools() -> None:
    case = make_case(expect={"tools": [{"name": "memory_search"}, {"name": "weather"}]})
    good = ev.Observation("ok", [call("memory_search"), call("weather")])
    assert ev.tool_correctness(case, good, judge()).passed
    wrong_order = ev.Observation("ok", [call("weather"), call("memory_search")])
    assert not ev.tool_correctness(case, wrong_order, judge()).passed
    missing = ev.tool_correctness(case, ev.Observation("ok", [call("weather")]), judge())
    assert not missing.passed and "score 0.50" in missing.detail
    no_tool = make_case(expect={"tools": []})
    assert ev.tool_correctness(no_tool, ev.Observation("4"), judge()).passed
    assert not ev.tool_correctness(
        no_tool, ev.Observation("4", [call("web_search")]), judge()
    ).passed


def test_argument_expectations() -> None:
    case = make_case(
        expect={
            "tools": [
                {"name": "weather", "args": {"location": {"absent": True}}},
                {"name": "web_search", "args": {"query": {"any_of": ["jpy", "yen"]}}},
                {"name": "memory_sql", "args": {"sql": {"regex": "(?i)^select"}}},
            ]
        }
    )
    good = [
        call("weather"),
        call("web_search", query="USD JPY"),
        call("memory_sql", sql="select 1"),
    ]
    assert ev.arguments(case, ev.Observation("", good)).passed
    bad = [
        call("weather", location="Tokyo"),
        call("web_search", query="dollar"),
        call("memory_sql", sql="UPDATE x"),
    ]
    result = ev.arguments(case, ev.Observation("", bad))
    assert not result.passed
    assert result.detail.count(" — got ") == 3
    assert not ev.arguments(case, ev.Observation("", [])).passed


def test_forbidden_tools_loop_count_and_duplicates() -> None:
    case = make_case(expect={"forbidden_tools": ["web_search"], "max_loops": 3})
    assert not ev.forbidden_tools(case, ev.Observation("", [call("web_search")])).passed
    assert ev.forbidden_tools(case, ev.Observation("", [call("weather")])).passed
    anything = make_case(expect={"forbidden_tools": ["*"]})
    assert not ev.forbidden_tools(anything, ev.Observation("", [call("weather")])).passed
    assert not ev.loop_count(case, ev.Observation("", loops=4)).passed
    assert ev.loop_count(case, ev.Observation("", loops=3)).passed
    twice = [call("weather", location="Tokyo"), call("weather", location=" tokyo! ")]
    assert not ev.no_duplicates(ev.Observation("", twice)).passed
    assert ev.no_duplicates(ev.Observation("", twice[:1])).passed


def test_answer_checks() -> None:
    case = make_case(
        expect={"answer_contains": ["14.2", ["city", "kota"]], "answer_not_contains": ["http"]}
    )
    assert ev.answer_contains(case, ev.Observation("14.2 °C — which CITY?")).passed
    assert not ev.answer_contains(case, ev.Observation("14.2 °C")).passed
    assert not ev.answer_not_contains(case, ev.Observation("see HTTP://x")).passed
    assert not ev.answered(ev.Observation("  ")).passed
    assert not ev.answered(ev.Observation("Sorry", error="HTTP 429")).passed
    assert ev.answered(ev.Observation("Four.")).passed


@pytest.mark.parametrize(
    "answer",
    [
        "I used the web_search tool for that.",
        "According to my tools, it is sunny.",
        "🔧 TOOL RESULT — WEATHER: sunny",
        "/weather Tokyo",
        "Based on the search results, 154 yen.",
    ],
)
def test_tool_mechanics_in_the_answer_fail(answer) -> None:
    assert not ev.no_tool_mechanics(ev.Observation(answer)).passed


def test_plain_answers_do_not_count_as_mechanics() -> None:
    assert ev.no_tool_mechanics(ev.Observation("It's 14.2 °C in Tokyo — bring a jacket!")).passed


def test_vision_model_must_answer_after_an_image_tool() -> None:
    generated = ev.Step("tool", "image_generate")
    good = [ev.Step("model", "chat-m", "chat"), generated, ev.Step("model", "vision-m", "vision")]
    assert ev.vision_after_image(ev.Observation("", steps=good)) == ev.CheckResult(
        "vision_after_image", True, ""
    )
    bad = [*good[:2], ev.Step("model", "chat-m", "chat")]
    result = ev.vision_after_image(ev.Observation("", steps=bad))
    assert result is not None and not result.passed
    failed_tool = [good[0], ev.Step("tool", "image_generate", ok=False), good[0]]
    assert ev.vision_after_image(ev.Observation("", steps=failed_tool)) is None


def test_database_expectations() -> None:
    case = make_case(expect={"db": [{"sql": "SELECT COUNT(*) FROM memories", "rows": [[2]]}]})
    assert ev.database(case, ev.Observation("", db_rows=[[[2]]])).passed  # type: ignore[union-attr]
    result = ev.database(case, ev.Observation("", db_rows=[[[0]]]))
    assert result is not None and not result.passed


def test_optional_tools_count_neither_for_nor_against() -> None:
    case = make_case(
        expect={"tools": [], "optional_tools": ["create_memory"], "forbidden_tools": ["weather"]}
    )
    saved = ev.Observation("Cosy!", [call("create_memory", key="weather", value="rainy days")])
    assert ev.tool_correctness(case, saved, judge()).passed
    assert ev.tool_correctness(case, ev.Observation("Cosy!"), judge()).passed
    assert ev.forbidden_tools(case, saved).passed
    looked = ev.Observation("Cosy!", [call("web_search", query="rain")])
    assert not ev.tool_correctness(case, looked, judge()).passed


def test_prompt_identity_needs_the_identity_block_and_the_style_note_in_every_call() -> None:
    identity = persona_text("yuzuki")
    note = "Answer in three bullet points."
    case = make_case(style_note=note)
    both = f"{identity}\n\nFor this reply: {note}\n\nCurrent date…"
    good = ev.Observation("ok", prompts=[("chat", both), ("vision", both)], identity=identity)
    assert ev.prompt_identity(case, good) == ev.CheckResult("prompt_identity", True, "")
    replaced = ev.Observation("ok", prompts=[("chat", both), ("chat", note)], identity=identity)
    result = ev.prompt_identity(case, replaced)
    assert result is not None and not result.passed
    assert result.detail == "call 2 (chat): no identity block"
    dropped = ev.Observation("ok", prompts=[("chat", identity)], identity=identity)
    result = ev.prompt_identity(case, dropped)
    assert result is not None and result.detail == "call 1 (chat): no style note"
    assert ev.prompt_identity(make_case(), dropped) == ev.CheckResult("prompt_identity", True, "")
    assert ev.prompt_identity(case, ev.Observation("crashed")) is None


def test_judged_checks_run_geval_on_our_judge_and_can_fail() -> None:
    def verdict(score: int) -> ChatJudge:
        def policy(messages: list[Any], kwargs: dict[str, Any]) -> str:
            if "Evaluation Steps:" in messages[-1].content:
                return json.dumps({"score": score, "reason": f"scored {score}"})
            return json.dumps({"steps": ["Is the answer grounded?", "Is it natural?"]})

        return ChatJudge(ScriptedChatModel(script=policy), "unit-judge")

    case = make_case(message="USD to JPY?")
    obs = ev.Observation("About 154 yen.", [call("web_search", query="usd jpy")])
    good = ev.judged(case, obs, verdict(9))
    assert [c.name for c in good] == [
        "judge: answers naturally from the tool result",
        "judge: stays in persona",
    ]
    assert all(c.passed for c in good)
    assert not any(c.passed for c in ev.judged(case, obs, verdict(2)))
    broken = ChatJudge(ScriptedChatModel(script=lambda m, k: "no json here"), "broken")
    assert not any(c.passed for c in ev.judged(case, obs, broken))
    styled = make_case(message="Ideas for Sunday?", style_note="Answer in bullet points.")
    names = [c.name for c in ev.judged(styled, ev.Observation("- tea\n- a book"), verdict(9))]
    assert names == ["judge: stays in persona", "judge: follows the style note"]


# --- the scripted policy reads what a model reads ---------------------------------------


def test_policy_reads_offered_tools_results_and_tools_off() -> None:
    system = SystemMessage("…\nTools you can use this turn: weather, web_search.\n…")
    messages = [
        system,
        HumanMessage("What's the weather in Tokyo?"),
        AIMessage("", tool_calls=[{"name": "weather", "args": {}, "id": "c1"}]),
        ToolMessage(
            "🔧 TOOL RESULT — WEATHER\n\nTokyo: 14.2 °C, overcast\n\n---", tool_call_id="c1"
        ),
    ]
    view = read_view(messages, {})
    assert view.offered == ["weather", "web_search"]
    assert [r.name for r in view.results] == ["weather"]
    assert not view.tools_off
    off = read_view([SystemMessage("Do not call any tool."), HumanMessage("hi")], {})
    assert off.tools_off and off.offered == []


# --- forced replies, for any model -----------------------------------------------------


def test_forced_replies_come_first_in_the_configured_mode_then_the_model_answers() -> None:
    forced = [ScriptStep(tool="web_search", args={"query": "yen"}), ScriptStep(say="hmm")]
    real = ScriptedChatModel(script=["the real model speaks"])
    log = PromptLog()
    native = StagedChatModel(model=real, forced=forced, tool_mode="native", log=log)
    first = native.invoke([SystemMessage("I am Yuzuki."), HumanMessage("hi")])
    assert first.tool_calls[0]["name"] == "web_search"
    assert first.tool_calls[0]["args"] == {"query": "yen"}
    assert native.invoke([HumanMessage("hi")]).content == "hmm"
    handed = native.invoke([SystemMessage("Still Yuzuki."), HumanMessage("hi")])
    assert handed.content == "the real model speaks"
    assert len(real.calls) == 1  # the model under test saw only the call after the forced ones
    assert log.systems("chat") == ["I am Yuzuki.", "", "Still Yuzuki."]
    commands = StagedChatModel(model=real, forced=forced[:1], tool_mode="commands")
    assert commands.invoke([HumanMessage("hi")]).content == "/web_search yen"


async def test_forced_tool_calls_stream_and_offered_tools_reach_the_model() -> None:
    real = ScriptedChatModel(script=[tool_call("weather", {"location": "Tokyo"})])
    staged = StagedChatModel(model=real, forced=[ScriptStep(tool="weather", args={})])
    bound = staged.bind_tools([default_registry().get("weather").schema()])  # type: ignore[union-attr]

    async def streamed() -> Any:
        chunks = [chunk async for chunk in bound.astream([HumanMessage("weather?")])]
        return sum(chunks[1:], chunks[0])

    forced = await streamed()
    assert forced.tool_calls == [
        {"name": "weather", "args": {}, "id": "forced_1", "type": "tool_call"}
    ]
    assert real.calls == []
    answered = await streamed()  # the wrapped model's stream passes through
    assert answered.tool_calls[0]["args"] == {"location": "Tokyo"}
    assert [t["function"]["name"] for t in real.calls[0]["tools"]] == ["weather"]


def test_command_lines() -> None:
    assert command_line("memory_sql", {"sql": "SELECT 1"}) == "/memory_sql\nSELECT 1"
    assert command_line("image_generate", {"prompt": "a cat"}) == "/imagine a cat"
    assert command_line("weather", {}) == "/weather"
    assert command_line("delete_memory", {"key": "kopi"}) == '/delete_memory {"key": "kopi"}'


# --- reports and the CLI ----------------------------------------------------------------


def test_pass_rate_and_pass_k() -> None:
    one, two = make_case(id="one"), make_case(id="two")
    passed = [ev.CheckResult("x", True)]
    failed = [ev.CheckResult("x", False, "why")]
    run = EvalRun("scripted", "native", 2, False, datetime(2026, 11, 25, tzinfo=UTC), [one, two])
    run.runs = [
        CaseRun(one, 1, ev.Observation("a"), passed),
        CaseRun(two, 1, ev.Observation("b"), passed),
        CaseRun(one, 2, ev.Observation("a"), passed),
        CaseRun(two, 2, ev.Observation("b"), failed),
    ]
    stats = suite_stats(run)["unit"]
    assert stats["pass_rate"] == 0.75
    assert stats["pass_k"] == 0.5
    data = report_data(run)
    assert data["all_passed"] is False
    assert data["runs"][3]["reasons"] == ["x: why"]
    assert data["wording"] == {}  # no paraphrase ran


def test_originals_and_paraphrases_are_reported_side_by_side() -> None:
    original, reworded = make_case(id="one"), make_case(id="one-p1", paraphrase_of="one")
    run = EvalRun("m", "native", 1, False, datetime(2026, 11, 25, tzinfo=UTC), [original])
    run.runs = [
        CaseRun(original, 1, ev.Observation("a"), [ev.CheckResult("x", True)]),
        CaseRun(reworded, 1, ev.Observation("b"), [ev.CheckResult("x", False, "why")]),
    ]
    wording = report_data(run)["wording"]
    assert wording["original"]["pass_rate"] == 1.0 and wording["paraphrase"]["pass_rate"] == 0.0
    assert "| paraphrases | 1 | 0/1 | 0% |" in markdown(run)
    assert any(line.strip().startswith("paraphrases") for line in summary_lines(run))


def refuse_everything(request: dict[str, Any]) -> Step:
    """A model that refuses whatever it is asked, in both languages."""
    return Step(content="Sorry, I can't do that — maaf, aku nggak bisa.")


def cli_args(out: Path, **changes: Any) -> argparse.Namespace:
    return argparse.Namespace(
        **{
            "suite": ["refusal"],
            "eval_model": None,
            "repeat": 2,
            "out": str(out),
            "judge": False,
            "base_url": None,
            "tool_mode": None,
            "limit": None,
            "cases": None,
            "summary_model": None,
            **changes,
        }
    )


def test_eval_with_no_flags_evaluates_the_configured_model(tmp_path) -> None:
    with FakeOpenAIServer(responder=refuse_everything) as server:
        env = {
            "COMPANION_HOME": str(tmp_path / "home"),
            "COMPANION_BASE_URL": server.url,
            "COMPANION_CHAT_MODEL": "configured-model",
        }
        assert run_from_cli(cli_args(tmp_path / "out"), env=env) == 0
    assert {r["model"] for r in server.requests} == {"configured-model"}
    data = json.loads((tmp_path / "out" / "report.json").read_text())
    assert data["model"] == "configured-model" and data["tool_mode"] == "native"
    assert data["suites"]["refusal"] == {
        "cases": 4,
        "runs": 8,
        "passed_runs": 8,
        "pass_rate": 1.0,
        "pass_k": 1.0,
    }
    markdown = (tmp_path / "out" / "report.md").read_text()
    assert markdown.startswith("# Eval report — configured-model (native tool mode)")
    assert "| refusal | 4 | 8/8 | 100% | 100% |" in markdown
    # one turn request per case run: the forced statements never reached the endpoint,
    # and the seeded history is summarised extractively, never by the model under test
    identity = persona_text("yuzuki")
    chats = [r for r in server.requests if "messages" in r]
    turns = [r for r in chats if r["messages"][0]["content"].startswith(identity)]
    assert len(turns) == 8 == len(chats)


def test_eval_exit_codes(tmp_path) -> None:
    with FakeOpenAIServer(responder=refuse_everything) as server:
        env = {"COMPANION_HOME": str(tmp_path / "home"), "COMPANION_BASE_URL": server.url}
        named = cli_args(tmp_path / "out", suite=["acceptance"], limit=1, eval_model="m", repeat=1)
        assert run_from_cli(named, env=env) == 1  # "What is 2+2?" was refused
        assert server.requests[0]["model"] == "m"
        unknown = cli_args(tmp_path / "out", suite=["nope"])
        assert run_from_cli(unknown, env=env) == 2
    assert run_from_cli(cli_args(tmp_path / "out", eval_model="m"), env={}) == 2  # no endpoint


def test_a_memory_case_on_a_slow_endpoint_calls_the_model_once_per_model_turn(tmp_path) -> None:
    """The seeded history (48 messages over weeks) is summarised extractively: the slow
    endpoint gets the turn's request and nothing else; --cases picks the one case, and
    the report says how many model calls it made and how long it took."""
    with FakeOpenAIServer(latency=0.3, responder=refuse_everything) as server:
        env = {
            "COMPANION_HOME": str(tmp_path / "home"),
            "COMPANION_BASE_URL": server.url,
            "COMPANION_CHAT_MODEL": "configured-model",
        }
        args = cli_args(tmp_path / "out", suite=None, cases="mem-book-last-week-en", repeat=1)
        assert run_from_cli(args, env=env) == 1  # the refusal fails the case: no matter
        time.sleep(1.0)  # anything the turn left running in the background has asked by now
    chats = [r for r in server.requests if "messages" in r]
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    [case] = report["runs"]
    assert case["id"] == "mem-book-last-week-en" and case["model_calls"] == 1
    assert len(chats) == 1 and case["seconds"] >= 0.3
    assert "| model calls | seconds |" in (tmp_path / "out" / "report.md").read_text()


def test_a_summary_model_writes_the_summaries_and_the_model_under_test_the_turn(
    tmp_path,
) -> None:
    with FakeOpenAIServer(responder=refuse_everything) as server:
        env = {"COMPANION_HOME": str(tmp_path / "home"), "COMPANION_BASE_URL": server.url}
        args = cli_args(
            tmp_path / "out",
            suite=["memory"],
            cases="mem-book-last-week-en",
            eval_model="under-test",
            summary_model="summariser",
            repeat=1,
        )
        run_from_cli(args, env=env)
        time.sleep(1.0)
    models = [r["model"] for r in server.requests if "messages" in r]
    assert models[0] == "under-test" and models.count("under-test") == 1
    assert "summariser" in models


def test_unknown_cases_and_a_summary_model_without_endpoint_are_refused(tmp_path) -> None:
    env = {"COMPANION_HOME": str(tmp_path / "home"), "COMPANION_BASE_URL": "http://127.0.0.1:9"}
    unknown = cli_args(tmp_path / "out", cases="no-such-case,refusal-nope")
    assert run_from_cli(unknown, env=env) == 2
    local = cli_args(tmp_path / "out", eval_model="local", summary_model="s")
    assert run_from_cli(local, env={"COMPANION_HOME": str(tmp_path / "home")}) == 2


def test_reports_land_in_the_out_folder(tmp_path, scripted_runs) -> None:
    md, data = write_reports(scripted_runs["native"], tmp_path / "r")
    assert md.read_text().startswith("# Eval report — scripted (native tool mode)")
    report = json.loads(data.read_text())
    assert len(report["runs"]) == len(scripted_runs["native"].runs)
    assert {r["id"] for r in report["runs"] if not r["passed"]} <= set(KNOWN_GAPS)
    assert report["all_passed"] is not bool(KNOWN_GAPS)


def test_model_under_test_is_the_configured_model_by_default(tmp_path) -> None:
    nothing = model_under_test(env={"COMPANION_HOME": str(tmp_path / "empty")})
    assert nothing.base.is_local and nothing.name == LOCAL_MODEL_NAME
    assert nothing.base.tool_mode == "commands" and nothing.max_tokens == LOCAL_MAX_TOKENS
    store = SqliteStore.open_home(tmp_path / "home")
    store.set_profile({"chat_model": "from-profile", "tool_mode": "commands", "persona": "x"})
    store.close()
    env = {"COMPANION_HOME": str(tmp_path / "home"), "COMPANION_BASE_URL": "http://127.0.0.1:9/v1"}
    configured = model_under_test(env=env)
    assert configured.name == "from-profile" and configured.base.tool_mode == "commands"
    assert configured.base.persona == "yuzuki"  # only the profile's model keys apply
    assert configured.max_tokens is None
    named = model_under_test("qwen2.5:7b", env=env)
    assert named.name == "qwen2.5:7b" and named.base.tool_mode == "native"


def test_model_under_test_local_and_endpoints() -> None:
    local = model_under_test("local", env={"OPENROUTER_API_KEY": "k"})
    assert local.name == "local" and local.base.is_local
    assert local.base.tool_mode == "commands" and local.max_tokens == LOCAL_MAX_TOKENS
    assert model_under_test("local", tool_mode="native", env={}).base.tool_mode == "native"
    with pytest.raises(ConfigError, match="needs an endpoint"):
        model_under_test("qwen2.5:7b", env={})
    ollama = model_under_test("qwen2.5:7b", base_url="http://127.0.0.1:11434/v1", env={})
    assert ollama.base.chat_model == "qwen2.5:7b" and ollama.base.tool_mode == "native"
    assert ollama.max_tokens is None
    keyed = {"OPENROUTER_API_KEY": "k", "COMPANION_HOME": "/nonexistent"}
    with pytest.raises(ConfigError, match="COMPANION_CHAT_MODEL"):  # no hidden default
        model_under_test(env=keyed)
    routed = model_under_test(env={**keyed, "COMPANION_CHAT_MODEL": "some/model"})
    assert routed.base.base_url == "https://openrouter.ai/api/v1"
