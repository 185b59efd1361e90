"""Wire a runtime Context from configuration: settings, store, models, tools.

The one place the application turns flags + environment + profile into live objects;
the CLI, the app and the eval runner all start here.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from config.settings import Settings, load_settings, require_chat_model
from graph.context import Context
from graph.providers import (
    lazy_local_model,
    make_chat_model,
    make_vision_model,
    unchosen_model,
)
from memory.async_store import AsyncSqliteStore, AsyncStore
from memory.store import Message, Store
from tools.registry import ToolRegistry, default_registry


def resolve_home(flags: Mapping[str, Any] | None, env: Mapping[str, str]) -> Path:
    """COMPANION_HOME from flags or environment (needed before the profile can be read)."""
    home = (flags or {}).get("home") or env.get("COMPANION_HOME") or "~/.companion"
    return Path(str(home)).expanduser()


def open_settings(
    flags: Mapping[str, Any] | None = None, env: Mapping[str, str] | None = None
) -> tuple[Settings, Store]:
    """Settings resolved with the profile table of the configured home, and its store."""
    env = os.environ if env is None else env
    store = Store.open_home(resolve_home(flags, env))
    settings = load_settings(flags, env, store.profile())
    return settings, store


def open_context(
    flags: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    *,
    registry: ToolRegistry | None = None,
) -> Context:
    """A ready Context for the configured provider (starts nothing until the first call).

    Raises ConfigError, naming COMPANION_CHAT_MODEL, when no chat model is set.
    """
    settings, store = open_settings(flags, env)
    require_chat_model(settings)
    return context_for(settings, AsyncSqliteStore(store), registry=registry)


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
        registry=registry or default_registry(),
        # The tiny local model writes poor summaries: it gets the extractive fallback.
        summarize=None if settings.is_local or chat_model is not None else model_summarizer(model),
    )


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
    ) -> None:
        self.flags, self.env = flags, os.environ if env is None else env
        self.store = AsyncSqliteStore(Store.open_home(resolve_home(flags, self.env)))
        self.models = {"chat_model": chat_model, "vision_model": vision_model}
        self.registry = registry
        self._built: tuple[tuple[tuple[str, str], ...], Context] | None = None

    async def __call__(self) -> Context:
        profile = await self.store.profile()
        key = tuple(sorted(profile.items()))
        if self._built is None or self._built[0] != key:
            settings = load_settings(self.flags, self.env, profile)
            context = context_for(settings, self.store, registry=self.registry, **self.models)
            self._built = (key, context)
        return self._built[1]


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
