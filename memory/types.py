"""The values the store hands out, the same on both backends."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, get_args

from memory.rules import scoring
from memory.rules.temporal import TemporalCue

# The person of a Companion without accounts, and of its first account: the data from
# before accounts stays theirs (the home's own SQLite file, or those rows on Postgres).
OWNER = "owner"

ToolRole = Literal["web_tool", "weather_tool", "memory_tool", "image_tool"]
Role = Literal[
    "user", "assistant", "system", "web_tool", "weather_tool", "memory_tool", "image_tool"
]
TOOL_ROLES: tuple[ToolRole, ...] = get_args(ToolRole)
ROLES: tuple[Role, ...] = get_args(Role)
TIME_FORMAT = "%Y-%m-%d %H:%M:%S"
Clock = Callable[[], datetime]


def utc_now() -> datetime:
    """The real clock, timezone-aware in UTC."""
    return datetime.now(UTC)


def format_time(moment: datetime) -> str:
    """Render a moment the way the store keeps it: UTC, sortable, SQLite-compatible."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime(TIME_FORMAT)


def parse_time(text: str) -> datetime:
    """Read a stored timestamp back as an aware UTC datetime."""
    head = text[:19]
    # Called for every message a segment refresh or a replay looks at: fromisoformat is
    # ~50x faster than strptime, and the shape check keeps strptime's strictness.
    if (
        len(head) == 19
        and head[4] == head[7] == "-"
        and head[10] == " "
        and head[13] == head[16] == ":"
    ):
        return datetime.fromisoformat(head).replace(tzinfo=UTC)
    return datetime.strptime(head, TIME_FORMAT).replace(tzinfo=UTC)


@dataclass(frozen=True)
class Message:
    """One stored message of a session."""

    id: int
    session_id: str
    role: str
    content: str
    created_at: str
    tool_name: str | None = None
    tool_call_id: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    image_path: str | None = None

    @property
    def is_tool(self) -> bool:
        """True for tool results (any tool family role)."""
        return self.role in TOOL_ROLES


@dataclass(frozen=True)
class ImportedMessage:
    """One message of a conversation brought from another app: the person's words or the
    assistant's, never a system message or a tool call."""

    role: Literal["user", "assistant"]
    content: str
    created_at: datetime


@dataclass(frozen=True)
class ImportedChat:
    """A conversation brought from another app (``companion import``): kept once per
    ``source`` (the app) and ``source_id`` (its conversation id)."""

    source: str
    source_id: str
    title: str
    created_at: datetime
    messages: tuple[ImportedMessage, ...]


@dataclass(frozen=True)
class Session:
    """A conversation."""

    id: str
    title: str
    persona: str | None
    created_at: str
    # Its newest message's time (its creation time while empty), from list_sessions only:
    # derived, so it takes no part in comparing two sessions.
    active_at: str = field(default="", compare=False)
    pinned: bool = field(default=False, compare=False)  # kept at the top of the chat list
    renamed: bool = field(default=False, compare=False)  # the title is the person's own


@dataclass(frozen=True)
class ChatHit:
    """One result of searching across chats (``search_chats``): a chat whose title
    matched (``message_id`` None) or one of its user/assistant messages."""

    session_id: str
    title: str
    message_id: int | None
    role: str | None
    snippet: str  # plain text around the match, at most memory.rules.chat_search.SNIPPET
    created_at: str


@dataclass(frozen=True)
class Feedback:
    """A person's rating of an answer (👍 1, 👎 -1) and their optional comment."""

    message_id: int  # the assistant message rated
    session_id: str
    rating: int
    comment: str
    created_at: str


@dataclass(frozen=True)
class RunningTurn:
    """A turn that was running (``running_turns``): whose, since when, its text so far."""

    id: int
    session_id: str
    user_message_id: int
    owner: str
    partial: str


@dataclass(frozen=True)
class Memory:
    """One stored memory with its FSRS state."""

    id: str
    category: str
    key: str
    value: str
    created_at: str
    updated_at: str
    stability: float
    difficulty: float
    last_recalled_at: str | None
    recall_count: int

    @property
    def strength(self) -> scoring.Strength:
        """The FSRS state as a value object."""
        return scoring.Strength(self.stability, self.difficulty, self.recall_count)

    def retrievability(self, now: datetime) -> float:
        """R now: decays from the last recall, or from creation if never recalled."""
        anchor = parse_time(self.last_recalled_at or self.created_at)
        return scoring.retrievability_at(self.strength, anchor, now)


Summarizer = Callable[[list[Message]], Awaitable[str]]


@dataclass(frozen=True)
class Segment:
    """A stored span of one session's messages and its summary."""

    id: int
    session_id: str
    start_message_id: int
    end_message_id: int
    start_at: str
    end_at: str
    summary: str
    summary_kind: str


@dataclass(frozen=True)
class RecalledSegment:
    """A matching segment and its session's title: a pointer into the turns (what was
    said comes as the recollection's turns)."""

    segment: Segment
    session_title: str


RecallMode = Literal["hybrid", "lexical", "dense"]


@dataclass(frozen=True)
class RecalledTurn:
    """One past user or assistant message memory_search shows: who said it (``message.role``)
    and when (``message.created_at``), its chat's title, how well it matched (the fused
    score, 0..1, higher is better) and the messages said just before and after it when
    they make it readable ("yes, the blue one"), else None."""

    message: Message
    session_title: str
    score: float
    before: Message | None = None
    after: Message | None = None


@dataclass(frozen=True)
class Recollection:
    """Everything recalled for one question, best first within each part. ``searched``
    names the retrievers that ran for ``turns``: "hybrid" (lexical and dense), "lexical"
    (no query vector, no index for its model, or asked for), or "dense"."""

    facts: list[Memory]
    segments: list[RecalledSegment]
    turns: list[RecalledTurn]
    cue: TemporalCue | None
    searched: RecallMode = "lexical"


@dataclass(frozen=True)
class Edit:
    """One value memory_sql changes: which row and column, what it was, what it becomes."""

    table: str
    row_id: int | str
    column: str
    old: str | bytes
    new: str | bytes

    @property
    def label(self) -> str:
        """How a person names the row: ``messages 12``, ``memories 3f2a…``."""
        return f"{self.table} {self.row_id}"


@dataclass(frozen=True)
class EditBatch:
    """The edits of one memory_sql UPDATE, as the journal keeps them."""

    batch: str
    created_at: str
    edits: tuple[Edit, ...]


@dataclass(frozen=True)
class Person:
    """One person of the home and where their data lives."""

    id: int
    name: str
    folder: str  # relative to the home: "" for the first person, else "people/<id>"

    def home(self, root: Path) -> Path:
        """This person's own home folder (their companion.db and media/) under ``root``."""
        return root / self.folder if self.folder else root
