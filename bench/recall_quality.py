"""Recall quality on SQLite and on Postgres, in English and Indonesian, through the evals.

Runs the eval cases that recall — the whole memory suite, and every original case of any
suite that expects memory_search — through the real graph with the scripted keyword
policy of ``tests.support.policy``, once with a SQLite file per case run and once with
every case run a new person of a throwaway Postgres server (``PostgresServer``, migrated
with ``memory.pg_store.migrate`` and ``memory.pg_sql_guard.prepare``). It prints, per
language (EN / ID) and per backend:

- the memory suite's cases, how many passed and the pass rate (every check of the case);
- retrieval, independent of any model: for each case that expects memory_search, the
  facts it must recall (the answer's expected phrases found in the seeded history or
  memories) and whether memory_search's result holds them (hit rate), and where (MRR over
  the result's entries — facts, episodes, excerpts, messages, in the order the model
  reads them: 1 when the first entry holds the first fact, 0 when none does);
- Postgres / SQLite for each.

The scripted policy is not a model: it was written against these cases' sentences, asks
memory_search with the user's question as it stands, and answers from the best line of
the result. So the pass rates show that the harness and both stores fit together, and
the retrieval figures compare the two stores' full-text search on the same queries; none
of it is a model's score.

    python -m bench.recall_quality
    python -m bench.recall_quality --tool-mode commands
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from bench import quiet_environment

quiet_environment()

from evals.cases import Case, load_cases  # noqa: E402
from evals.results import CaseRun, EvalRun  # noqa: E402
from evals.runner import arun_suites  # noqa: E402
from memory.pg_sql_guard import prepare  # noqa: E402
from memory.pg_store import migrate  # noqa: E402
from tests.support.policy import scripted_model  # noqa: E402
from tests.support.postgres import APP_ROLE, PostgresServer  # noqa: E402
from tools.registry import default_registry  # noqa: E402

MEMORY_SUITE = "memory"
RECALL_TOOL = "memory_search"
LANGUAGES = {"en": "EN", "id": "ID"}
BACKENDS = ("sqlite", "postgres")
LABEL = (
    "Scripted keyword policy (tests/support/policy.py), not a model: pass rates prove the "
    "harness and the stores; retrieval compares the stores' search on the same queries."
)


@dataclass(frozen=True)
class Retrieval:
    """Whether one case's memory_search result held the facts it must recall, and where."""

    case: Case
    hit: bool
    rank: int | None  # 1-based entry of the result first holding the first fact


@dataclass(frozen=True)
class Row:
    """One language on one backend."""

    cases: int
    passed: int
    recall_cases: int
    hits: int
    mrr: float

    @property
    def pass_rate(self) -> float:
        return self.passed / self.cases if self.cases else 0.0

    @property
    def hit_rate(self) -> float:
        return self.hits / self.recall_cases if self.recall_cases else 0.0


def recall_suites() -> list[str]:
    """The suites holding the memory suite or a case that expects memory_search."""
    cases = load_cases(known_tools=default_registry().names)
    return sorted(
        {case.suite for case in cases if case.suite == MEMORY_SUITE or expects_recall(case)}
    )


def expects_recall(case: Case) -> bool:
    """True for a case whose good answer needs memory_search."""
    return any(tool.name == RECALL_TOOL for tool in case.expect.tools)


def facts(case: Case) -> list[list[str]]:
    """The expected answer phrases the seeded world holds (each a group of alternatives,
    keeping the alternatives found): what memory_search must bring back."""
    world = " ".join(
        [m.text for m in case.history] + [f"{m.key} {m.value}" for m in case.memories]
    ).casefold()
    found = []
    for wanted in case.expect.answer_contains:
        options = [wanted] if isinstance(wanted, str) else wanted
        present = [option for option in options if option.casefold() in world]
        if present:
            found.append(present)
    return found


def items(result: str) -> list[str]:
    """The entries of a memory_search result, in order: each ``- `` line with the
    indented lines under it (an excerpt's messages); headings and the label left out."""
    entries: list[str] = []
    for line in result.splitlines():
        if line.startswith("- "):
            entries.append(line)
        elif line.startswith(" ") and entries:
            entries[-1] += "\n" + line
    return entries


def retrieval(run: CaseRun) -> Retrieval:
    """Whether the turn's memory_search results held every fact, and the rank of the
    first entry holding the first fact."""
    wanted = facts(run.case)
    results = [c.result for c in run.observation.calls if c.name == RECALL_TOOL and c.ok]
    text = "\n".join(results).casefold()
    hit = bool(results) and all(any(o.casefold() in text for o in group) for group in wanted)
    first = [o.casefold() for o in wanted[0]] if wanted else []
    entries = [entry for result in results for entry in items(result.casefold())]
    rank = next(
        (n for n, entry in enumerate(entries, start=1) if any(o in entry for o in first)), None
    )
    return Retrieval(run.case, hit, rank)


def row(runs: Iterable[CaseRun], language: str) -> Row:
    """The figures of one language of one run."""
    mine = [r for r in runs if r.case.language == language]
    suite = [r for r in mine if r.case.suite == MEMORY_SUITE]
    found = [retrieval(r) for r in mine if expects_recall(r.case) and facts(r.case)]
    return Row(
        cases=len(suite),
        passed=sum(r.passed for r in suite),
        recall_cases=len(found),
        hits=sum(f.hit for f in found),
        mrr=sum(1 / f.rank for f in found if f.hit and f.rank) / len(found) if found else 0.0,
    )


async def measure(tool_mode: str, suites: Sequence[str]) -> dict[str, EvalRun]:
    """The original cases of ``suites`` on SQLite, then on a fresh, migrated Postgres."""
    model = scripted_model(tool_mode)
    runs = {"sqlite": await arun_suites(suites, model=model, paraphrases=False, progress=False)}
    with PostgresServer() as server:
        await migrate(server.admin_url, APP_ROLE)
        await prepare(server.admin_url, app_role=APP_ROLE)
        runs["postgres"] = await arun_suites(
            suites, model=model, paraphrases=False, progress=False, database_url=server.url
        )
    return runs


def _ratio(postgres: float, sqlite: float) -> str:
    return f"{postgres / sqlite:.2f}" if sqlite else "n/a"


def report(runs: dict[str, EvalRun], tool_mode: str) -> None:
    """Print the Markdown tables."""
    print(f"# Recall quality, SQLite vs Postgres ({tool_mode} tool mode)\n")
    print(f"{LABEL}\n")
    print(
        "| language | backend | memory cases | passed | pass rate | recall cases | "
        "hits | hit rate | MRR |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    rows = {
        (language, backend): row(runs[backend].runs, language)
        for language in LANGUAGES
        for backend in BACKENDS
    }
    for (language, backend), r in rows.items():
        print(
            f"| {LANGUAGES[language]} | {backend} | {r.cases} | {r.passed} | "
            f"{r.pass_rate:.0%} | {r.recall_cases} | {r.hits} | {r.hit_rate:.0%} | "
            f"{r.mrr:.2f} |"
        )
    print("\n| language | pass rate PG/SQLite | hit rate PG/SQLite | MRR PG/SQLite |")
    print("|---|---:|---:|---:|")
    for language, name in LANGUAGES.items():
        pg, lite = rows[(language, "postgres")], rows[(language, "sqlite")]
        print(
            f"| {name} | {_ratio(pg.pass_rate, lite.pass_rate)} | "
            f"{_ratio(pg.hit_rate, lite.hit_rate)} | {_ratio(pg.mrr, lite.mrr)} |"
        )
    differing = [
        (sqlite_run.case.id, sqlite_run.passed, pg_run.passed, sqlite_run.reasons + pg_run.reasons)
        for sqlite_run, pg_run in zip(runs["sqlite"].runs, runs["postgres"].runs, strict=True)
        if sqlite_run.passed != pg_run.passed or retrieval(sqlite_run).hit != retrieval(pg_run).hit
    ]
    if differing:
        print("\nCases whose outcome differs between the backends:")
        for case_id, on_sqlite, on_postgres, reasons in differing:
            print(f"- {case_id}: SQLite {on_sqlite}, Postgres {on_postgres}: {reasons}")
    failed = {
        backend: [r.case.id for r in run.runs if not r.passed] for backend, run in runs.items()
    }
    print(f"\nFailed runs (any suite run): {failed}")


def main(argv: list[str] | None = None) -> dict[str, EvalRun]:
    """Run both backends and print the tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tool-mode", choices=["native", "commands"], default="native")
    args = parser.parse_args(argv)
    runs = asyncio.run(measure(args.tool_mode, recall_suites()))
    report(runs, args.tool_mode)
    return runs


if __name__ == "__main__":
    main()
