"""The eval case schema and its loader: one suite per ``evals/datasets/<suite>.jsonl`` file.

A ``Case`` is one user turn in a prepared world (a fixed "now", a location, a seeded
history and memories, the message and an optional style note) with what a good
companion does with it (``Expectation``: tools called, allowed and forbidden, what the answer
must and must not say, database checks). A ``script`` forces replies before the model
under test answers; ``confirm`` answers a question for the person ("deny" unless it says
"allow"). A paraphrase line takes its world and expectations from its original. Every
line is validated when loaded: an error names the file and line. See docs/evals.md.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    model_validator,
)

DATASETS = Path(__file__).parent / "datasets"
MAX_TOOL_LOOPS = 3
ID_PATTERN = r"^[a-z0-9][a-z0-9_-]*$"
PARAPHRASE_FIELDS = {"id", "paraphrase_of", "message", "description"}


class CaseError(ValueError):
    """A dataset line that is not a valid case (the message names file and line)."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Location(_Model):
    """The user's saved coordinates (Settings.latitude/longitude)."""

    lat: float = Field(ge=-90, le=90)
    lon: float = Field(ge=-180, le=180)


class HistoryMessage(_Model):
    """A message of the conversation so far, stored before the turn runs."""

    at: AwareDatetime  # when it was sent
    role: Literal["user", "assistant"]
    text: str
    image: str | None = None  # a static image of the ImageFixture, e.g. "orange-cat.png"
    session: str | None = None  # a key of Case.sessions; None = the chat the turn runs in


class SeedMemory(_Model):
    """A structured memory present before the turn."""

    category: Literal["identity", "principles", "focus", "signals"]
    key: str = Field(min_length=1)
    value: str = Field(min_length=1)


class ScriptStep(_Model):
    """A reply forced on the chat model: plain text (``say``) or one tool call."""

    say: str | None = None
    tool: str | None = None
    args: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _one_kind(self) -> ScriptStep:
        if (self.say is None) == (self.tool is None):
            raise ValueError("a script step has either `say` or `tool`")
        if self.say is not None and self.args:
            raise ValueError("`args` belongs to a `tool` step")
        return self


class ArgCheck(_Model):
    """An expectation on one argument of a tool call (case-insensitive for text)."""

    equals: Any = None
    contains: str | None = None  # the text contains this
    any_of: list[str] | None = None  # the text contains one of these
    regex: str | None = None  # re.search matches the text
    absent: bool = False  # the argument is not given

    @model_validator(mode="after")
    def _one_kind(self) -> ArgCheck:
        given = [
            self.equals is not None,
            self.contains is not None,
            self.any_of is not None,
            self.regex is not None,
            self.absent,
        ]
        if sum(given) != 1:
            raise ValueError(
                "an argument check has exactly one of equals/contains/any_of/regex/absent"
            )
        if self.regex is not None:
            re.compile(self.regex)
        return self

    def describe(self) -> str:
        """The expectation in words, for reports."""
        if self.absent:
            return "absent"
        if self.contains is not None:
            return f"contains {self.contains!r}"
        if self.any_of is not None:
            return f"contains one of {self.any_of!r}"
        if self.regex is not None:
            return f"matches /{self.regex}/"
        return f"equals {self.equals!r}"

    def holds(self, present: bool, value: Any) -> bool:
        """Whether an argument (given or not, and its value) meets the expectation."""
        if self.absent:
            return not present
        if not present:
            return False
        if self.equals is not None:
            if isinstance(self.equals, str) and isinstance(value, str):
                return self.equals.casefold() == value.casefold().strip()
            return bool(self.equals == value)
        text = str(value).casefold()
        if self.contains is not None:
            return self.contains.casefold() in text
        if self.any_of is not None:
            return any(option.casefold() in text for option in self.any_of)
        assert self.regex is not None
        return re.search(self.regex, str(value)) is not None


class ExpectedTool(_Model):
    """A tool the companion should call, with expectations on its arguments."""

    name: str
    args: dict[str, ArgCheck] = Field(default_factory=dict)


class DbCheck(_Model):
    """A read-only query run on the case's database after the turn, and its expected rows."""

    sql: str
    rows: list[list[Any]]


class Expectation(_Model):
    """What a good companion does with the case."""

    tools: list[ExpectedTool] = Field(default_factory=list)  # in order
    optional_tools: list[str] = Field(default_factory=list)  # may run; not counted either way
    forbidden_tools: list[str] = Field(default_factory=list)  # "*" = any tool
    answer_contains: list[str | list[str]] = Field(default_factory=list)  # list = any of
    answer_not_contains: list[str] = Field(default_factory=list)
    max_loops: int = Field(default=MAX_TOOL_LOOPS, ge=0)
    db: list[DbCheck] = Field(default_factory=list)


class Case(_Model):
    """One scenario: a prepared world, a user message and the expected behaviour."""

    id: str = Field(pattern=ID_PATTERN)
    suite: str = ""  # filled in from the file name
    language: Literal["en", "id"]
    description: str = ""
    paraphrase_of: str | None = None  # the original case this one rewords
    now: AwareDatetime  # the clock of the store and the tools during the turn
    timezone: str = "UTC"
    location: Location | None = None  # None = not set (0, 0)
    memories: list[SeedMemory] = Field(default_factory=list)
    sessions: dict[str, str] = Field(default_factory=dict)  # other chats: key -> title
    history: list[HistoryMessage] = Field(default_factory=list)
    message: str = Field(min_length=1)
    image: str | None = None  # an image uploaded with this message (static fixture name)
    style_note: str | None = None  # a one-turn note sent with the message ("Answer in…")
    script: list[ScriptStep] = Field(default_factory=list)
    # how the person answers when a call waits for their yes (graph.routing.clearance)
    confirm: Literal["allow", "deny"] = "deny"
    expect: Expectation

    @model_validator(mode="after")
    def _history_before_now(self) -> Case:
        times = [m.at for m in self.history]
        if times != sorted(times):
            raise ValueError("history must be in chronological order")
        if times and times[-1] > self.now:
            raise ValueError("history cannot be later than `now`")
        for key in self.sessions:
            if not re.fullmatch(ID_PATTERN, key):
                raise ValueError(f"session key {key!r} must match {ID_PATTERN}")
        unknown = {m.session for m in self.history if m.session} - self.sessions.keys()
        if unknown:
            raise ValueError(f"history names undeclared session(s) {sorted(unknown)}")
        return self

    def tool_names(self) -> set[str]:
        """Every tool this case names (expected, forbidden or scripted)."""
        names = {t.name for t in self.expect.tools} | set(self.expect.optional_tools)
        names |= {t for t in self.expect.forbidden_tools if t != "*"}
        names |= {s.tool for s in self.script if s.tool}
        return names


def suite_names(folder: Path = DATASETS) -> list[str]:
    """The suites available (dataset file stems), sorted."""
    return sorted(path.stem for path in folder.glob("*.jsonl"))


def parse_suite(path: Path, known_tools: Iterable[str] | None = None) -> list[Case]:
    """The validated cases of one dataset file."""
    known = set(known_tools) if known_tools is not None else None
    cases: list[Case] = []
    originals: dict[str, dict[str, Any]] = {}  # id -> its line, for its paraphrases
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path.name}:{number}"
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise CaseError(f"{where}: not valid JSON ({exc})") from exc
        if not isinstance(data, dict):
            raise CaseError(f"{where}: a case is a JSON object")
        if "suite" in data:
            raise CaseError(f"{where}: `suite` comes from the file name; remove it")
        if "paraphrase_of" in data:
            data = _paraphrase(data, originals, where)
        else:
            originals[str(data.get("id"))] = data
        try:
            case = Case.model_validate({**data, "suite": path.stem})
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'case'}: {e['msg']}" for e in exc.errors()
            )
            raise CaseError(f"{where}: {problems}") from exc
        if known is not None and (unknown := case.tool_names() - known):
            raise CaseError(f"{where}: unknown tool(s) {', '.join(sorted(unknown))}")
        cases.append(case)
    return cases


def _paraphrase(
    data: dict[str, Any], originals: dict[str, dict[str, Any]], where: str
) -> dict[str, Any]:
    """A paraphrase line completed from its original (an earlier line of the same file)."""
    extra = set(data) - PARAPHRASE_FIELDS
    if extra:
        raise CaseError(
            f"{where}: a paraphrase takes its world and expectations from its original; "
            f"remove {', '.join(sorted(extra))}"
        )
    original = originals.get(str(data["paraphrase_of"]))
    if original is None:
        raise CaseError(
            f"{where}: paraphrase_of {data['paraphrase_of']!r} names no earlier original "
            "case of this file"
        )
    if data.get("message") == original.get("message"):
        raise CaseError(f"{where}: a paraphrase says the same thing in other words")
    return {**original, "description": "", **data}


def load_cases(
    suites: Iterable[str] | None = None,
    *,
    folder: Path = DATASETS,
    known_tools: Iterable[str] | None = None,
) -> list[Case]:
    """The cases of the named suites (all suites when None), validated, ids unique."""
    available = suite_names(folder)
    wanted = list(suites) if suites else available
    missing = [name for name in wanted if name not in available]
    if missing:
        raise CaseError(f"unknown suite(s) {', '.join(missing)}; available: {', '.join(available)}")
    known = list(known_tools) if known_tools is not None else None
    cases: list[Case] = []
    seen: dict[str, str] = {}
    for name in wanted:
        for case in parse_suite(folder / f"{name}.jsonl", known):
            if case.id in seen:
                raise CaseError(f"duplicate case id {case.id!r} in {seen[case.id]} and {name}")
            seen[case.id] = name
            cases.append(case)
    return cases
