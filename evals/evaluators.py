"""Checks of one eval run: tool correctness (deepeval, offline) and deterministic checks.

``observe`` turns a finished turn (``graph.runner.TurnResult``, the session's stored
messages and the rows of the case's database queries) into an ``Observation``: the tools
that ran, the model calls in order with their system messages, the loop count, the
answer and the latency. ``evaluate`` runs every check on it and returns one
``CheckResult`` each (with the reason when it failed): ``tool_correctness`` (deepeval's
ToolCorrectnessMetric under our own judge wrapper, offline), then deterministic checks
of arguments, forbidden tools, loops, duplicates, the answer, the vision model, the
database and the identity block; with a judge, the GEval checks of ``evals.judge``.
What each check asks: docs/evals.md.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from evals.cases import Case
from evals.judge import ChatJudge, judged_metrics, style_metric
from graph.commands import call_signature

if TYPE_CHECKING:
    from graph.runner import TurnResult
    from memory import Message

IMAGE_TOOLS = ("image_generate", "image_analyze")
# What an answer must never say: tool names, the word "tool", result blocks, commands.
MECHANICS = (
    r"\b(web_search|memory_search|memory_sql|image_generate|image_analyze|create_memory|"
    r"update_memory|delete_memory)\b",
    r"\btools?\b",
    r"TOOL RESULT|🔧",
    r"\bfunction[ _]call",
    r"(^|\s)/(weather|web_search|imagine|memory_search|memory_sql|image_analyze)\b",
    r"\b(search results?|I searched|I looked it up online|hasil pencarian)\b",
)


@dataclass(frozen=True)
class ObservedCall:
    """A tool that ran this turn."""

    name: str
    args: dict[str, Any]
    ok: bool
    result: str = ""  # the stored result text the model read

    @property
    def signature(self) -> str:
        """Equal for near-same calls (the graph's duplicate rule)."""
        return call_signature(self.name, self.args)


@dataclass(frozen=True)
class Step:
    """One step of the turn, in order: a model call or a tool run."""

    kind: str  # "model" | "tool"
    name: str  # model name or tool name
    role: str = ""  # for model calls: "chat" | "vision"
    ok: bool = True  # for tool runs


@dataclass
class Observation:
    """What one run of a case produced."""

    answer: str
    calls: list[ObservedCall] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    loops: int = 0
    seconds: float = 0.0
    error: str | None = None
    db_rows: list[list[list[Any]]] = field(default_factory=list)
    prompts: list[tuple[str, str]] = field(default_factory=list)  # (model role, system text)
    identity: str = ""  # the persona's identity block the turn ran with


@dataclass(frozen=True)
class CheckResult:
    """The outcome of one check, with the reason when it failed."""

    name: str
    passed: bool
    detail: str = ""


def observe(
    result: TurnResult,
    messages: Sequence[Message],
    db_rows: Sequence[list[list[Any]]] = (),
    *,
    prompts: Sequence[tuple[str, str]] = (),
    identity: str = "",
) -> Observation:
    """Read a finished turn into an Observation: ``messages`` are the session's stored
    messages (the tools' results among them), ``db_rows`` the rows of the case's database
    queries, ``prompts`` the system messages the models were sent, ``identity`` the
    persona's identity block."""
    stored = {message.id: message for message in messages}
    calls = []
    for executed in result.executed:
        message = stored.get(executed["message_id"])
        calls.append(
            ObservedCall(
                name=executed["name"],
                args=dict(message.meta.get("arguments") or {}) if message else {},
                ok=bool(executed["ok"]),
                result=message.content if message else "",
            )
        )
    steps = []
    for event in result.trace:
        detail = event.get("detail", {})
        if event.get("kind") == "model":
            steps.append(
                Step("model", str(detail.get("model", "")), str(detail.get("model_role", "")))
            )
        elif event.get("kind") == "tool":
            steps.append(Step("tool", str(event.get("name", "")), ok=bool(detail.get("ok"))))
    return Observation(
        answer=result.answer,
        calls=calls,
        steps=steps,
        loops=result.loops,
        seconds=result.seconds,
        error=result.error,
        db_rows=list(db_rows),
        prompts=list(prompts),
        identity=identity,
    )


# --- the checks -------------------------------------------------------------------------


def tool_correctness(case: Case, obs: Observation, judge: ChatJudge) -> CheckResult:
    """deepeval's ToolCorrectnessMetric: expected tools called, in order (offline)."""
    from deepeval.metrics import ToolCorrectnessMetric
    from deepeval.test_case import LLMTestCase, ToolCall

    expected = [t.name for t in case.expect.tools]
    optional = set(case.expect.optional_tools) - set(expected)
    counted = [c for c in obs.calls if c.name not in optional]
    metric = ToolCorrectnessMetric(
        model=judge,
        eval_mode="llm",
        threshold=1.0,
        should_consider_ordering=True,
        async_mode=False,
    )
    test = LLMTestCase(
        input=case.message,
        actual_output=obs.answer,
        tools_called=[ToolCall(name=c.name, input_parameters=c.args) for c in counted],
        expected_tools=[ToolCall(name=name, input_parameters=None) for name in expected],
    )
    score = metric.measure(test, _show_indicator=False)
    called = [c.name for c in counted]
    detail = f"score {score:.2f}: expected {expected}, called {called}"
    return CheckResult("tool_correctness", bool(metric.is_successful()), detail)


def arguments(case: Case, obs: Observation) -> CheckResult:
    """Every expected tool with argument expectations was called with matching arguments."""
    problems = []
    for expected in case.expect.tools:
        if not expected.args:
            continue
        candidates = [c for c in obs.calls if c.name == expected.name]
        if any(
            all(check.holds(key in c.args, c.args.get(key)) for key, check in expected.args.items())
            for c in candidates
        ):
            continue
        wanted = ", ".join(f"{k} {v.describe()}" for k, v in expected.args.items())
        seen = "; ".join(str(c.args) for c in candidates) or "not called"
        problems.append(f"{expected.name}({wanted}) — got {seen}")
    return CheckResult("arguments", not problems, " | ".join(problems))


def forbidden_tools(case: Case, obs: Observation) -> CheckResult:
    """None of the case's forbidden tools ran ("*" forbids every tool)."""
    forbidden = set(case.expect.forbidden_tools)
    ran = [c.name for c in obs.calls if "*" in forbidden or c.name in forbidden]
    return CheckResult("forbidden_tools", not ran, f"ran {ran}" if ran else "")


def loop_count(case: Case, obs: Observation) -> CheckResult:
    """No more tool loops than allowed."""
    limit = case.expect.max_loops
    passed = obs.loops <= limit
    return CheckResult("loop_count", passed, "" if passed else f"{obs.loops} loops > {limit}")


def no_duplicates(obs: Observation) -> CheckResult:
    """No tool ran twice with the same or near-same arguments."""
    seen: set[str] = set()
    repeated = []
    for call in obs.calls:
        if call.signature in seen:
            repeated.append(f"{call.name}{call.args}")
        seen.add(call.signature)
    return CheckResult("no_duplicates", not repeated, f"ran again: {repeated}" if repeated else "")


def answered(obs: Observation) -> CheckResult:
    """There is an answer, and the model did not fail."""
    if obs.error:
        return CheckResult("answered", False, f"provider error: {obs.error}")
    if not obs.answer.strip():
        return CheckResult("answered", False, "empty answer")
    return CheckResult("answered", True)


def answer_contains(case: Case, obs: Observation) -> CheckResult:
    """Each expected phrase (or one of each group of alternatives) is in the answer."""
    text = obs.answer.casefold()
    missing = []
    for wanted in case.expect.answer_contains:
        options = [wanted] if isinstance(wanted, str) else wanted
        if not any(option.casefold() in text for option in options):
            missing.append(" | ".join(options))
    return CheckResult("answer_contains", not missing, f"missing {missing}" if missing else "")


def answer_not_contains(case: Case, obs: Observation) -> CheckResult:
    """None of the unwanted phrases is in the answer."""
    text = obs.answer.casefold()
    found = [bad for bad in case.expect.answer_not_contains if bad.casefold() in text]
    return CheckResult("answer_not_contains", not found, f"contains {found}" if found else "")


def no_tool_mechanics(obs: Observation) -> CheckResult:
    """The answer does not mention tools, commands or how it got its facts."""
    found = [
        match.group(0).strip()
        for pattern in MECHANICS
        if (match := re.search(pattern, obs.answer, re.IGNORECASE | re.MULTILINE))
    ]
    return CheckResult("no_tool_mechanics", not found, f"mentions {found}" if found else "")


def vision_after_image(obs: Observation) -> CheckResult | None:
    """After each successful image tool, the next model call was the vision model's."""
    problems = []
    relevant = False
    for index, step in enumerate(obs.steps):
        if step.kind != "tool" or step.name not in IMAGE_TOOLS or not step.ok:
            continue
        relevant = True
        following = next((s for s in obs.steps[index + 1 :] if s.kind == "model"), None)
        if following is None or following.role != "vision":
            who = f"{following.name} ({following.role})" if following else "no model"
            problems.append(f"after {step.name}: {who}")
    if not relevant:
        return None
    return CheckResult("vision_after_image", not problems, "; ".join(problems))


def database(case: Case, obs: Observation) -> CheckResult | None:
    """The case's queries return the expected rows after the turn."""
    if not case.expect.db:
        return None
    problems = [
        f"{check.sql!r} -> {rows} (expected {check.rows})"
        for check, rows in zip(case.expect.db, obs.db_rows, strict=True)
        if rows != check.rows
    ]
    return CheckResult("database", not problems, "; ".join(problems))


def prompt_identity(case: Case, obs: Observation) -> CheckResult | None:
    """Every model call was told who it is (and the case's style note, when it has one)."""
    if not obs.identity or not obs.prompts:
        return None
    problems = []
    for number, (role, system) in enumerate(obs.prompts, start=1):
        if obs.identity.strip() not in system:
            problems.append(f"call {number} ({role}): no identity block")
        if case.style_note and case.style_note.strip() not in system:
            problems.append(f"call {number} ({role}): no style note")
    return CheckResult("prompt_identity", not problems, "; ".join(problems))


def judged(case: Case, obs: Observation, judge: ChatJudge) -> list[CheckResult]:
    """The optional GEval checks (natural answer from the tool result; persona; style)."""
    from deepeval.test_case import LLMTestCase

    natural, persona = judged_metrics(judge)
    results = []
    context = [c.result for c in obs.calls if c.result]
    chosen = [(natural, context)] if context else []
    chosen.append((persona, context))
    if case.style_note:
        chosen.append((style_metric(judge, case.style_note), context))
    for metric, given in chosen:
        test = LLMTestCase(input=case.message, actual_output=obs.answer, context=given or None)
        try:
            score = metric.measure(test, _show_indicator=False)
        except Exception as exc:  # a judge that cannot produce a verdict fails the check
            results.append(CheckResult(f"judge: {metric.name}", False, f"no verdict: {exc}"))
            continue
        results.append(
            CheckResult(
                f"judge: {metric.name}",
                bool(metric.is_successful()),
                f"score {score:.2f}: {metric.reason or ''}".strip(),
            )
        )
    return results


def evaluate(
    case: Case, obs: Observation, judge: ChatJudge, *, with_judge: bool = False
) -> list[CheckResult]:
    """Every check of one run, deterministic ones first."""
    checks = [
        tool_correctness(case, obs, judge),
        arguments(case, obs),
        forbidden_tools(case, obs),
        loop_count(case, obs),
        no_duplicates(obs),
        answered(obs),
        answer_contains(case, obs),
        answer_not_contains(case, obs),
        no_tool_mechanics(obs),
    ]
    optional = (vision_after_image(obs), database(case, obs), prompt_identity(case, obs))
    checks += [c for c in optional if c is not None]
    if with_judge:
        checks += judged(case, obs, judge)
    return checks
