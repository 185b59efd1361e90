"""The Graph tab: the compiled graph as a diagram, and any turn of the chat in view.

Every answer keeps its turn's trace (``graph.runner.kept_trace``); the tab lists the
chat's traced turns (``turn_label``: when, and what was asked), newest chosen, and shows
the chosen one (``app.graph_view.turn_markdown``): the person's rating, the path, the
steps, the tokens, each model call's prompt as sent and each tool's arguments and result.
The list is read from the store whenever the tab is opened and whenever the chat in view
changes, so it survives a reload and follows turns sent from elsewhere. The layout and
its reasons: docs/app.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import gradio as gr

from app.graph_view import NO_TRACE, mermaid_markdown, turn_label, turn_markdown
from graph.builder import mermaid
from graph.setup import People
from memory import AsyncStore, Message


@dataclass(frozen=True)
class Turn:
    """One answered turn of a chat: its answer, and the message it answers."""

    answer: Message
    asked: Message | None  # None when the answer has no user message before it
    tools: list[Message]  # the tool results stored between the two


def chat_turns(messages: list[Message], answer_ids: list[int]) -> list[Turn]:
    """The turns whose answers are ``answer_ids``, in the chat's order: each answer with
    the user message before it and the tool results between them."""
    by_id = {m.id: position for position, m in enumerate(messages)}
    turns: list[Turn] = []
    for answer_id in answer_ids:
        position = by_id.get(answer_id)
        if position is None:
            continue
        before = messages[:position]
        start = next((i for i in range(len(before) - 1, -1, -1) if before[i].role == "user"), -1)
        asked = before[start] if start >= 0 else None
        tools = [m for m in before[start + 1 :] if m.is_tool]
        turns.append(Turn(messages[position], asked, tools))
    return turns


class GraphTab:
    """The tab's handlers, over the store of the person logged in on each request."""

    def __init__(self, people: People) -> None:
        self.people = people

    def store(self, request: gr.Request) -> AsyncStore:
        return self.people.factory(request.username).store

    async def turns(self, session_id: str | None, store: AsyncStore) -> list[Turn]:
        if not session_id:
            return []
        answer_ids = await store.traced_answers(session_id)
        return chat_turns(await store.messages(session_id), answer_ids) if answer_ids else []

    async def on_show(self, session_id: str | None, request: gr.Request) -> tuple[Any, str]:
        """The chat's turns in the list, newest chosen, and that turn."""
        store = self.store(request)
        turns = await self.turns(session_id, store)
        if not turns:
            return gr.update(choices=[], value=None), NO_TRACE
        tz = (await self.people.factory(request.username)()).settings.timezone
        now = datetime.now(UTC)
        choices = [
            (
                turn_label(t.answer.created_at, t.asked.content if t.asked else "", tz, now),
                t.answer.id,
            )
            for t in reversed(turns)
        ]
        newest = turns[-1]
        return gr.update(choices=choices, value=newest.answer.id), await self.shown(
            store, session_id, newest
        )

    async def on_pick(
        self, session_id: str | None, answer_id: int | None, request: gr.Request
    ) -> str:
        """The turn chosen in the list."""
        store = self.store(request)
        chosen = [t for t in await self.turns(session_id, store) if t.answer.id == answer_id]
        return await self.shown(store, session_id, chosen[0]) if chosen else NO_TRACE

    @staticmethod
    async def shown(store: AsyncStore, session_id: str | None, turn: Turn) -> str:
        ratings = await store.feedback(session_id)
        rating = next((r for r in ratings if r.message_id == turn.answer.id), None)
        asked = turn.asked.content if turn.asked else ""
        return turn_markdown(await store.turn_trace(turn.answer.id), asked, rating, turn.tools)


def build(people: People, session: gr.State, trace: gr.Markdown, shown: list[Any]) -> None:
    """Lay the tab out inside the current Blocks: the diagram, the list of the chat's
    turns and ``trace``, where the chosen turn shows (the Chat tab also writes the turn it
    just answered there). ``shown`` are the events that read the list again (the tab
    opened, another chat in view); ``session`` is the chat in view."""
    tab = GraphTab(people)
    gr.Markdown("### The conversation graph")
    gr.Markdown(mermaid_markdown(mermaid()), elem_id="graph-diagram")
    gr.Markdown("### Turns of this chat")
    picker = gr.Dropdown(
        label="Turn",
        choices=[],
        value=None,
        interactive=True,
        elem_id="graph-turn",
    )
    trace.render()
    private: dict[str, Any] = {"api_visibility": "private"}
    gr.on(shown, tab.on_show, session, [picker, trace], trigger_mode="always_last", **private)
    picker.input(tab.on_pick, [session, picker], trace, **private)
