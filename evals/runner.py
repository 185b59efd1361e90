"""Run the eval suites through the real graph and write the reports.

Every case runs as one real turn (``graph.runner.run_turn``) in a fresh temporary
COMPANION_HOME: a real SQLite store on the case's fixed clock, seeded with its memories
and history (uploaded images fetched from the image fixture), settings resolved by
``graph.context.load_settings`` and pointed at the fixture servers (DuckDuckGo,
Open-Meteo, image backend — started once per run), the case's location and timezone.

Models (``model``):

- ``"scripted"`` (default, what CI runs): ``evals.scripted.ScriptedCompanion`` as both
  the chat and the vision model; no process, no network, deterministic;
- ``"local"``: the bundled SmolLM2 served by llama.cpp on loopback (``tool_mode``
  commands unless told otherwise); no vision model. Replies are capped at
  ``LOCAL_MAX_TOKENS`` tokens (graph.models applies the cap; the report records it);
- any other name: that model on the configured OpenAI-compatible endpoint
  (``--base-url`` or COMPANION_BASE_URL / OPENROUTER_API_KEY; vision model from
  COMPANION_VISION_MODEL).

``companion eval`` exit code: 0 when every run of every case passed, 1 when the suites
ran and some run failed, 2 when they could not run (unknown suite, invalid dataset,
missing endpoint configuration).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from tqdm import tqdm

from evals.cases import Case, CaseError, load_cases
from evals.evaluators import CheckResult, Observation, evaluate, observe
from evals.fixtures import FixtureSuite
from evals.judge import ChatJudge
from evals.scripted import ScriptedCompanion
from graph.context import ConfigError, Settings, load_settings
from graph.fake import ScriptedChatModel
from graph.models import LOCAL_MAX_TOKENS
from graph.runner import run_turn
from graph.setup import context_for
from memory.memories import create_memory
from memory.store import Store
from tools.registry import default_registry

log = logging.getLogger("companion.evals")

SCRIPTED = "scripted"
LOCAL = "local"
SCRIPTED_CHAT = "scripted-chat"
SCRIPTED_VISION = "scripted-vision"


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

    @property
    def all_passed(self) -> bool:
        """True when every run of every case passed."""
        return all(run.passed for run in self.runs)


@dataclass(frozen=True)
class ModelSetup:
    """How to build each case's settings and models for the chosen ``model``."""

    model: str
    base: Settings  # resolved once; home, location and fixtures are set per case
    max_tokens: int | None = None  # reply cap sent to the server (local runs)

    @property
    def scripted(self) -> bool:
        """True for the deterministic scripted companion."""
        return self.model == SCRIPTED


def model_setup(
    model: str,
    *,
    tool_mode: str | None = None,
    base_url: str | None = None,
    env: Mapping[str, str] | None = None,
) -> ModelSetup:
    """Resolve settings for the chosen model (raises ConfigError when it cannot run)."""
    home: dict[str, str | None] = {"home": tempfile.gettempdir()}  # replaced per case
    if model == SCRIPTED:
        flags = {
            **home,
            "provider": "openai-compatible",
            "chat_model": SCRIPTED_CHAT,
            "vision_model": SCRIPTED_VISION,
            "tool_mode": tool_mode or "native",
        }
        return ModelSetup(model, load_settings(flags, env={}))
    env = os.environ if env is None else env
    if model == LOCAL:
        flags = {**home, "provider": "local", "tool_mode": tool_mode}
        return ModelSetup(model, load_settings(flags, env), LOCAL_MAX_TOKENS)
    flags = {
        **home,
        "provider": "openai-compatible",
        "chat_model": model,
        "base_url": base_url,
        "tool_mode": tool_mode,
    }
    settings = load_settings(flags, env)
    if not settings.base_url:
        raise ConfigError(
            f"model {model!r} needs an endpoint: pass --base-url or set COMPANION_BASE_URL "
            "(or OPENROUTER_API_KEY for OpenRouter)"
        )
    return ModelSetup(model, settings)


def case_settings(setup: ModelSetup, case: Case, home: Path, fixtures: FixtureSuite) -> Settings:
    """The settings one case runs with."""
    location = case.location
    return dataclasses.replace(
        setup.base,
        **fixtures.settings_overrides(),
        home=home,
        latitude=location.lat if location else 0.0,
        longitude=location.lon if location else 0.0,
        timezone=case.timezone,
    )


class ImageCache:
    """Static images of the image fixture, fetched once per run over loopback."""

    def __init__(self, fixtures: FixtureSuite) -> None:
        self.fixtures = fixtures
        self._bytes: dict[str, bytes] = {}

    def save(self, name: str, media_dir: Path, index: int) -> str:
        """Store the named image as an upload under ``media_dir``; returns its path."""
        if name not in self._bytes:
            response = httpx.get(self.fixtures.images.image_url(name), timeout=10, trust_env=False)
            response.raise_for_status()
            self._bytes[name] = response.content
        path = media_dir / f"upload-{index}-{name}"
        path.write_bytes(self._bytes[name])
        return str(path)


def seed(store: Store, case: Case, session_id: str, images: ImageCache) -> str | None:
    """Write the case's memories and history; returns the path of the turn's image, if any."""
    for memory in case.memories:
        create_memory(store, memory.category, memory.key, memory.value, case.now)
    for index, message in enumerate(case.history):
        path = images.save(message.image, store.media_dir, index) if message.image else None
        store.add_message(
            session_id, message.role, message.text, image_path=path, created_at=message.at
        )
    return images.save(case.image, store.media_dir, len(case.history)) if case.image else None


async def run_case(
    case: Case,
    setup: ModelSetup,
    fixtures: FixtureSuite,
    images: ImageCache,
    *,
    run: int = 1,
    with_judge: bool = False,
    judge: ChatJudge | None = None,
    chat_model: Any = None,
) -> CaseRun:
    """Run one case once in a fresh home and check the outcome (``chat_model`` overrides
    the model the settings would build)."""
    with tempfile.TemporaryDirectory(prefix=f"companion-eval-{case.id}-") as folder:
        home = Path(folder)
        store = Store.open_home(home, clock=lambda: case.now)
        try:
            settings = case_settings(setup, case, home, fixtures)
            chat: Any = chat_model
            vision: Any = None
            if case.script and not setup.scripted:
                # the forced replies first, then the model under test
                real = chat_model or real_chat_model(settings)
                chat = ScriptedChatModel(
                    script=ScriptedCompanion(settings.tool_mode, case.script, then=real),
                    name_=settings.chat_model,
                )
            if setup.scripted:
                chat = ScriptedChatModel(
                    script=ScriptedCompanion(settings.tool_mode, case.script), name_=SCRIPTED_CHAT
                )
                vision = ScriptedChatModel(
                    script=ScriptedCompanion(settings.tool_mode), name_=SCRIPTED_VISION
                )
            ctx = context_for(
                settings, store, registry=default_registry(), chat_model=chat, vision_model=vision
            )
            session_id = f"eval-{case.id}"
            image_path = seed(store, case, session_id, images)
            started = time.perf_counter()
            try:
                result = await run_turn(ctx, session_id, case.message, image_path=image_path)
            except Exception as exc:  # a crash is a failed case, not a failed run
                log.exception("case %s crashed", case.id)
                observation = Observation(
                    answer="",
                    seconds=time.perf_counter() - started,
                    error=f"{type(exc).__name__}: {exc}",
                    db_rows=[[] for _ in case.expect.db],
                )
            else:
                observation = observe(result, store, case)
            checks = evaluate(
                case, observation, judge or ChatJudge(ctx.chat_model), with_judge=with_judge
            )
            return CaseRun(case, run, observation, checks)
        finally:
            store.close()


def real_chat_model(settings: Settings) -> Any:
    """The configured chat model (the local one starts its server on first use)."""
    from graph.models import lazy_local_model, make_chat_model

    return lazy_local_model(settings) if settings.is_local else make_chat_model(settings)


def _judge_model(setup: ModelSetup, env: Mapping[str, str]) -> ChatJudge:
    """The judge for --judge: the model under test, or the configured one for scripted runs."""
    settings = setup.base if not setup.scripted else load_settings({}, env)
    return ChatJudge(real_chat_model(settings), settings.chat_model)


async def arun_suites(
    suites: Sequence[str] | None = None,
    *,
    model: str = SCRIPTED,
    repeat: int = 1,
    tool_mode: str | None = None,
    base_url: str | None = None,
    judge: bool = False,
    limit: int | None = None,
    env: Mapping[str, str] | None = None,
    progress: bool = True,
) -> EvalRun:
    """Run the suites (all when None) ``repeat`` times each; the async form of run_suites."""
    if repeat < 1:
        raise ValueError(f"repeat must be at least 1, got {repeat}")
    env = os.environ if env is None else env
    cases = load_cases(suites, known_tools=default_registry().names)
    if limit is not None:
        cases = cases[:limit]
    setup = model_setup(model, tool_mode=tool_mode, base_url=base_url, env=env)
    the_judge = _judge_model(setup, env) if judge else None
    run = EvalRun(
        model=model if not setup.scripted else SCRIPTED,
        tool_mode=setup.base.tool_mode,
        max_tokens=setup.max_tokens,
        repeat=repeat,
        judge=judge,
        started=datetime.now(UTC),
        cases=cases,
    )
    began = time.perf_counter()
    bar = tqdm(
        total=len(cases) * repeat, desc=f"eval {run.model}", file=sys.stderr, disable=not progress
    )
    with FixtureSuite() as fixtures, bar:
        images = ImageCache(fixtures)
        for index in range(1, repeat + 1):
            for case in cases:
                bar.set_postfix_str(case.id)
                outcome = await run_case(
                    case,
                    setup,
                    fixtures,
                    images,
                    run=index,
                    with_judge=judge,
                    judge=the_judge,
                )
                run.runs.append(outcome)
                bar.update()
    run.seconds = time.perf_counter() - began
    return run


def run_suites(suites: Sequence[str] | None = None, **options: Any) -> EvalRun:
    """Run the suites and return the results (see ``arun_suites`` for the options)."""
    return asyncio.run(arun_suites(suites, **options))


def run_from_cli(args: Any) -> int:
    """``companion eval``: run, write Markdown + JSON reports to ``--out``, print a summary."""
    from evals.report import summary_lines, write_reports

    try:
        run = run_suites(
            args.suite,
            model=args.eval_model,
            repeat=args.repeat,
            tool_mode=args.tool_mode,
            base_url=args.base_url,
            judge=args.judge,
            limit=getattr(args, "limit", None),
        )
    except (CaseError, ConfigError, ValueError) as exc:
        print(f"companion eval: {exc}", file=sys.stderr)
        return 2
    markdown, data = write_reports(run, Path(args.out))
    for line in summary_lines(run):
        print(line)
    print(f"reports: {markdown} {data}")
    return 0 if run.all_passed else 1
