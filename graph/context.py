"""The runtime context passed to every node: settings, store, models and tools.

Built in one place (``graph.setup``) and given to the graph as ``context=``; nodes read
``runtime.context`` and never the environment. ``tool_context`` is the narrower view a
tool runs with. ``confirm`` is how a turn asks the person before a call that needs their
yes; whoever runs the turn sets it (the chat, the terminal, the eval harness).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from config.settings import Settings
from tools.base import ToolContext

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from graph.events import Confirm
    from memory import AsyncStore, Clock
    from providers import Embedder
    from tools.registry import ToolRegistry


@dataclass
class Context:
    """What a graph run needs besides its state: passed as ``context=`` to the graph."""

    settings: Settings
    store: AsyncStore  # every store call of the graph goes through it, off the event loop
    chat_model: BaseChatModel
    registry: ToolRegistry
    vision_model: BaseChatModel | None = None
    clock: Clock | None = None
    style_note: str | None = None  # this turn's note, after the identity ("For this reply")
    summarize: Any = None  # async (messages) -> str for episodic summaries; None = extractive
    stream_tokens: bool = True  # stream the model's text and live progress (run_turn: off)
    # asks the person to allow a call that needs their yes (graph.routing.clearance);
    # None: there is nobody to ask, and such a call is declined
    confirm: Confirm | None = None
    embedder: Embedder | None = None  # recall's vectors (providers.embeddings); None: lexical

    def tool_context(
        self, session_id: str | None, user_message_id: int | None = None
    ) -> ToolContext:
        """The context tools run with (their gates read it too)."""
        return ToolContext(
            settings=self.settings,
            store=self.store,
            session_id=session_id,
            clock=self.clock or self.store.clock,
            vision_available=self.vision_model is not None,
            user_message_id=user_message_id,
            embedder=self.embedder,
        )
