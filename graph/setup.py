"""Wire a runtime Context from configuration: settings, store, models, tools.

The one place the application turns flags + environment + profile into live objects;
the CLI, the app and the eval runner all start here. ``open_store`` picks the backend:
a SQLite file under the home by default, or the shared Postgres database of
COMPANION_DATABASE_URL (``memory.backends`` decides). ``People`` is the app's view of who
uses it: one person with no login by default, or the people of ``memory.open_accounts``,
each with a ``ContextFactory`` over their own data. ``collect_less`` sets the garbage
collector as a serving process wants it.
"""

from __future__ import annotations

import functools
import gc
import logging
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from config.settings import Settings, database_url, load_settings
from graph.context import Context
from memory import (
    OWNER,
    AccountsUnavailable,
    AsyncStore,
    Message,
    Person,
    backends,
    open_accounts,
    release_connections,
)
from nodes.build_context import system_text
from providers import (
    Embedder,
    lazy_local_model,
    local_server,
    make_chat_model,
    make_vision_model,
    open_embedder,
    unchosen_model,
)
from tools.registry import ToolRegistry, home_registry

# The collector's young generation is collected every this many new container objects
# (CPython's default: 700). A tool turn makes about 8,000, most of them gone by its end.
COLLECT_EVERY = 10_000


def collect_less() -> None:
    """The garbage collector as a serving process wants it (``companion`` calls it once it
    serves). What start-up made (modules, the UI, the clients: about 300,000 objects) is
    moved out of its reach: they live as long as the process, and a full collection that
    scanned them took 150-400 ms on 2 cores inside whichever turn it fell in. And the
    young generation is collected every ``COLLECT_EVERY`` new containers, not 700: fewer
    of a turn's short-lived objects outlive a collection, so the older generations fill
    slower. 32 sessions at once (``bench.concurrency``): the collector's time 445-460 ->
    225 ms, the event loop's CPU 13.4-14.3 -> 12.2-12.5 ms a turn."""
    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(COLLECT_EVERY, middle, old)


@contextmanager
def collecting_less() -> Iterator[None]:
    """``collect_less`` for the block, then the collector as it was (benches that run in a
    test process: the app keeps it for as long as it runs)."""
    before = gc.get_threshold()
    collect_less()
    try:
        yield
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)


def resolve_home(flags: Mapping[str, Any] | None, env: Mapping[str, str]) -> Path:
    """COMPANION_HOME from flags or environment (needed before the profile can be read)."""
    home = (flags or {}).get("home") or env.get("COMPANION_HOME") or "~/.companion"
    return Path(str(home)).expanduser()


log = logging.getLogger("companion.setup")


def open_store(
    flags: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    *,
    person: str = OWNER,
) -> AsyncStore:
    """One person's store: the SQLite file of the home (``--home``), or, with
    COMPANION_DATABASE_URL, their rows of the shared Postgres database (``person``) with
    their images in the home's media folder."""
    env = os.environ if env is None else env
    return backends.open_store(resolve_home(flags, env), database_url(flags, env), person=person)


async def startup_settings(factory: ContextFactory, *, warm: bool = False) -> Settings:
    """The settings before the app's own loop starts (``companion``, ``companion doctor``):
    read on a loop of their own, whose connections then close; ``warm``: the bundled
    model starts loading meanwhile (``warm_local_model``)."""
    try:
        ctx = await factory()
        if warm:
            await warm_local_model(ctx)
        return ctx.settings
    finally:
        await release_connections()


async def warm_local_model(ctx: Context) -> None:
    """With the bundled model, start its server now in the background and have a new
    chat's first system message processed, so the first message finds the model loaded
    and that prompt in its cache (providers.LocalServer.warm), and its client made
    (``LazyLocalChatModel.connect_early``); nothing for another model."""
    if not ctx.settings.is_local:
        return
    tools = await ctx.registry.enabled(ctx.tool_context(None))
    system = system_text(ctx.settings, tools, (ctx.clock or ctx.store.clock)())
    server = local_server()
    server.log_dir = ctx.settings.home / "logs"
    server.warm(system)
    connect_early = getattr(ctx.chat_model, "connect_early", None)
    if connect_early is not None:  # the bundled model's client, made while it loads
        connect_early()


def context_for(
    settings: Settings,
    store: AsyncStore,
    *,
    registry: ToolRegistry | None = None,
    chat_model: Any = None,
    vision_model: Any = None,
) -> Context:
    """A Context for given settings and store; models built unless passed in."""
    model = chat_model or _lazy_chat_model(settings)
    return Context(
        settings=settings,
        store=store,
        chat_model=model,
        vision_model=vision_model if vision_model is not None else make_vision_model(settings),
        registry=registry or home_registry(settings.home),
        # The tiny local model writes poor summaries: it gets the extractive fallback.
        summarize=None if settings.is_local or chat_model is not None else model_summarizer(model),
        embedder=_embedder(settings),
    )


_EMBEDDERS: dict[tuple[str, str | None, str | None], Embedder | None] = {}


def _embedder(settings: Settings) -> Embedder | None:
    """The settings' embedder, one per process for the same choice: the bundled one
    loads its weights once, not once per rebuilt Context."""
    key = (settings.embedding_model, settings.base_url, settings.api_key)
    if key not in _EMBEDDERS:
        _EMBEDDERS[key] = open_embedder(settings)
    return _EMBEDDERS[key]


class ContextFactory:
    """The app's store, opened once, and the Context for the profile as it is now.

    ``await factory()`` reads the profile (off the event loop) and rebuilds the Context,
    with its model clients and their HTTP connections, only when the profile has changed
    since the last call, not on every turn.
    """

    def __init__(
        self,
        flags: Mapping[str, Any] | None = None,
        env: Mapping[str, str] | None = None,
        *,
        chat_model: Any = None,
        vision_model: Any = None,
        registry: ToolRegistry | None = None,
        person: str = OWNER,
        accounts_on: bool = False,
    ) -> None:
        self.flags, self.env = flags, os.environ if env is None else env
        self.person = person
        self.accounts_on = accounts_on  # the profile is a person's, not the operator's
        self.models = {"chat_model": chat_model, "vision_model": vision_model}
        self.registry = registry
        self._built: tuple[tuple[bool, tuple[tuple[str, str], ...]], Context] | None = None

    @functools.cached_property
    def store(self) -> AsyncStore:
        """The person's store, opened on first use (a refused ``chat --user`` opens none)."""
        return open_store(self.flags, self.env, person=self.person)

    async def __call__(self) -> Context:
        profile = await self.store.profile()
        key = (self.accounts_on, tuple(sorted(profile.items())))
        if self._built is None or self._built[0] != key:
            settings = load_settings(self.flags, self.env, profile, accounts_on=self.accounts_on)
            context = context_for(settings, self.store, registry=self.registry, **self.models)
            self._built = (key, context)
        return self._built[1]


class UnknownPerson(PermissionError):
    """A request names no person of this Companion (accounts are on)."""


class People:
    """Who uses this Companion, and a ``ContextFactory`` per person.

    Until a first account is added (``companion user add``), one person uses it with no
    login (or the single COMPANION_PASSWORD): every request gets ``default``. Once there
    are accounts (decided when the app starts: restart it after adding the first one),
    every request names its person through Gradio's login, and each person gets a factory
    over their own data and media folder (``Person.home``), so nothing one person's
    handlers or tools reach can hold another's data. The first person owns the home's own
    database (on Postgres: the ``OWNER`` rows and the home's media folder), so the
    conversations from before accounts stay theirs.

    With COMPANION_DATABASE_URL the accounts are Postgres's ``users`` table, shared by
    every app process, and each person's store is their rows of the shared database.
    """

    def __init__(
        self,
        flags: Mapping[str, Any] | None = None,
        env: Mapping[str, str] | None = None,
        *,
        default: ContextFactory | None = None,
        **models: Any,
    ) -> None:
        self.flags = dict(flags or {})
        self.env = os.environ if env is None else env
        self.root = resolve_home(flags, self.env)
        self.models = models  # chat_model, vision_model, registry (tests pass scripted ones)
        self.default = default or ContextFactory(flags, self.env, **models)
        self.url = database_url(flags, self.env)
        self.accounts = open_accounts(self.root, self.url)
        self.accounts_on = self.accounts.enabled()
        self.default.accounts_on = self.accounts_on  # before its first call: settings follow
        self._people: dict[str, Person] = {}  # by login name: a request asks the registry once
        self._factories: dict[int, ContextFactory] = {}

    @classmethod
    def single(cls, factory: ContextFactory) -> People:
        """One person around an existing factory (tests, and the CLI's own factory)."""
        models = {"registry": factory.registry, **factory.models}
        return cls(factory.flags, factory.env, default=factory, **models)

    @property
    def scope(self) -> str:
        """What the processes of one Companion share: its database (without a password),
        or its home folder."""
        if self.url is not None:
            parts = urlsplit(self.url)
            return parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl()
        return str(self.root.resolve())

    def check(self, name: str, password: str) -> bool:
        """Gradio's login: is this a person of this Companion, with this password?"""
        if not self.accounts_on:
            return False
        try:
            return self.accounts.check(name, password) is not None
        except AccountsUnavailable:  # the database is down
            log.exception("could not check a login")
            return False

    def _home(self, person: Person) -> Path:
        """The folder of the person's data: the home itself for the first person."""
        return self.root if self.accounts.is_first(person) else person.home(self.root)

    def factory(self, name: str | None) -> ContextFactory:
        """The factory of the person a request names (``request.username``).

        Raises UnknownPerson when accounts are on and ``name`` is no one's: a request
        without a login never falls back to someone's data.
        """
        if not self.accounts_on:
            return self.default
        person = self._people.get(name or "")
        if person is None:
            person = self.accounts.get(name or "") if name else None
            if person is None:
                raise UnknownPerson(f"no person named {name!r}")
            self._people[person.name] = self._people[name or ""] = person
        if self.accounts.is_first(person):
            return self.default
        factory = self._factories.get(person.id)
        if factory is None:
            flags = {**self.flags, "home": str(person.home(self.root))}
            key = self.accounts.person_key(person)
            factory = ContextFactory(flags, self.env, person=key, accounts_on=True, **self.models)
            self._factories[person.id] = factory
        return factory

    def forget(self, name: str) -> None:
        """Drop what this process remembers of ``name`` (their person and factory): after
        their data and account are deleted, a new account of that name is a new person."""
        person = self._people.pop(name, None)
        for key, cached in list(self._people.items()):
            if person is not None and cached.id == person.id:
                del self._people[key]
        if person is not None:
            self._factories.pop(person.id, None)

    def media_owners(self) -> dict[str, Path]:
        """Each person's media folder by their name in lower case (empty without accounts)."""
        if not self.accounts_on:
            return {}
        people = self.accounts.people()
        return {person.name.lower(): self._home(person) / "media" for person in people}

    def media_dirs(self) -> list[Path]:
        """Every person's media folder (the app may serve images from these only)."""
        folders = [self.default.store.media_dir]
        for person in self.accounts.people() if self.accounts_on else []:
            folders.append(self._home(person) / "media")
        return list(dict.fromkeys(folders))


def model_summarizer(model: Any) -> Any:
    """An episodic-summary writer backed by the chat model."""
    from langchain_core.messages import HumanMessage, SystemMessage

    from prompts.templates import SEGMENT_SUMMARY

    async def summarize(messages: list[Message]) -> str:
        lines = "\n".join(f"{m.role}: {m.content[:300]}" for m in messages[-40:])
        reply = await model.ainvoke([SystemMessage(SEGMENT_SUMMARY), HumanMessage(lines)])
        return str(reply.content)

    return summarize


def _lazy_chat_model(settings: Settings) -> Any:
    """The chat model; for the local provider the server starts on the first call."""
    if settings.is_local:
        return lazy_local_model(settings)
    if not settings.chat_model:  # call_model answers with what to choose, calling nothing
        return unchosen_model()
    return make_chat_model(settings)
