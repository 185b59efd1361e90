"""The store's errors, the same on both backends.

Each backend translates its driver's failures into these at its edge, so callers never
import sqlite3 or psycopg to tell what went wrong: ``WriteRefused`` when the database
cannot take a write (read-only, disk full, no privilege), ``StoreUnavailable`` when it
cannot be reached at all.
"""

from __future__ import annotations


class StoreError(Exception):
    """A store operation that cannot be done (unknown session, invalid role...)."""


class WriteRefused(StoreError):
    """The database refused a write (read-only, full, out of space or privileges); the
    message carries the driver's own words."""


class StoreUnavailable(StoreError):
    """The database cannot be reached or opened; the message says why."""


class MemoryRecordError(StoreError):
    """A memory request that cannot be done; the message says why."""


class InvalidMemory(MemoryRecordError):
    """Unknown category, empty key or value, or a value too long."""


class MemoryNotFound(MemoryRecordError):
    """No memory under that category/key or id."""


class MemoryExists(MemoryRecordError):
    """Create was asked for a key that already holds a memory."""


class EditConflict(Exception):
    """A row of the batch no longer holds the value the edit expects; nothing was written."""


class SqlRefused(Exception):
    """The SQL was refused (before running, or its edits before they were written); the
    message names what was refused, for the model; ``kind`` says which rule, for the log."""

    def __init__(self, message: str, kind: str = "statement") -> None:
        super().__init__(message)
        self.kind = kind


class AccountError(Exception):
    """An account change that cannot be made: a bad or taken name, a short password."""


class AccountsUnavailable(StoreUnavailable):
    """The users table cannot be reached: no server, or the schema is not made yet."""
