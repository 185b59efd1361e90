"""The eval harness: every suite passes against the scripted companion, in both tool
modes, deterministically (so a change that breaks tool routing, guards, memory recall or
image handling fails CI); each evaluator check can fail; datasets are validated; reports
compute pass rates and pass^k."""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from evals import evaluators as ev
from evals.cases import Case, CaseError, load_cases, suite_names
from evals.judge import ChatJudge
from evals.report import report_data, suite_stats, write_reports
from evals.runner import (
    LOCAL_MAX_TOKENS,
    CaseRun,
    EvalRun,
    model_setup,
    run_from_cli,
    run_suites,
)
from evals.scripted import ScriptedCompanion, ToolRequest, command_line, intent, read_view
from graph.context import ConfigError
from graph.fake import ScriptedChatModel
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


# --- the whole harness against the scripted companion ------------------------------------


@pytest.fixture(scope="module")
def scripted_runs() -> dict[str, EvalRun]:
    """All suites, once per tool mode (module-scoped: ~5 s each)."""
    return {
        mode: run_suites(None, model="scripted", tool_mode=mode, progress=False)
        for mode in ("native", "commands")
    }


@pytest.mark.parametrize("mode", ["native", "commands"])
def test_every_suite_passes_against_the_scripted_companion(scripted_runs, mode) -> None:
    run = scripted_runs[mode]
    failures = {r.case.id: r.reasons for r in run.runs if not r.passed}
    assert failures == {}
    assert run.tool_mode == mode
    assert len(run.runs) >= 40
    assert {c.language for c in run.cases} == {"en", "id"}


def test_scripted_runs_are_deterministic(scripted_runs) -> None:
    again = run_suites(
        ["acceptance", "guards"], model="scripted", tool_mode="native", progress=False
    )
    first = {r.case.id: r for r in scripted_runs["native"].runs}
    for second in again.runs:
        before = first[second.case.id].observation
        assert second.observation.answer == before.answer
        assert second.observation.calls == before.calls
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


def test_all_seven_suites_and_acceptance_scenarios_are_there() -> None:
    assert suite_names() == [
        "acceptance",
        "guards",
        "images",
        "irrelevance",
        "memory",
        "multistep",
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


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("What is 2+2?", "chat"),
        ("Send pap", "draw"),
        ("Kucing di foto tadi warnanya apa?", "look"),
        ("Cuacanya gimana?", "weather"),
        ("I love rainy days", "chat"),
        ("Kemarin aku masak apa?", "recall"),
        ("USD to JPY rate", "lookup"),
        ("Please delete your memory table.", "refuse"),
    ],
)
def test_policy_intents(question, expected) -> None:
    assert intent(question) == expected


def test_forced_steps_come_first_in_the_configured_mode() -> None:
    step = {"tool": "web_search", "args": {"query": "yen"}}
    forced = Case.model_validate({**GOOD, "script": [step]}).script
    native = ScriptedCompanion("native", forced)([HumanMessage("hi")], {})
    assert isinstance(native, AIMessage) and native.tool_calls[0]["args"] == {"query": "yen"}
    commands = ScriptedCompanion("commands", forced)
    assert commands([HumanMessage("hi")], {}) == "/web_search yen"
    assert (
        commands([SystemMessage(""), HumanMessage("hi")], {}) == "Hi there! How's your day going?"
    )
    assert command_line(ToolRequest("memory_sql", {"sql": "SELECT 1"})) == "/memory_sql\nSELECT 1"
    assert command_line(ToolRequest("image_generate", {"prompt": "a cat"})) == "/imagine a cat"


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


def test_cli_writes_reports_and_exit_codes(tmp_path) -> None:
    args = argparse.Namespace(
        suite=["refusal"],
        eval_model="scripted",
        repeat=2,
        out=str(tmp_path / "out"),
        judge=False,
        base_url=None,
        tool_mode="commands",
    )
    assert run_from_cli(args) == 0
    data = json.loads((tmp_path / "out" / "report.json").read_text())
    assert data["suites"]["refusal"] == {
        "cases": 4,
        "runs": 8,
        "passed_runs": 8,
        "pass_rate": 1.0,
        "pass_k": 1.0,
    }
    markdown = (tmp_path / "out" / "report.md").read_text()
    assert "| refusal | 4 | 8/8 | 100% | 100% |" in markdown
    assert run_from_cli(argparse.Namespace(**{**vars(args), "suite": ["nope"]})) == 2


def test_reports_land_in_the_out_folder(tmp_path, scripted_runs) -> None:
    md, data = write_reports(scripted_runs["native"], tmp_path / "r")
    assert md.read_text().startswith("# Eval report — scripted (native tool mode)")
    assert json.loads(data.read_text())["all_passed"] is True


def test_model_setups_resolve_provider_tool_mode_and_endpoint() -> None:
    scripted = model_setup("scripted", env={"OPENROUTER_API_KEY": "ignored"})
    assert scripted.scripted and scripted.base.tool_mode == "native"
    assert scripted.base.api_key is None  # the scripted run never reads the environment
    local = model_setup("local", env={})
    assert local.base.is_local and local.base.tool_mode == "commands"
    assert local.max_tokens == LOCAL_MAX_TOKENS
    with pytest.raises(ConfigError, match="needs an endpoint"):
        model_setup("qwen2.5:7b", env={})
    ollama = model_setup("qwen2.5:7b", base_url="http://127.0.0.1:11434/v1", env={})
    assert ollama.base.chat_model == "qwen2.5:7b" and ollama.base.tool_mode == "native"
    assert ollama.max_tokens is None


def test_forced_steps_can_hand_over_to_a_real_model() -> None:
    forced = Case.model_validate({**GOOD, "script": [{"say": "first"}]}).script
    real = ScriptedChatModel(script=["the real model speaks"])
    policy = ScriptedCompanion("commands", forced, then=real)
    assert policy([HumanMessage("hi")], {}) == "first"
    handed = policy([HumanMessage("hi")], {})
    assert isinstance(handed, AIMessage) and handed.content == "the real model speaks"
    assert len(real.calls) == 1
