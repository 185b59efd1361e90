"""Eval reports: a JSON file for machines and a Markdown page for people.

Per case and run: pass/fail with the failed checks' reasons, tools called vs expected,
loop count, latency, the answer. Per suite: pass rate (passed runs / runs) and, with
``--repeat K``, pass^k — the share of cases that passed in all K runs. The same figures
for original cases and for their paraphrases side by side: a model that passes the
originals and fails their rewordings was matching wording, not meaning.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from evals.evaluators import Observation
from evals.results import CaseRun, EvalRun

ANSWER_CHARS = 160


def _rate(passed: int, total: int) -> float:
    return round(passed / total, 4) if total else 0.0


def _stats(runs: list[CaseRun]) -> dict[str, Any]:
    """Cases, runs, passed runs, pass rate and the share of cases passing every run."""
    per_case: dict[str, list[bool]] = defaultdict(list)
    for case_run in runs:
        per_case[case_run.case.id].append(case_run.passed)
    always = sum(all(results) for results in per_case.values())
    passed = sum(r.passed for r in runs)
    return {
        "cases": len(per_case),
        "runs": len(runs),
        "passed_runs": passed,
        "pass_rate": _rate(passed, len(runs)),
        "pass_k": _rate(always, len(per_case)),
    }


def suite_stats(run: EvalRun) -> dict[str, dict[str, Any]]:
    """Per suite (and "all"): cases, runs, passed runs, pass rate, cases passing every run."""
    by_suite: dict[str, list[CaseRun]] = defaultdict(list)
    for case_run in run.runs:
        by_suite[case_run.case.suite].append(case_run)
        by_suite["all"].append(case_run)
    ordered = sorted(by_suite.items(), key=lambda item: (item[0] == "all", item[0]))
    return {suite: _stats(runs) for suite, runs in ordered}


def wording_stats(run: EvalRun) -> dict[str, dict[str, Any]]:
    """The same figures for the original cases and for the paraphrases (when any ran)."""
    originals = [r for r in run.runs if r.case.paraphrase_of is None]
    paraphrases = [r for r in run.runs if r.case.paraphrase_of is not None]
    if not paraphrases:
        return {}
    return {"original": _stats(originals), "paraphrase": _stats(paraphrases)}


def model_calls(obs: Observation) -> int:
    """How many times the turn called a model (the model under test, or the vision one)."""
    return sum(1 for step in obs.steps if step.kind == "model")


def _run_record(case_run: CaseRun) -> dict[str, Any]:
    obs = case_run.observation
    case = case_run.case
    return {
        "id": case.id,
        "suite": case.suite,
        "paraphrase_of": case.paraphrase_of,
        "language": case.language,
        "run": case_run.run,
        "passed": case_run.passed,
        "reasons": case_run.reasons,
        "tools_called": [{"name": c.name, "args": c.args, "ok": c.ok} for c in obs.calls],
        "tools_expected": [t.name for t in case.expect.tools],
        "loops": obs.loops,
        "seconds": round(obs.seconds, 3),
        "model_calls": model_calls(obs),
        "models": [f"{s.name} ({s.role})" for s in obs.steps if s.kind == "model"],
        "answer": obs.answer,
        "error": obs.error,
        "checks": [
            {"name": c.name, "passed": c.passed, "detail": c.detail} for c in case_run.checks
        ],
    }


def report_data(run: EvalRun) -> dict[str, Any]:
    """The whole report as JSON-ready data."""
    return {
        "model": run.model,
        "tool_mode": run.tool_mode,
        "backend": run.backend,
        "repeat": run.repeat,
        "judge": run.judge,
        "max_tokens": run.max_tokens,
        "started": run.started.isoformat(),
        "seconds": round(run.seconds, 2),
        "all_passed": run.all_passed,
        "suites": suite_stats(run),
        "wording": wording_stats(run),
        "runs": [_run_record(r) for r in run.runs],
    }


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def markdown(run: EvalRun) -> str:
    """The report as a Markdown page."""
    stats = suite_stats(run)
    total = stats.get("all", {"pass_rate": 0.0, "pass_k": 0.0, "runs": 0, "passed_runs": 0})
    lines = [
        f"# Eval report — {run.model} ({run.tool_mode} tool mode)",
        "",
        f"Started {run.started:%Y-%m-%d %H:%M UTC}, {run.seconds:.1f} s, "
        f"{len(run.cases)} cases × {run.repeat} run(s). "
        f"Passed {total['passed_runs']}/{total['runs']} runs "
        f"({total['pass_rate']:.0%}); pass^{run.repeat} {total['pass_k']:.0%}."
        + (f" Replies capped at {run.max_tokens} tokens." if run.max_tokens else "")
        + (f" Stores on {run.backend}." if run.backend != "sqlite" else ""),
        "",
        f"| suite | cases | runs passed | pass rate | pass^{run.repeat} |",
        "|---|---:|---:|---:|---:|",
    ]
    for suite, row in stats.items():
        name = f"**{suite}**" if suite == "all" else suite
        lines.append(
            f"| {name} | {row['cases']} | {row['passed_runs']}/{row['runs']} | "
            f"{row['pass_rate']:.0%} | {row['pass_k']:.0%} |"
        )
    wording = wording_stats(run)
    if wording:
        lines += ["", "| wording | cases | runs passed | pass rate |", "|---|---:|---:|---:|"]
        for kind, row in wording.items():
            lines.append(
                f"| {kind}s | {row['cases']} | {row['passed_runs']}/{row['runs']} | "
                f"{row['pass_rate']:.0%} |"
            )
    failures = [r for r in run.runs if not r.passed]
    if failures:
        lines += ["", "## Failures", ""]
        for case_run in failures:
            lines.append(
                f"- **{case_run.case.id}** (run {case_run.run}): "
                + "; ".join(_cell(reason) for reason in case_run.reasons)
            )
    lines += [
        "",
        "## Cases",
        "",
        "| case | lang | run | result | tools called | expected | loops | model calls | seconds "
        "| answer |",
        "|---|---|---:|---|---|---|---:|---:|---:|---|",
    ]
    for case_run in run.runs:
        obs = case_run.observation
        called = ", ".join(c.name + ("" if c.ok else " (error)") for c in obs.calls) or "—"
        expected = ", ".join(t.name for t in case_run.case.expect.tools) or "—"
        answer = obs.answer if len(obs.answer) <= ANSWER_CHARS else obs.answer[:ANSWER_CHARS] + "…"
        lines.append(
            f"| {case_run.case.id} | {case_run.case.language} | {case_run.run} | "
            f"{'pass' if case_run.passed else 'FAIL'} | {called} | {expected} | {obs.loops} | "
            f"{model_calls(obs)} | {obs.seconds:.2f} | {_cell(answer)} |"
        )
    return "\n".join(lines) + "\n"


def write_reports(run: EvalRun, out: Path) -> tuple[Path, Path]:
    """Write ``report.md`` and ``report.json`` into ``out``; returns their paths."""
    out.mkdir(parents=True, exist_ok=True)
    md_path, json_path = out / "report.md", out / "report.json"
    md_path.write_text(markdown(run), encoding="utf-8")
    json_path.write_text(
        json.dumps(report_data(run), ensure_ascii=False, indent=2, default=str), encoding="utf-8"
    )
    return md_path, json_path


def summary_lines(run: EvalRun) -> list[str]:
    """A short console summary: one line per suite."""
    lines = [f"model {run.model} ({run.tool_mode}), {run.seconds:.1f} s"]
    if run.backend != "sqlite":
        lines[0] += f", stores on {run.backend}"
    rows = {**suite_stats(run), **{f"{k}s": v for k, v in wording_stats(run).items()}}
    for name, row in rows.items():
        lines.append(
            f"  {name:<12} {row['passed_runs']:>3}/{row['runs']:<3} runs passed "
            f"({row['pass_rate']:.0%}), pass^{run.repeat} {row['pass_k']:.0%}"
        )
    return lines
