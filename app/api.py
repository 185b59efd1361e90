"""The app's API for scripts (gradio_client): plain endpoints beside the page's events.

``/send`` takes a message (and, optionally, a chat id and a one-turn style note) and
returns the answer's text and the chat's id once the turn is done; ``/new_chat``,
``/list_chats`` and ``/history`` start, list and read chats. They act for the person
logged in on the request, as the page does, and run each turn as one of the server's
turns (app.turns), so a page open on that chat follows it. Declared with ``gr.api``:
typed from these signatures, with no page components. Bad input (an unknown chat, an
empty or too-long message) is a ``gr.Error`` with the reason; nothing is stored then.
"""

import dataclasses
from typing import Any

import gradio as gr

from app.chat_handlers import Chats, ChatTab, ensure_session
from graph.events import Answer, TurnError
from graph.runner import too_long

NO_SUCH_CHAT = "No chat with the id {chat_id!r} (list them with /list_chats)."
EMPTY = "The message is empty."
BUSY = "That chat is still answering: wait for it, or send to another chat."


class ScriptApi:
    """The endpoints, over the page's ``Chats`` (each person's store and turns)."""

    def __init__(self, chats: Chats) -> None:
        self.chats = chats

    async def send(
        self, request: gr.Request, message: str, chat_id: str = "", style_note: str = ""
    ) -> tuple[str, str]:
        """Send ``message`` to the chat ``chat_id`` (a new chat when empty) and wait for
        the answer; returns (answer, chat_id). ``style_note`` applies to this reply only."""
        tab = self.chats.of(request)
        text = (message or "").strip()
        if not text:
            raise gr.Error(EMPTY)
        ctx = dataclasses.replace(await tab.make_context(), style_note=style_note.strip() or None)
        refusal = too_long(text, ctx.settings.max_message_chars)
        if refusal:
            raise gr.Error(refusal)
        if chat_id:
            await self._existing(tab, chat_id)
            if tab.turns.live(chat_id):
                raise gr.Error(BUSY)
        chat_id = await ensure_session(tab.store, chat_id or None, text)
        stored = await tab.store.add_message(chat_id, "user", text)
        turn = tab.turns.start(ctx, chat_id, text, stored=stored)
        answer, failure = "", None
        async for event in turn.follow():
            if isinstance(event, Answer):
                answer = event.text
            elif isinstance(event, TurnError):
                failure = event.detail
        return (answer or failure or ""), chat_id

    async def new_chat(self, request: gr.Request, title: str = "New chat") -> str:
        """Start an empty chat; returns its id."""
        tab = self.chats.of(request)
        return (await tab.store.create_session((title or "").strip() or "New chat")).id

    async def list_chats(self, request: gr.Request) -> list[dict[str, str]]:
        """Every chat, most recently active first: id, title and when (the person's time)."""
        return await self.chats.of(request).rows()

    async def history(self, request: gr.Request, chat_id: str) -> list[dict[str, Any]]:
        """The chat's messages, oldest first: role, text and time (tool results included,
        with role "tool")."""
        tab = self.chats.of(request)
        await self._existing(tab, chat_id)
        return [
            {"role": m.role, "text": m.content, "time": m.created_at}
            for m in await tab.store.messages(chat_id)
        ]

    @staticmethod
    async def _existing(tab: ChatTab, chat_id: str) -> None:
        if await tab.store.get_session(chat_id) is None:
            raise gr.Error(NO_SUCH_CHAT.format(chat_id=chat_id))


def register(chats: Chats) -> ScriptApi:
    """Declare the endpoints inside the current Blocks."""
    api = ScriptApi(chats)
    for name in ("send", "new_chat", "list_chats", "history"):
        gr.api(getattr(api, name), api_name=name)
    return api
