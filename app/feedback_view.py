"""👍/👎 under each answer of the chat, and an optional comment: the person's feedback.

The Chatbot's own thumbs (``FEEDBACK_OPTIONS``) rate the answer of the bubble group they
sit under: the group's turn is found by counting the user bubbles before it, as the
chat shows the stored messages (``app.chat_view.history_messages``), and its stored final
answer is rated (``AsyncStore.set_feedback``). A rating opens a small row under the
composer for an optional comment (what went wrong, a tool it should or should not have
used, a fact in quotes: ``evals.feedback`` reads it); clearing a thumb clears the
rating. Whenever the chat in view changes, its ratings show on its answers again
(``feedback_values``, the Chatbot's ``feedback_value``); Retry unsets the last answer's
thumb (the new answer is not rated). The Graph tab shows a turn's
rating and comment; ``companion eval export-feedback`` turns them into eval cases. The
layout: docs/app.md.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import gradio as gr

from app.chat_handlers import ChatComponents
from app.chat_view import history_messages
from graph.setup import People
from memory import AsyncStore, Message, StoreError

log = logging.getLogger("companion.feedback")

FEEDBACK_OPTIONS = ("Like", "Dislike")
RATING_OF = {"Like": 1, "Dislike": -1}  # the thumbs as the store keeps them
OPTION_OF = {rating: option for option, rating in RATING_OF.items()}
ASK = {
    1: "👍 Thanks. Anything to add? (optional)",
    -1: "👎 What went wrong? (optional: a tool it should or should not have used, "
    'a fact it should have said "in quotes")',
}
NOT_RATED = "That answer can't be rated: {reason}"
FOCUS_COMMENT = "() => document.querySelector('#feedback-comment textarea')?.focus()"


def turn_answer(messages: Sequence[Message], asked: Message) -> Message | None:
    """The final answer of the turn that ``asked`` began: its last assistant message
    that is not a step on the way, before the next user message."""
    answer = None
    for message in messages:
        if message.id <= asked.id:
            continue
        if message.role == "user":
            break
        if message.role == "assistant" and not message.meta.get("intermediate"):
            answer = message
    return answer


def _groups(messages: Sequence[Message]) -> list[tuple[int, int]]:
    """Each run of assistant bubbles the chat shows (one group, one set of thumbs): its
    last bubble's position, and how many user bubbles come before it."""
    groups: list[tuple[int, int]] = []
    users, previous = 0, None
    for position, bubble in enumerate(history_messages(messages)):
        if bubble.role == "user":
            users += 1
        elif previous == "assistant":
            groups[-1] = (position, users)
        else:
            groups.append((position, users))
        previous = bubble.role
    return groups


def rated_answer(messages: Sequence[Message], index: Any) -> Message | None:
    """The stored answer rated by the thumbs of the bubble at ``index`` (the LikeData's),
    or None when that bubble answers no user message."""
    position = index[0] if isinstance(index, list | tuple) else index
    if not isinstance(position, int):
        return None
    users = [m for m in messages if m.role == "user"]
    before = sum(bubble.role == "user" for bubble in history_messages(messages)[: position + 1])
    return turn_answer(messages, users[before - 1]) if 0 < before <= len(users) else None


def feedback_values(messages: Sequence[Message], ratings: Mapping[int, int]) -> list[str | None]:
    """The Chatbot's ``feedback_value``: for each group of assistant bubbles, in order,
    the thumb its answer got ("Like", "Dislike") or None."""
    users = [m for m in messages if m.role == "user"]
    values: list[str | None] = []
    for _, before in _groups(messages):
        answer = turn_answer(messages, users[before - 1]) if before else None
        values.append(OPTION_OF.get(ratings.get(answer.id, 0)) if answer else None)
    return values


@dataclass(frozen=True)
class CommentRow:
    """The row a rating opens: what it asks, the comment, Save and Close."""

    row: gr.Row
    words: gr.Markdown
    box: gr.Textbox
    save: gr.Button
    close: gr.Button
    rated: gr.State  # {"id", "rating"} of the answer the comment is for, or None


def comment_row() -> CommentRow:
    """Lay the (hidden) comment row out inside the current Blocks."""
    with gr.Row(visible=False, equal_height=True, elem_id="feedback-row") as row:
        words = gr.Markdown(elem_id="feedback-words")
        box = gr.Textbox(
            label="Comment",
            show_label=False,
            placeholder="Your comment",
            max_lines=4,
            scale=3,
            elem_id="feedback-comment",
        )
        save = gr.Button("Save comment", size="sm", scale=0, min_width=80, elem_id="feedback-save")
        close = gr.Button("Close", size="sm", scale=0, min_width=56, elem_id="feedback-close")
    return CommentRow(row, words, box, save, close, gr.State(None))


class FeedbackHandlers:
    """Rating, commenting and showing the ratings again, in the logged-in person's store."""

    def __init__(self, people: People) -> None:
        self.people = people

    def store(self, request: gr.Request) -> AsyncStore:
        return self.people.factory(request.username).store

    async def on_like(
        self, session_id: str | None, liked: gr.LikeData, request: gr.Request
    ) -> tuple[Any, ...]:
        """A thumb set or cleared: the answer's rating, then the comment row (or, when
        cleared, no row)."""
        store = self.store(request)
        messages = await store.messages(session_id) if session_id else []
        answer = rated_answer(messages, liked.index)
        rating = {True: 1, False: -1}.get(liked.liked) if isinstance(liked.liked, bool) else None
        if answer is None:
            return None, gr.update(visible=False), "", ""
        kept = {f.message_id: f for f in await store.feedback(session_id)}.get(answer.id)
        comment = kept.comment if kept and rating is not None else ""
        try:
            await store.set_feedback(answer.id, rating, comment)
        except StoreError as exc:
            log.exception("the rating of answer %s was not stored", answer.id)
            return None, gr.update(visible=True), NOT_RATED.format(reason=exc), ""
        if rating is None:
            return None, gr.update(visible=False), "", ""
        return {"id": answer.id, "rating": rating}, gr.update(visible=True), ASK[rating], comment

    async def on_comment(
        self, rated: Mapping[str, Any] | None, comment: str, request: gr.Request
    ) -> tuple[Any, ...]:
        """Keep the comment with the rating; the row closes (it stays, saying why, when
        the store refused)."""
        if not rated:
            return None, gr.update(visible=False), gr.skip()
        try:
            await self.store(request).set_feedback(rated["id"], rated["rating"], comment.strip())
        except StoreError as exc:
            log.exception("the comment on answer %s was not stored", rated["id"])
            return rated, gr.update(visible=True), NOT_RATED.format(reason=exc)
        return None, gr.update(visible=False), ""

    async def values(self, session_id: str | None, request: gr.Request) -> list[str | None]:
        """The thumbs of the chat in view, one per group of answer bubbles."""
        if not session_id:
            return []
        store = self.store(request)
        ratings = {f.message_id: f.rating for f in await store.feedback(session_id)}
        return feedback_values(await store.messages(session_id), ratings)

    async def on_retry(self, session_id: str | None, request: gr.Request) -> Any:
        """Retry: the last answer is being given again, and the new one is not rated (the
        old one goes, with its rating)."""
        values = await self.values(session_id, request)
        return gr.update(feedback_value=[*values[:-1], None] if values else [])

    async def on_shown(self, session_id: str | None, request: gr.Request) -> tuple[Any, ...]:
        """Another chat in view: its ratings on its answers, and no comment row open."""
        values = await self.values(session_id, request)
        return gr.update(feedback_value=values), None, gr.update(visible=False)


def wire(people: People, ui: ChatComponents) -> None:
    """Lay the comment row out at the end of the Chat tab and wire the thumbs, the row and
    the ratings shown again whenever the chat in view changes."""
    handlers, row = FeedbackHandlers(people), comment_row()
    private: dict[str, Any] = {"api_visibility": "private"}
    asked = [row.rated, row.row, row.words, row.box]
    ui.chatbot.like(handlers.on_like, ui.session, asked, **private).then(None, js=FOCUS_COMMENT)
    for trigger in (row.save.click, row.box.submit):
        trigger(
            handlers.on_comment, [row.rated, row.box], [row.rated, row.row, row.words], **private
        )
    row.close.click(lambda: (None, gr.update(visible=False)), None, [row.rated, row.row], **private)
    quiet: dict[str, Any] = {"show_progress": "hidden", "trigger_mode": "always_last", **private}
    shown = [ui.chatbot, row.rated, row.row]
    ui.session.change(handlers.on_shown, ui.session, shown, **quiet)
    ui.chatbot.retry(handlers.on_retry, ui.session, ui.chatbot, **quiet)
