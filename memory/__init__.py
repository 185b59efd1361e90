"""Companion's persistence: sessions, messages, memories, segments, recall, memory_sql,
running turns, the profile and the people, on SQLite or Postgres.

Callers import from here: the interfaces (``AsyncStore``, ``Accounts``), the values and
errors both backends share, and ``open_store`` / ``open_accounts`` / ``migrate``, which
choose the backend from a database URL. ``memory.rules`` holds the backend-neutral rules
(scoring, time, search terms, the memory_sql policy). The backends themselves,
``memory.sqlite`` and ``memory.postgres``, are reached only through ``memory.backends``.
See docs/storage.md.
"""

from memory.backends import Migrated, migrate, open_accounts, open_store, release_connections
from memory.errors import (
    AccountError,
    AccountsUnavailable,
    EditConflict,
    InvalidMemory,
    MemoryExists,
    MemoryNotFound,
    MemoryRecordError,
    SqlRefused,
    StoreError,
    StoreUnavailable,
    WriteRefused,
)
from memory.protocol import Accounts, AsyncStore, TurnReads
from memory.query_vector import QueryVector
from memory.types import (
    OWNER,
    ROLES,
    TOOL_ROLES,
    Clock,
    Edit,
    EditBatch,
    Memory,
    Message,
    Person,
    RecalledSegment,
    RecalledTurn,
    RecallMode,
    Recollection,
    Role,
    RunningTurn,
    Segment,
    Session,
    Summarizer,
    ToolRole,
    format_time,
    parse_time,
    utc_now,
)

__all__ = [
    "OWNER",
    "ROLES",
    "TOOL_ROLES",
    "AccountError",
    "Accounts",
    "AccountsUnavailable",
    "AsyncStore",
    "Clock",
    "Edit",
    "EditBatch",
    "EditConflict",
    "InvalidMemory",
    "Memory",
    "MemoryExists",
    "MemoryNotFound",
    "MemoryRecordError",
    "Message",
    "Migrated",
    "Person",
    "QueryVector",
    "RecallMode",
    "RecalledSegment",
    "RecalledTurn",
    "Recollection",
    "Role",
    "RunningTurn",
    "Segment",
    "Session",
    "SqlRefused",
    "StoreError",
    "StoreUnavailable",
    "Summarizer",
    "ToolRole",
    "TurnReads",
    "WriteRefused",
    "format_time",
    "migrate",
    "open_accounts",
    "open_store",
    "parse_time",
    "release_connections",
    "utc_now",
]
