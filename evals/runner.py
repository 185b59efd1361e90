"""Run the eval suites through the real graph against a model, and write the reports.

Every case runs as one real turn (``graph.runner.run_turn``) in a fresh temporary
COMPANION_HOME, on a store of ``evals.backends`` seeded with the case's world, with
settings pointed at the fixture servers (started once per run) and the case's
``confirm`` answering any question. ``model_under_test`` resolves what ``companion
eval`` was asked for (no ``--model``: the configured model; ``local``: the bundled one,
replies capped at ``LOCAL_MAX_TOKENS``; a name: that model on the configured endpoint),
each model wrapped in ``evals.staged.StagedChatModel``. ``run_from_cli`` returns the exit
code: 0 when every run passed, 1 when some failed, 2 when the suites could not run.
See docs/evals.md.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
from tqdm import tqdm

from config.settings import (
    ConfigError,
    Settings,
    database_url,
    load_settings,
    require_chat_model,
)
from evals.backends import Backend, CaseClock, SqliteBackend, backend_for
from evals.cases import DATASETS, Case, CaseError, load_cases
from evals.evaluators import Observation, evaluate, observe
from evals.fixtures import FixtureSuite
from evals.judge import ChatJudge
from evals.report import summary_lines, write_reports
from evals.results import CaseRun, EvalRun
from evals.staged import PromptLog, StagedChatModel
from graph.events import ConfirmationAsked, Decision
from graph.runner import run_turn
from graph.setup import context_for, model_summarizer, resolve_home
from memory import AsyncStore
from memory.backends import sqlite_profile
from prompts.templates import persona_text
from providers import LOCAL_MAX_TOKENS
from tools.registry import default_registry

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

log = logging.getLogger("companion.evals")

LOCAL = "local"
# The profile keys that choose the model (the rest of a profile — persona, location,
# image backend — is the user's world, which each case replaces with its own).
MODEL_PROFILE_KEYS = ("chat_model", "vision_model", "tool_mode")


async def _allow(asked: ConfirmationAsked) -> Decision:
    return "allowed"


async def _deny(asked: ConfirmationAsked) -> Decision:
    return "declined"


# A case's answer for the person when a call waits for their yes (``Case.confirm``).
CONFIRM_POLICIES = {"allow": _allow, "deny": _deny}


@dataclass(frozen=True)
class Models:
    """The models one case runs with."""

    chat: BaseChatModel
    vision: BaseChatModel | None = None
    summarize: Any = None  # async (messages) -> str for segments; None = extractive


ModelFactory = Callable[[Settings], Models]


@dataclass(frozen=True)
class ModelUnderTest:
    """What the suites run against: its settings and how to build its models per case."""

    name: str  # as the report shows it
    base: Settings  # resolved once; home, location and fixtures are set per case
    build: ModelFactory  # a case's models from that case's settings
    max_tokens: int | None = None  # reply cap sent to the server (local runs)


def configured_models(settings: Settings, summary_model: str | None = None) -> Models:
    """The configured provider's models (the local one starts its server on first use).
    Seeded histories are summarised extractively, or by ``summary_model`` on the same
    endpoint: never by the model under test, whose calls are what a case measures."""
    from providers import lazy_local_model, make_chat_model, make_vision_model

    summarize = None
    if summary_model:
        summarizer = make_chat_model(dataclasses.replace(settings, chat_model=summary_model))
        summarize = model_summarizer(summarizer)
    if settings.is_local:
        return Models(lazy_local_model(settings), summarize=summarize)
    return Models(make_chat_model(settings), make_vision_model(settings), summarize)


def configured_profile(env: Mapping[str, str]) -> dict[str, str]:
    """The model keys of the configured home's profile (none when it has no database)."""
    profile = sqlite_profile(resolve_home(None, env))
    return {key: value for key, value in profile.items() if key in MODEL_PROFILE_KEYS}


def model_under_test(
    model: str | None = None,
    *,
    tool_mode: str | None = None,
    base_url: str | None = None,
    env: Mapping[str, str] | None = None,
    profile: Mapping[str, str] | None = None,
    summary_model: str | None = None,
) -> ModelUnderTest:
    """Resolve ``--model`` (raises ConfigError when it cannot run): None = the configured
    model, ``"local"`` = the bundled one, any other name = that model on the configured
    endpoint. ``profile`` defaults to the configured home's (read for None only).
    ``summary_model`` (``--summary-model``) summarises seeded histories, on the configured
    endpoint; without it they are summarised extractively."""
    env = os.environ if env is None else env
    flags: dict[str, Any] = {
        "home": tempfile.gettempdir(),  # replaced per case
        "tool_mode": tool_mode,
        "base_url": base_url,
    }
    if model == LOCAL:
        flags["provider"] = "local"
    elif model:
        flags.update(provider="openai-compatible", chat_model=model)
    if model is None and profile is None:
        profile = configured_profile(env)
    settings = load_settings(flags, env, profile if model is None else None)
    if not settings.is_local and not settings.base_url:
        raise ConfigError(
            f"model {settings.chat_model!r} needs an endpoint: pass --base-url or set "
            "COMPANION_BASE_URL (or OPENROUTER_API_KEY for OpenRouter)"
        )
    name = LOCAL if model == LOCAL else require_chat_model(settings).chat_model or ""
    if summary_model and not settings.base_url:
        raise ConfigError(
            f"--summary-model {summary_model!r} needs an endpoint: pass --base-url or set "
            "COMPANION_BASE_URL"
        )
    cap = LOCAL_MAX_TOKENS if settings.is_local else None
    build = partial(configured_models, summary_model=summary_model)
    return ModelUnderTest(name, settings, build, cap)


def case_settings(
    model: ModelUnderTest, case: Case, home: Path, fixtures: FixtureSuite
) -> Settings:
    """The settings one case runs with."""
    location = case.location
    return dataclasses.replace(
        model.base,
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


async def seed(
    store: AsyncStore, clock: CaseClock, case: Case, session_id: str, images: ImageCache
) -> str | None:
    """Write the case's memories and history (other chats under their titles) through the
    store's async interface; returns the path of the turn's image, if any. Each message
    is stored while the store's clock shows its time, then the clock goes back to the
    case's "now"."""
    for memory in case.memories:
        await store.remember(memory.category, memory.key, memory.value, case.now)
    try:
        for index, message in enumerate(case.history):
            path = images.save(message.image, store.media_dir, index) if message.image else None
            clock.now = message.at
            await store.add_message(
                message.session or session_id, message.role, message.text, image_path=path
            )
    finally:
        clock.now = case.now
    for key, title in case.sessions.items():
        await store.rename_session(key, title)
    return images.save(case.image, store.media_dir, len(case.history)) if case.image else None


async def run_case(
    case: Case,
    model: ModelUnderTest,
    fixtures: FixtureSuite,
    images: ImageCache,
    *,
    run: int = 1,
    with_judge: bool = False,
    judge: ChatJudge | None = None,
    backend: Backend | None = None,
) -> CaseRun:
    """Run one case once in a fresh home (and, on Postgres, as a new person) and check
    the outcome."""
    backend = backend or SqliteBackend()
    clock = CaseClock(case.now)
    with tempfile.TemporaryDirectory(prefix=f"companion-eval-{case.id}-") as folder:
        home = Path(folder)
        async with backend.open(case, run, home, clock) as opened:
            store = opened.store
            settings = case_settings(model, case, home, fixtures)
            models = model.build(settings)
            prompts = PromptLog()
            chat = StagedChatModel(
                model=models.chat, forced=case.script, tool_mode=settings.tool_mode, log=prompts
            )
            vision = (
                StagedChatModel(model=models.vision, role="vision", log=prompts)
                if models.vision is not None
                else None
            )
            ctx = context_for(
                settings,
                store,
                registry=default_registry(),
                chat_model=chat,
                vision_model=vision,
            )
            ctx = dataclasses.replace(
                ctx,
                summarize=models.summarize,
                style_note=case.style_note,
                confirm=CONFIRM_POLICIES[case.confirm],
            )
            session_id = f"eval-{case.id}"
            image_path = await seed(store, clock, case, session_id, images)
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
                observation = observe(
                    result,
                    await store.messages(session_id),
                    [await opened.rows(check.sql) for check in case.expect.db],
                    prompts=prompts.calls,
                    identity=persona_text(settings.persona),
                )
            checks = evaluate(
                case, observation, judge or ChatJudge(models.chat), with_judge=with_judge
            )
            return CaseRun(case, run, observation, checks)


def _judge(model: ModelUnderTest) -> ChatJudge:
    """The judge for --judge: the model under test."""
    return ChatJudge(model.build(model.base).chat, model.name)


async def arun_suites(
    suites: Sequence[str] | None = None,
    *,
    model: ModelUnderTest | None = None,
    repeat: int = 1,
    judge: bool = False,
    limit: int | None = None,
    case_ids: Sequence[str] | None = None,
    paraphrases: bool = True,
    env: Mapping[str, str] | None = None,
    progress: bool = True,
    database_url: str | None = None,
    folder: Path = DATASETS,
) -> EvalRun:
    """Run the suites (all when None; read from ``folder``) ``repeat`` times each against
    ``model`` (the configured one when None); ``paraphrases=False`` runs the original cases only;
    ``case_ids``: only those cases (``--cases``; an unknown id is a ValueError);
    ``database_url``: every case run a new person of that migrated Postgres database
    (default: a SQLite file per case run)."""
    if repeat < 1:
        raise ValueError(f"repeat must be at least 1, got {repeat}")
    cases = load_cases(suites, folder=folder, known_tools=default_registry().names)
    if not paraphrases:
        cases = [case for case in cases if case.paraphrase_of is None]
    if case_ids:
        cases = chosen(cases, case_ids)
    if limit is not None:
        cases = cases[:limit]
    model = model or model_under_test(env=env)
    the_judge = _judge(model) if judge else None
    run = EvalRun(
        model=model.name,
        tool_mode=model.base.tool_mode,
        max_tokens=model.max_tokens,
        repeat=repeat,
        judge=judge,
        started=datetime.now(UTC),
        cases=cases,
    )
    backend = backend_for(database_url)
    run.backend = backend.name
    began = time.perf_counter()
    try:
        await backend.check()
        bar = tqdm(
            total=len(cases) * repeat,
            desc=f"eval {run.model}",
            file=sys.stderr,
            disable=not progress,
        )
        with FixtureSuite() as fixtures, bar:
            images = ImageCache(fixtures)
            for index in range(1, repeat + 1):
                for case in cases:
                    bar.set_postfix_str(case.id)
                    outcome = await run_case(
                        case,
                        model,
                        fixtures,
                        images,
                        run=index,
                        with_judge=judge,
                        judge=the_judge,
                        backend=backend,
                    )
                    run.runs.append(outcome)
                    bar.update()
    finally:
        await backend.close()
    run.seconds = time.perf_counter() - began
    return run


def chosen(cases: Sequence[Case], ids: Sequence[str]) -> list[Case]:
    """The cases named in ``ids``, in the suites' order; ValueError naming any unknown."""
    unknown = sorted(set(ids) - {case.id for case in cases})
    if unknown:
        raise ValueError(f"no such case in the chosen suites: {', '.join(unknown)}")
    return [case for case in cases if case.id in set(ids)]


def run_suites(suites: Sequence[str] | None = None, **options: Any) -> EvalRun:
    """Run the suites and return the results (see ``arun_suites`` for the options)."""
    return asyncio.run(arun_suites(suites, **options))


def run_from_cli(args: Any, env: Mapping[str, str] | None = None) -> int:
    """``companion eval``: run, write Markdown + JSON reports to ``--out``, print a summary."""
    try:
        model = model_under_test(
            args.eval_model,
            tool_mode=args.tool_mode,
            base_url=args.base_url,
            env=env,
            summary_model=getattr(args, "summary_model", None),
        )
        # The flag only, never COMPANION_DATABASE_URL: each case run writes a new person's
        # rows, so the app's own database is never chosen without being named.
        url = database_url({"database_url": getattr(args, "database_url", None)}, env={})
        run = run_suites(
            args.suite,
            model=model,
            repeat=args.repeat,
            judge=args.judge,
            limit=getattr(args, "limit", None),
            case_ids=[
                i.strip() for i in (getattr(args, "cases", None) or "").split(",") if i.strip()
            ],
            database_url=url,
            folder=Path(args.datasets) if getattr(args, "datasets", None) else DATASETS,
        )
    except (CaseError, ConfigError, ValueError) as exc:
        print(f"companion eval: {exc}", file=sys.stderr)
        return 2
    markdown, data = write_reports(run, Path(args.out))
    for line in summary_lines(run):
        print(line)
    print(f"reports: {markdown} {data}")
    return 0 if run.all_passed else 1
