"""Fakes for the app's handlers, no browser: one person, a request, and a turn runtime.

The person's store is a real store in a temporary home (it fails like the real one);
``FakeTurns`` has the face of ``Turns`` (live, start, stop, decide) and answers each
message with "echo: …", stored and published like a real turn's events.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from app.turns import LiveTurn
from graph.events import Answer, ModelDone, TextDelta, UserStored
from graph.setup import ContextFactory
from tests.support.chat_model import ScriptedChatModel

FAKE_MODEL = "fake-model"
ANSWERED_BY = [{"kind": "model", "name": "call_model", "detail": {"model": FAKE_MODEL}}]


def person(home: Path, **flags: Any) -> ContextFactory:
    """A person's context factory over a store in ``home`` (its model never called)."""
    base = {"home": str(home), "provider": "openai-compatible", "chat_model": FAKE_MODEL}
    return ContextFactory({**base, **flags}, env={}, chat_model=ScriptedChatModel())


class OnePerson:
    """``People`` with one person: every login gets ``factory``."""

    def __init__(self, factory: ContextFactory) -> None:
        self.one = factory
        self.flags: dict[str, Any] = dict(factory.flags or {})
        self.env: dict[str, str] = {}
        self.accounts_on = False

    def factory(self, username: str | None) -> ContextFactory:
        return self.one


def request(username: str | None = None) -> Any:
    """What a handler reads of ``gr.Request``: the login and the page (its session hash)."""
    return SimpleNamespace(username=username, session_hash="page-1")


class FakeTurns:
    """The turn runtime: each turn stores its user message (unless given it stored), then
    "echo: <text>" as the answer. ``hold`` keeps new turns running until ``release``."""

    owner = "fake-process"

    def __init__(self, store: Any) -> None:
        self.store = store
        self.started: list[dict[str, Any]] = []
        self.stopped: list[tuple[str, Any]] = []
        self.decided: list[tuple[str, str, bool]] = []
        self.waiting: set[str] = set()  # question ids a turn waits on
        self.hold = False
        self._gate = asyncio.Event()
        self._turns: list[LiveTurn] = []

    def live(self, session_id: str) -> list[LiveTurn]:
        return [t for t in self._turns if t.session_id == session_id and not t.finished.is_set()]

    def start(
        self,
        ctx: Any,
        session_id: str,
        text: str,
        *,
        image_path: str | None = None,
        stored: Any = None,
        meta: dict[str, Any] | None = None,
    ) -> LiveTurn:
        turn = LiveTurn(session_id, stored.content if stored else text, image_path)
        turn.meta = dict(meta or {})
        before = next(reversed(self.live(session_id)), None)  # a turn waits for the one before
        self.started.append({"session": session_id, "text": turn.text, "stored": stored})
        self._turns.append(turn)
        turn.task = asyncio.get_running_loop().create_task(self._run(turn, stored, before))
        return turn

    def release(self) -> None:
        self._gate.set()

    async def _run(self, turn: LiveTurn, stored: Any, before: LiveTurn | None) -> None:
        if before is not None:
            await before.finished.wait()
        if stored is None:
            stored = await self.store.add_message(
                turn.session_id, "user", turn.text, image_path=turn.image_path, meta=turn.meta
            )
        turn.publish(UserStored(stored))
        if self.hold:
            await self._gate.wait()
        reply = f"echo: {turn.text}"
        turn.publish(TextDelta(reply))
        turn.publish(ModelDone())
        answer = await self.store.add_message(turn.session_id, "assistant", reply)
        turn.publish(Answer(reply, answer.id, [], list(ANSWERED_BY)))
        turn.end()

    async def stop(self, session_id: str, store: Any = None) -> bool:
        self.stopped.append((session_id, store))
        return False

    def decide(self, session_id: str, confirmation_id: str, allowed: bool) -> bool:
        self.decided.append((session_id, confirmation_id, allowed))
        return confirmation_id in self.waiting
