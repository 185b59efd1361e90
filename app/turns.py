"""Turns owned by the server, not by the browser request that started them.

``Turns.start`` queues a turn for a session (one runs at a time per session, the others
wait in order) and runs it as its own asyncio task; a page follows it with
``LiveTurn.follow``, every event from the first, so a reload or a second tab follows the
same turn. ``Turns.stop`` cancels it (what it wrote stays, marked ``stopped``) and
``Turns.decide`` answers its Allow/Deny question. The answer so far is written to the
store's running turns as it grows; ``recover_interrupted`` keeps a dead process's text as
its answer, marked ``interrupted``. The design and its reasons: docs/turns.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import time
from collections.abc import AsyncIterator
from typing import Any

from graph.context import Context
from graph.events import (
    Answer,
    ConfirmationAsked,
    ConfirmationDecided,
    Decision,
    ModelDone,
    TextDelta,
    TurnError,
    TurnEvent,
    TurnStopped,
    UserStored,
)
from graph.jobs import PROCESS
from graph.runner import stream_turn
from memory import AsyncStore, Message, RunningTurn

log = logging.getLogger("companion.turns")

OWNER = PROCESS  # this process, as its running_turns rows name it
PARTIAL_EVERY = 0.25  # seconds between two writes of the answer so far
STOP_POLL = 0.3  # seconds between two looks for a Stop asked from another process
CONFIRM_SECONDS = 300.0  # how long a turn waits for the person's Allow/Deny
STOPPED: dict[str, Any] = {"stopped": True}
INTERRUPTED: dict[str, Any] = {"interrupted": True}


class LiveTurn:
    """One turn of a session, queued or running: the events it has produced so far."""

    def __init__(
        self,
        session_id: str,
        text: str,
        image_path: str | None,
        *,
        confirm_seconds: float = CONFIRM_SECONDS,
    ) -> None:
        self.session_id = session_id
        self.text = text  # what was sent (shown as the queued message until it is stored)
        self.image_path = image_path
        self.meta: dict[str, Any] = {}  # kept with its user message (an attached file's text)
        self.confirm_seconds = confirm_seconds
        self.events: list[TurnEvent] = []
        self.failure: Exception | None = None  # a bug or a store failure that ended it
        self.finished = asyncio.Event()
        self._changed = asyncio.Event()
        self._answers: dict[str, asyncio.Future[bool]] = {}  # questions waiting, by id
        self.task: asyncio.Task[None] | None = None

    @property
    def started(self) -> bool:
        """True once its user message is stored (it is no longer waiting its turn)."""
        return any(isinstance(event, UserStored) for event in self.events)

    @property
    def user_message(self) -> Message | None:
        """The stored user message this turn answers, once stored."""
        stored = (e.message for e in self.events if isinstance(e, UserStored))
        return next(stored, None)

    @property
    def asking(self) -> ConfirmationAsked | None:
        """The question the turn is waiting on the person for, if any."""
        decided = {e.id for e in self.events if isinstance(e, ConfirmationDecided)}
        waiting = (
            e for e in self.events if isinstance(e, ConfirmationAsked) and e.id not in decided
        )
        return next(waiting, None)

    async def ask(self, asked: ConfirmationAsked) -> Decision:
        """The person's answer to ``asked`` (given through ``decide``), or ``timed_out``
        after ``confirm_seconds``; this turn's ``Context.confirm``."""
        answer: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._answers[asked.id] = answer
        try:
            async with asyncio.timeout(self.confirm_seconds):
                return "allowed" if await answer else "declined"
        except TimeoutError:
            return "timed_out"
        finally:
            self._answers.pop(asked.id, None)

    def decide(self, confirmation_id: str, allowed: bool) -> bool:
        """Answer the question ``confirmation_id``; False when this turn is not waiting
        for it (answered already, timed out, or never asked here)."""
        answer = self._answers.get(confirmation_id)
        if answer is None or answer.done():
            return False
        answer.set_result(allowed)
        return True

    def publish(self, event: TurnEvent) -> None:
        """Add an event and wake every follower."""
        self.events.append(event)
        self._changed.set()
        self._changed = asyncio.Event()

    def end(self) -> None:
        self.finished.set()
        self._changed.set()

    async def follow(self) -> AsyncIterator[TurnEvent]:
        """Every event of the turn from its first, then each new one until it ends."""
        seen = 0
        while True:
            changed = self._changed
            while seen < len(self.events):
                seen += 1
                yield self.events[seen - 1]
            if self.finished.is_set():
                return
            await changed.wait()


class Turns:
    """The turns of one process, by session: at most one runs per session, the others
    wait in order."""

    def __init__(self, *, owner: str = OWNER, confirm_seconds: float = CONFIRM_SECONDS) -> None:
        self.owner = owner
        self.confirm_seconds = confirm_seconds
        self._sessions: dict[str, list[LiveTurn]] = {}

    def live(self, session_id: str) -> list[LiveTurn]:
        """The session's turns not finished yet: the running one first, then the queued."""
        return list(self._sessions.get(session_id, []))

    def start(
        self,
        ctx: Context,
        session_id: str,
        text: str,
        *,
        image_path: str | None = None,
        stored: Message | None = None,
        meta: dict[str, Any] | None = None,
    ) -> LiveTurn:
        """Queue a turn for the session; it runs when the turns before it have ended.

        ``stored`` is its user message when already stored (sent while nothing ran, or
        answered again); otherwise ``text`` (with ``meta``) is stored when the turn begins."""
        queue = self._sessions.setdefault(session_id, [])
        before = queue[-1] if queue else None
        text = stored.content if stored else text
        turn = LiveTurn(session_id, text, image_path, confirm_seconds=self.confirm_seconds)
        turn.meta = dict(meta or {})
        queue.append(turn)
        turn.task = asyncio.get_running_loop().create_task(
            self._run(turn, ctx, before, stored), name=f"turn:{session_id}"
        )
        return turn

    async def stop(self, session_id: str, store: AsyncStore | None = None) -> bool:
        """Cancel the session's running turn and wait until it has stored what it wrote.
        A turn another process runs is asked to stop through ``store`` (it stops within
        ``STOP_POLL``). False when none was running."""
        running = next((t for t in self.live(session_id) if t.started), None)
        if running is None or running.task is None or running.task.done():
            return bool(store and await store.request_stop(session_id))
        running.task.cancel()
        await running.finished.wait()
        return True

    def decide(self, session_id: str, confirmation_id: str, allowed: bool) -> bool:
        """Give the person's Allow (or Deny) to the session's turn waiting on question
        ``confirmation_id``; False when no turn of this process waits on it."""
        return any(turn.decide(confirmation_id, allowed) for turn in self.live(session_id))

    async def _run(
        self, turn: LiveTurn, ctx: Context, before: LiveTurn | None, stored: Message | None
    ) -> None:
        try:
            if before is not None:
                await before.finished.wait()
            await _Recorder(turn, ctx, self.owner).run(stored)
        finally:
            turn.end()
            queue = self._sessions.get(turn.session_id, [])
            if turn in queue:
                queue.remove(turn)
            if not queue:
                self._sessions.pop(turn.session_id, None)


class _Recorder:
    """Runs one turn's pipeline, publishing its events and keeping its text so far."""

    def __init__(self, turn: LiveTurn, ctx: Context, owner: str) -> None:
        self.turn, self.ctx, self.owner = turn, ctx, owner
        self.record: int | None = None  # its running_turns row
        self.draft = ""  # the text of the model call now streaming
        self.saved = ""  # what the row holds
        self.saved_at = 0.0

    async def run(self, stored: Message | None) -> None:
        store = self.ctx.store
        watcher: asyncio.Task[None] | None = None
        try:
            async for event in stream_turn(
                dataclasses.replace(self.ctx, confirm=self.turn.ask),
                self.turn.session_id,
                self.turn.text,
                image_path=self.turn.image_path,
                user_meta=self.turn.meta,
                stored=stored,
            ):
                await self._note(store, event)
                self.turn.publish(event)
                if watcher is None and self.record is not None:
                    watcher = asyncio.get_running_loop().create_task(self._watch(store))
        except asyncio.CancelledError:
            await self._stopped(store)
        except Exception as exc:  # a bug or a store failure: the chat shows it
            log.exception("turn failed in session %s", self.turn.session_id)
            self.turn.failure = exc
            self.turn.publish(TurnError(f"{type(exc).__name__}: {exc}"))
            self.turn.publish(Answer("", None, [], []))
        finally:
            if watcher is not None:
                watcher.cancel()
            if self.record is not None:
                with contextlib.suppress(Exception):
                    await store.end_turn(self.record)

    async def _watch(self, store: AsyncStore) -> None:
        """Cancel the turn when Stop is asked from another process (``Turns.stop``)."""
        while self.record is not None:
            await asyncio.sleep(STOP_POLL)
            if await store.stop_requested(self.record):
                if self.turn.task is not None:
                    self.turn.task.cancel()
                return

    async def _note(self, store: AsyncStore, event: TurnEvent) -> None:
        """Keep the running_turns row up to date with the event."""
        match event:
            case UserStored(message=message):
                self.record = await store.begin_turn(message.session_id, message.id, self.owner)
            case TextDelta(text=text):
                self.draft += text
                if time.monotonic() - self.saved_at >= PARTIAL_EVERY:
                    await self._save(store, self.draft)
            case ModelDone():
                self.draft = ""  # the call's text is a stored message now
                if self.saved:
                    await self._save(store, "")

    async def _save(self, store: AsyncStore, text: str) -> None:
        if self.record is not None:
            await store.save_partial(self.record, text)
            self.saved, self.saved_at = text, time.monotonic()

    async def _stopped(self, store: AsyncStore) -> None:
        """Store what the turn wrote so far as its answer, marked stopped (unless the
        stop came after its answer was stored: then that answer stands)."""
        answered = await self._answered(store) if not self.draft.strip() else None
        if answered is not None:
            self.turn.publish(Answer(answered.content, answered.id, [], []))
            return
        stored: Message | None = None
        if self.turn.started:
            stored = await store.add_message(
                self.turn.session_id, "assistant", self.draft.strip(), meta=dict(STOPPED)
            )
        self.turn.publish(TurnStopped(stored.id if stored else None))
        self.turn.publish(Answer(self.draft.strip(), stored.id if stored else None, [], []))

    async def _answered(self, store: AsyncStore) -> Message | None:
        """The turn's stored final answer, if the model call that wrote it had ended."""
        asked = self.turn.user_message
        if asked is None:
            return None
        last = (await store.messages(asked.session_id))[-1]
        final = last.role == "assistant" and not last.meta.get("intermediate")
        return last if final and last.id > asked.id else None


def owner_alive(owner: str, *, me: str = OWNER) -> bool | None:
    """Whether the process that wrote a running_turns row still runs: True, False, or
    None when it is another host's (this process cannot tell)."""
    host, _, rest = owner.partition(":")
    pid_text, _, _token = rest.partition(":")
    my_host, _, my_rest = me.partition(":")
    if host != my_host:
        return None
    if owner == me:
        return True
    if not pid_text.isdigit() or int(pid_text) == int(my_rest.partition(":")[0]):
        return False  # an earlier process with this pid (a container's pid 1, say)
    try:
        os.kill(int(pid_text), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


async def recover_interrupted(store: AsyncStore, *, me: str = OWNER) -> list[Message]:
    """Store the text so far of every turn whose process died as its answer, marked
    ``interrupted``; the messages stored."""
    recovered: list[Message] = []
    turns: list[RunningTurn] = await store.running_turns()
    for turn in turns:
        if owner_alive(turn.owner, me=me) is False:
            stored = await store.close_interrupted(turn, dict(INTERRUPTED))
            if stored is not None:
                log.warning("a turn of session %s was interrupted; kept its text", turn.session_id)
                recovered.append(stored)
    return recovered
