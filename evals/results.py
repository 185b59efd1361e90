"""What an eval run produced: each case run with its verdict, and the run as a whole.

The runner fills these and the report reads them; both import this module and neither
imports the other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from evals.cases import Case
from evals.evaluators import CheckResult, Observation


@dataclass
class CaseRun:
    """One run of one case and its verdict."""

    case: Case
    run: int  # 1-based repeat index
    observation: Observation
    checks: list[CheckResult]

    @property
    def passed(self) -> bool:
        """True when every check passed."""
        return all(check.passed for check in self.checks)

    @property
    def reasons(self) -> list[str]:
        """The failed checks with their details."""
        return [
            f"{c.name}: {c.detail}" if c.detail else c.name for c in self.checks if not c.passed
        ]


@dataclass
class EvalRun:
    """A whole eval run: what ran, against which model, and every case run."""

    model: str
    tool_mode: str
    repeat: int
    judge: bool
    started: datetime
    cases: list[Case]
    runs: list[CaseRun] = field(default_factory=list)
    seconds: float = 0.0
    max_tokens: int | None = None  # reply cap, when the run set one
    backend: str = "sqlite"  # where the case runs' stores were: "sqlite" | "postgres"

    @property
    def all_passed(self) -> bool:
        """True when every run of every case passed."""
        return all(run.passed for run in self.runs)
