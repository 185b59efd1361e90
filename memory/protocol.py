"""The interfaces both backends implement."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

import numpy

from memory.query_vector import QueryVector
from memory.rules.budget import TURN_BUDGET
from memory.types import (
    ChatHit,
    Clock,
    EditBatch,
    Feedback,
    ImportedChat,
    Memory,
    Message,
    Person,
    RecallMode,
    Recollection,
    RunningTurn,
    Segment,
    Session,
    Summarizer,
)


@dataclass(frozen=True)
class MemoryGates:
    """Whether the memory tools have anything to work on, read in one query: the gates of
    memory_search and memory_sql (``history``) and of updating or forgetting a memory
    (``memories``)."""

    history: bool  # a memory, or a message older than the question being answered
    memories: bool  # a structured memory

    @classmethod
    def found(cls, earlier: Any, memories: Any) -> MemoryGates:
        """The gates from what the store found: an earlier message, a memory."""
        return cls(history=bool(earlier or memories), memories=bool(memories))


@dataclass(frozen=True)
class TurnReads:
    """What build_context reads for one model call, in one trip to the database."""

    turn: list[Message]  # this turn's messages after the user's, oldest first
    history: list[Message]  # the session's last messages up to the user's (if asked)
    style_note: str | None  # the note kept on the session ("Keep for this chat")
    memories: list[Memory]  # every memory, most retrievable first
    # the memory tools' gates before the user's message, read with the history (the
    # turn's first call, whose tools they choose); None when no history was asked
    gates: MemoryGates | None = None


class AsyncStore(Protocol):
    """The store's async interface: what the graph and the app call."""

    @property
    def clock(self) -> Clock:
        """The store's clock (injectable: tests fix it)."""
        ...

    @property
    def media_dir(self) -> Path:
        """The folder images are kept in."""
        ...

    @property
    def location(self) -> str:
        """Where the data lives (a file, a database URL): names the database."""
        ...

    # sessions
    async def create_session(self, title: str = "New chat") -> Session:
        """Start a new conversation."""
        ...

    async def get_session(self, session_id: str) -> Session | None:
        """The session with that id, or None."""
        ...

    async def list_sessions(self) -> list[Session]:
        """All sessions, most recently active first."""
        ...

    async def rename_session(self, session_id: str, title: str, *, by_person: bool = True) -> None:
        """Give a session a new title (StoreError: empty title, unknown session);
        ``by_person`` False is the app's own title (made from the first message), which a
        person's rename outranks (``Session.renamed``)."""
        ...

    async def set_pinned(self, session_id: str, pinned: bool) -> None:
        """Pin a session to the top of the chat list, or unpin it (StoreError: unknown)."""
        ...

    async def chat_version(self, session_id: str | None) -> str:
        """A token that changes whenever what the chat list or the chat ``session_id``
        shows changes: a message added or deleted, a chat made, renamed, pinned or
        deleted (by this process or another). Cheap: what an open page polls."""
        ...

    async def search_chats(self, query: str, limit: int = 20) -> list[ChatHit]:
        """Chats whose title holds every word of ``query``, then user/assistant messages
        matching it (the backend's full-text search over the whole history), best first."""
        ...

    async def delete_session(self, session_id: str) -> None:
        """Delete a session and everything in it."""
        ...

    async def style_note(self, session_id: str) -> str | None:
        """The style note kept on the session, or None."""
        ...

    async def set_style_note(self, session_id: str, note: str | None) -> None:
        """Keep a style note on the session; None or blank removes it."""
        ...

    # messages
    async def add_message(
        self,
        session_id: str,
        role: str,
        content: str,
        *,
        meta: dict[str, Any] | None = None,
        image_path: str | None = None,
        tool_name: str | None = None,
        tool_call_id: str | None = None,
    ) -> Message:
        """Append a message to a session (created if missing); the stored message. A tool
        result names its tool and the call it answers."""
        ...

    async def messages(self, session_id: str) -> list[Message]:
        """Every message of a session, oldest first."""
        ...

    async def count_messages(self, session_id: str | None = None) -> int:
        """How many messages there are (in one session, or in all)."""
        ...

    async def read_turn(
        self, session_id: str, user_message_id: int, *, history: int, now: datetime
    ) -> TurnReads:
        """build_context's reads: this turn's messages, ``history`` messages up to the
        user's (0: none), the kept style note, and the memories ranked at ``now``; with
        the history, the memory tools' gates (``memory_gates`` before the user's message)."""
        ...

    async def save_trace(self, message_id: int, trace: dict[str, Any]) -> None:
        """Keep a turn's trace (JSON) with its answer ``message_id``; it goes with it."""
        ...

    async def turn_trace(self, message_id: int) -> dict[str, Any] | None:
        """The trace kept with an answer, or None."""
        ...

    async def traced_answers(self, session_id: str) -> list[int]:
        """The ids of the session's answers that have a trace, oldest first."""
        ...

    async def set_feedback(self, message_id: int, rating: int | None, comment: str = "") -> None:
        """Rate an assistant answer (1 or -1, with an optional comment); None clears it
        (StoreError: not an answer of this store, a rating other than 1/-1)."""
        ...

    async def feedback(self, session_id: str | None = None) -> list[Feedback]:
        """The ratings (of one session, or all), newest first."""
        ...

    async def delete_messages_from(self, session_id: str, message_id: int) -> int:
        """Delete the session's messages from ``message_id`` on, and the segments that
        covered them (regenerate, edit and resend); how many messages went."""
        ...

    async def delete_everything(self) -> dict[str, int]:
        """Forget this person: every session, message, memory, segment, vector, import
        key, journal entry, setting and lease of theirs, leaving no trace of their text in
        the database (memory.sqlite.erase, docs/storage.md); the rows deleted per table.
        Their images are files: ``app.deleting`` removes those."""
        ...

    async def import_chat(self, chat: ImportedChat) -> Session | None:
        """Keep a conversation brought from another app as a new session, with its title,
        its times and every message, in one transaction; None when a chat with the same
        source and source id was imported before (nothing is added)."""
        ...

    # running turns (graph.turns)
    async def begin_turn(self, session_id: str, user_message_id: int, owner: str) -> int:
        """Record a turn as running for process ``owner``; the record's id."""
        ...

    async def save_partial(self, turn_id: int, text: str) -> None:
        """Keep the running turn's answer so far."""
        ...

    async def end_turn(self, turn_id: int) -> None:
        """The turn is over: forget its record."""
        ...

    async def running_turns(self) -> list[RunningTurn]:
        """Every turn recorded as running, oldest first."""
        ...

    async def claim(self, job: str, holder: str, seconds: float) -> bool:
        """Take or renew a background job's lease (False: another process holds it)."""
        ...

    async def request_stop(self, session_id: str) -> bool:
        """Ask the process running the session's turn to stop it (False: none runs)."""
        ...

    async def stop_requested(self, turn_id: int) -> bool:
        """True once Stop was asked for this running turn."""
        ...

    async def close_interrupted(self, turn: RunningTurn, meta: dict[str, Any]) -> Message | None:
        """Store a dead turn's text so far as its answer, marked by ``meta``, and forget
        its record (None: another process already did)."""
        ...

    # segments
    async def refresh_segments(
        self, session_id: str, summarize: Summarizer | None, *, force: bool, tz: str
    ) -> int:
        """Cut the session's closed messages into summarised segments; how many were added."""
        ...

    async def catch_up_segments(self, summarize: Summarizer | None, *, tz: str) -> int:
        """Summarise a bounded batch of every session's quiet segments; 0 when done."""
        ...

    async def recent_segments(self, limit: int = 50) -> list[Segment]:
        """The newest segments of every session, newest first."""
        ...

    # memories and the profile
    async def ranked_memories(self, now: datetime) -> list[Memory]:
        """Every memory, most retrievable at ``now`` first."""
        ...

    async def create_memory(self, category: str, key: str, value: str) -> Memory:
        """Add a memory by hand (MemoryRecordError: invalid, or the key is taken)."""
        ...

    async def import_memory(self, memory: Memory) -> bool:
        """Keep a memory from a Companion export as it was (id, times, strength); False,
        and nothing added, when its id or key is here already (InvalidMemory: invalid)."""
        ...

    async def update_memory(
        self, memory_id: str, value: str, *, key: str | None, category: str | None
    ) -> Memory:
        """Edit a memory (MemoryRecordError: unknown id, invalid value)."""
        ...

    async def delete_memory(self, memory_id: str) -> None:
        """Delete a memory (MemoryNotFound: unknown id)."""
        ...

    async def close(self) -> None:
        """Finish what is queued and release the store's threads and connections (a
        store on a shared pool leaves the pool open)."""
        ...

    async def undo_last_sql_edit(self) -> EditBatch | None:
        """Undo the newest memory_sql edit (EditConflict: its rows changed since)."""
        ...

    async def profile(self) -> dict[str, str]:
        """Every profile setting as text."""
        ...

    # what tools reach (memory_search, memory_sql, the memory writes, image_analyze)
    async def memory_gates(self, before_id: int | None = None) -> MemoryGates:
        """``has_history(before_id)`` and ``has_memories()`` in one query (one round trip
        on Postgres): what the registry's gates ask before each model call."""
        ...

    async def has_history(self, before_id: int | None = None) -> bool:
        """True when any memory exists, or any message older than ``before_id`` (the
        question being answered): gates memory_search and memory_sql."""
        ...

    async def has_memories(self) -> bool:
        """True when any memory is stored: gates updating and forgetting one."""
        ...

    async def latest_image(self, session_id: str) -> Message | None:
        """The session's newest message that carries an image, or None."""
        ...

    async def recall(
        self,
        query: str,
        *,
        now: datetime,
        tz: str,
        session_id: str | None,
        question_id: int | None,
        vector: numpy.ndarray | QueryVector | None = None,
        vector_model: str | None = None,
        mode: RecallMode = "hybrid",
        turns: int = TURN_BUDGET,
    ) -> Recollection:
        """memory_search's recall: facts (marked recalled at ``now``), the ``turns`` best
        user/assistant messages of the whole history before ``question_id`` (lexical
        fused with the nearest to ``vector`` when it is given and the index holds
        ``vector_model``'s vectors; a named time window filters them; ``session_id``'s
        messages win ties) with their neighbours, and the segments that match."""
        ...

    # the vector index (memory.sqlite.vectors): kept current by graph.jobs
    async def unembedded(self, model: str, limit: int) -> list[tuple[int, str]]:
        """(message id, text) of up to ``limit`` user/assistant messages with no vector
        for ``model``, oldest first."""
        ...

    async def add_vectors(self, model: str, rows: Sequence[tuple[int, numpy.ndarray]]) -> None:
        """Keep each message's vector (float32, L2-normalised) for ``model``; idempotent
        (a message's vector is replaced); a row whose message is gone is skipped."""
        ...

    async def vector_status(self, model: str) -> tuple[int, int]:
        """(messages with a vector for ``model``, user/assistant messages in all)."""
        ...

    async def drop_vectors(self, except_model: str | None) -> int:
        """Forget the vectors of every model but ``except_model`` (None: all); how many."""
        ...

    async def run_sql(self, sql: str, *, now: datetime) -> dict[str, Any]:
        """memory_sql: one guarded SELECT or UPDATE over this person's chats; the result
        or ``{"error": ...}``, never raises. An UPDATE is journalled at ``now``."""
        ...

    async def remember(self, category: str, key: str, value: str, now: datetime) -> Memory:
        """create_memory: a new fact (MemoryExists: the key is taken; MemoryRecordError:
        invalid)."""
        ...

    async def revise(self, category: str | None, key: str, value: str, now: datetime) -> Memory:
        """update_memory: a fact's new value, found by key (and category when given)
        (MemoryNotFound: none)."""
        ...

    async def forget(self, category: str | None, key: str) -> Memory:
        """delete_memory: forget a fact found by key; what was deleted (MemoryNotFound)."""
        ...

    async def set_profile(self, values: dict[str, str | float | int | None]) -> None:
        """Save settings; a None value removes the key."""
        ...


class Accounts(Protocol):
    """A registry of the people of one Companion and their logins: ``SqliteAccounts``
    (the home's accounts.db) or ``PgAccounts`` (the shared database's users table)."""

    @property
    def root(self) -> Path:
        """The home the people's folders live under."""
        ...

    def enabled(self) -> bool:
        """True once anyone has been added: the app then asks everyone to log in."""
        ...

    def add(self, name: str, password: str) -> Person:
        """Register a person and make their folder (AccountError: bad or taken name)."""
        ...

    def remove(self, name: str) -> Person:
        """Forget a person's account, logins and failed logins, and delete their own
        folder (never the home); their id is never given to anyone else (AccountError: no
        such person). Their data goes first: ``app.deleting.delete_person``."""
        ...

    def check(self, name: str, password: str) -> Person | None:
        """The person this name and password log in as, or None."""
        ...

    def get(self, name: str) -> Person | None:
        """The person of this name (any case), or None."""
        ...

    def people(self) -> list[Person]:
        """Everyone, in the order they were added."""
        ...

    def is_first(self, person: Person) -> bool:
        """Does ``person`` own the data from before accounts (the first account)?"""
        ...

    def person_key(self, person: Person) -> str:
        """The key ``open_store`` takes for ``person``'s data."""
        ...

    def set_password(self, name: str, password: str) -> None:
        """Replace a person's password and end their logins."""
        ...

    def add_login(self, token: str, name: str) -> None:
        """Keep a login (its cookie's token) for every process."""
        ...

    def login_name(self, token: str) -> str | None:
        """Who this login token belongs to, or None (unknown, ended or expired)."""
        ...

    def end_login(self, token: str) -> None:
        """Forget one login (logout)."""
        ...

    def end_logins(self, name: str) -> None:
        """Forget every login of a person."""
        ...

    def claim_login(self, name: str, address: str, now: float) -> float:
        """Count an attempt of ``name`` from ``address`` (epoch seconds ``now``) as a
        failure unless a lock holds: the seconds left of that lock, 0 when counted."""
        ...

    def forgive_login(self, name: str, address: str, now: float) -> None:
        """A claimed attempt succeeded: forget this name's failures from this address
        and remember the address as one it logs in from."""
        ...
