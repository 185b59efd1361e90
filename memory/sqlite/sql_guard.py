"""memory_sql on SQLite: model-written SQL over one person's database file, run safely.

Four layers: the parse (``memory.rules.sql_policy.check_sql``), SQLite's authorizer,
memory_tool rows hidden by construction, and a statement that never writes (an UPDATE is
recorded on a read-only connection, checked, then applied by id and journalled for
``undo-sql``); plus hard limits on time, sizes and costly functions. ``run_sql`` never
raises: every failure is ``{"error": ...}``, logged by kind, never by its text. The design:
docs/storage.md; the threat model: docs/security.md.
"""

from __future__ import annotations

import logging
import re
import secrets
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from memory.errors import EditConflict, SqlRefused
from memory.rules.sql_policy import (
    CELL_CAP,
    COLUMN_NAME_CAP,
    EDITABLE_COLUMNS,
    EMPTY_TEXT,
    HIDDEN_ROLE,
    MAX_COLUMNS,
    MAX_ROWS_CHANGED,
    MAX_WRITE_CHARS,
    NOT_EMPTY,
    READABLE_SETTINGS,
    REFUSED_FUNCTION,
    REFUSED_UPDATE_COLUMN,
    RESULT_CHAR_CAP,
    ROW_CAP,
    TIME_LIMIT_SECONDS,
    TOO_LONG,
    TOO_MANY_ROWS,
    check_sql,
    new_batch_id,
)
from memory.rules.text import word_set
from memory.sqlite.db import connect
from memory.sqlite.journal import apply_edits
from memory.types import Edit, format_time, utc_now

log = logging.getLogger("companion.memory_sql")

# SQLite consults the time limit every PROGRESS_STEPS program steps, a handful of rows:
# with one 0.15 s LIKE per row (100-byte pattern, 1 MB value), 1,000 steps let a
# statement overrun its 2 s by 14 s; 50 keeps the overrun under a second.
PROGRESS_STEPS = 50


# SQLite limits of the guard's connection.
MAX_VALUE_BYTES = 1_000_000  # one string or blob, also while it is being built
MAX_LIKE_PATTERN_BYTES = 100  # LIKE/GLOB cost is pattern length x text length
MAX_FUNCTION_ARGS = 16  # json_array(x, x, …) builds all its arguments before the length check
MAX_PROGRAM_OPS = 500  # typical questions compile to 20-100 steps
MAX_EXPR_DEPTH = 100
MAX_COMPOUND_SELECT = 20
CONNECTION_LIMITS = {
    sqlite3.SQLITE_LIMIT_ATTACHED: 0,
    sqlite3.SQLITE_LIMIT_LENGTH: MAX_VALUE_BYTES,
    sqlite3.SQLITE_LIMIT_LIKE_PATTERN_LENGTH: MAX_LIKE_PATTERN_BYTES,
    sqlite3.SQLITE_LIMIT_COLUMN: MAX_COLUMNS,
    sqlite3.SQLITE_LIMIT_FUNCTION_ARG: MAX_FUNCTION_ARGS,
    sqlite3.SQLITE_LIMIT_VDBE_OP: MAX_PROGRAM_OPS,
    sqlite3.SQLITE_LIMIT_EXPR_DEPTH: MAX_EXPR_DEPTH,
    sqlite3.SQLITE_LIMIT_COMPOUND_SELECT: MAX_COMPOUND_SELECT,
}

# Functions whose one call may scan a whole message against a whole argument: SQLite
# checks the time limit only between rows, so their number per statement is capped.
COSTLY_FUNCTIONS = frozenset({"like", "glob", "instr", "replace", "trim", "ltrim", "rtrim"})
MAX_COSTLY_CALLS = 8
# One conversion of printf's format: flags, widths, precisions, a size (``l``), then the
# conversion letter. Every number in it counts towards the call's budget (SQLite keeps
# the last of each, so adding them all over-counts, never under-counts).
PRINTF_SPEC = re.compile(r"%([-+ #!0,l*.0-9]*)")


READABLE_TABLES = frozenset({"sessions", "memories", "segments", "sqlite_master", "schema_version"})
SHADOWED = frozenset(EDITABLE_COLUMNS)  # main tables the guard shadows with TEMP views
# Not here on purpose: json_group_array and json_group_object grow their value with no
# length check (+1.3 GB within the time limit); group_concat/string_agg stop at
# MAX_VALUE_BYTES, so they stay.
ALLOWED_FUNCTIONS = word_set(
    """
    abs avg changes char coalesce concat concat_ws count cume_dist date datetime dense_rank
    first_value format glob group_concat hex ifnull iif instr json json_array
    json_array_length json_extract json_object json_quote json_type json_valid julianday
    lag last_value lead length like likelihood likely lower ltrim max min nth_value ntile
    nullif percent_rank printf quote random rank replace round row_number rtrim sign
    strftime string_agg substr substring sum time timediff total trim typeof unicode
    unixepoch unlikely upper
    """
)

REFUSED_TABLE = "refused: reading {table} is not allowed"
REFUSED_SCHEMA = (
    "refused: changing the schema (sqlite_master) or using virtual tables (the FTS "
    "indexes messages_fts/segments_fts, pragma_*, json_each) is not allowed"
)
REFUSED_DIRECT_UPDATE = (
    "refused: updating {database}.{table} directly is not allowed (UPDATE {table})"
)
REFUSED_ACTION = "refused: {action} is not allowed"
REFUSED_COSTLY = (
    "refused: at most {cap} calls of like/glob/instr/replace/trim per statement (each may "
    "scan a whole message); combine the conditions or narrow the rows first"
)
REFUSED_PRINTF_STAR = (
    "refused: {name}() widths and precisions must be written as numbers, not taken from "
    "an argument (*)"
)
REFUSED_PRINTF_WIDTH = (
    "refused: {name}() widths and precisions may add up to at most {cap:,} characters per call"
)
REFUSED_TOO_COMPLEX = (
    "refused: the statement is too complex (more than {ops} SQLite program steps); "
    "split it into simpler questions"
)
NOT_TEXT = (
    "refused: only text can be written to {where}, and this UPDATE gives it {kind}; "
    "nothing was changed"
)
NOT_UTF8 = "refused: the new {where} is not valid UTF-8 text; nothing was changed"
HAS_NUL = "refused: the new {where} contains a NUL character; nothing was changed"
TOO_BIG = "one value may be at most {cap:,} bytes"
TIME_LIMIT_ERROR = (
    "query stopped: it ran longer than {seconds:g} s (time limit); add a LIMIT or a narrower WHERE"
)
# SQLite's own words for a limit it enforced, and what the model should know about it.
LIMIT_HINTS = (
    (
        "LIKE or GLOB pattern too complex",
        f"LIKE and GLOB patterns are limited to {MAX_LIKE_PATTERN_BYTES} bytes",
    ),
    ("string or blob too big", TOO_BIG.format(cap=MAX_VALUE_BYTES)),
)


class _Stopped(Exception):
    """Raised inside a guard function to stop the statement; the reason is recorded."""


class _Deadline:
    """Progress handler that stops a statement once its time is up."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.ends = time.monotonic() + seconds
        self.hit = False

    def __call__(self) -> int:
        if time.monotonic() > self.ends:
            self.hit = True
            return 1
        return 0


@dataclass
class _Policy:
    """The authorizer of one guarded run; remembers why it (or a guard function) first
    said no, counts costly calls, and collects the rows an UPDATE would change."""

    hidden_view: str
    pending_table: str
    edit_counter: str
    triggers: frozenset[str]
    denied: list[str] = field(default_factory=list)
    costly_calls: int = 0
    edited: set[tuple[str, Any]] = field(default_factory=set)

    def deny(self, reason: str) -> int:
        if not self.denied:
            self.denied.append(reason)
        return sqlite3.SQLITE_DENY

    def __call__(
        self,
        action: int,
        arg1: str | None,
        arg2: str | None,
        database: str | None,
        source: str | None,
    ) -> int:
        if action in (sqlite3.SQLITE_SELECT, sqlite3.SQLITE_RECURSIVE):
            return sqlite3.SQLITE_OK
        if action == sqlite3.SQLITE_FUNCTION:
            return self._function((arg2 or "").lower(), source)
        if action == sqlite3.SQLITE_READ:
            return self._read(arg1 or "", database or "", source)
        if action == sqlite3.SQLITE_UPDATE:
            return self._update(arg1 or "", arg2 or "", database or "", source)
        if (
            action == sqlite3.SQLITE_INSERT
            and database == "temp"
            and arg1 == self.pending_table
            and source in self.triggers
        ):
            return sqlite3.SQLITE_OK
        return self.deny(REFUSED_ACTION.format(action=_action_name(action, arg1)))

    def _function(self, name: str, source: str | None) -> int:
        if name == self.edit_counter and source in self.triggers:
            return sqlite3.SQLITE_OK
        if name not in ALLOWED_FUNCTIONS:
            return self.deny(REFUSED_FUNCTION.format(name=name))
        if name in COSTLY_FUNCTIONS:
            self.costly_calls += 1
            if self.costly_calls > MAX_COSTLY_CALLS:
                return self.deny(REFUSED_COSTLY.format(cap=MAX_COSTLY_CALLS))
        return sqlite3.SQLITE_OK

    def _read(self, table: str, database: str, source: str | None) -> int:
        if not database:
            # A CTE or subquery result: its own reads of real tables were checked already.
            return sqlite3.SQLITE_OK
        if database == "main" and table == "profile":
            # Only the view of the readable settings may read the real table.
            if source == "profile":
                return sqlite3.SQLITE_OK
            return self.deny(REFUSED_TABLE.format(table="main.profile directly (use profile)"))
        if database == "temp" and table == "profile":
            return sqlite3.SQLITE_OK
        if database == "main" and table == "messages":
            # Only the hidden-row filter view may read the real table.
            if source == self.hidden_view:
                return sqlite3.SQLITE_OK
            return self.deny(REFUSED_TABLE.format(table="main.messages directly (use messages)"))
        if database == "temp":
            if table in SHADOWED or (table == self.hidden_view and source == "messages"):
                return sqlite3.SQLITE_OK
            if source in self.triggers:
                return sqlite3.SQLITE_OK
            return self.deny(REFUSED_TABLE.format(table=f"temp.{table}"))
        if database == "main" and table in READABLE_TABLES:
            return sqlite3.SQLITE_OK
        return self.deny(REFUSED_TABLE.format(table=f"{database}.{table}"))

    def _update(self, table: str, column: str, database: str, source: str | None) -> int:
        if table == "sqlite_master":
            # SQLite also asks this while opening a virtual table (FTS, pragma_*, json_each).
            return self.deny(REFUSED_SCHEMA)
        if EDITABLE_COLUMNS.get(table) != column or source is not None:
            return self.deny(REFUSED_UPDATE_COLUMN.format(table=table, column=column))
        if database != "temp":
            # Only the views are editable; their trigger records, the guard writes.
            return self.deny(REFUSED_DIRECT_UPDATE.format(database=database, table=table))
        return sqlite3.SQLITE_OK

    def count_edit(self, table: str, row_id: Any) -> int:
        """Called by the edit triggers for each row an UPDATE changes; stops the
        statement past MAX_ROWS_CHANGED rows, before it records any more."""
        self.edited.add((table, row_id))
        if len(self.edited) > MAX_ROWS_CHANGED:
            self.deny(TOO_MANY_ROWS.format(cap=MAX_ROWS_CHANGED))
            raise _Stopped
        return 0


def _action_name(action: int, arg1: str | None) -> str:
    for name in dir(sqlite3):
        if (
            name.startswith("SQLITE_")
            and getattr(sqlite3, name) == action
            and name not in ("SQLITE_OK", "SQLITE_DENY", "SQLITE_IGNORE")
        ):
            label = name.removeprefix("SQLITE_").replace("_", " ")
            return f"{label} {arg1}" if arg1 else label
    return f"action {action}"


# Linear-time stand-ins for SQLite's instr, replace and trim, whose C versions compare
# every position with the whole argument (4 s for one instr over 1 MB; 24 s for one trim
# with 10,000 characters to strip) and cannot be interrupted. Same results as SQLite's.


_PRIVATE = threading.local()  # a private in-memory SQLite per thread, for its own answers


def _private_sqlite() -> sqlite3.Connection:
    """This thread's private in-memory SQLite, with the guard's length limit: what
    SQLite's own functions answer (a REAL as text, a printf whose format was checked)."""
    conn: sqlite3.Connection | None = getattr(_PRIVATE, "conn", None)
    if conn is None:
        conn = _PRIVATE.conn = sqlite3.connect(":memory:")
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)
        conn.text_factory = lambda raw: raw.decode("utf-8", "replace")
    return conn


def _as_text(value: Any) -> str:
    """A value as SQLite's text functions read it (a REAL as SQLite prints it)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, float):
        # SQLite's own printf rounds differently from Python's in the 15th digit: ask it.
        cast = _private_sqlite().execute("SELECT CAST(? AS TEXT)", (value,))
        return str(cast.fetchone()[0])
    return str(value)


def _instr(haystack: Any, needle: Any) -> int | None:
    if haystack is None or needle is None:
        return None
    if isinstance(haystack, bytes) and isinstance(needle, bytes):
        return haystack.find(needle) + 1
    return _as_text(haystack).find(_as_text(needle)) + 1


def _replace(policy: _Policy) -> Callable[[Any, Any, Any], Any]:
    def replace(value: Any, old: Any, new: Any) -> Any:
        if value is None or old is None:
            return None
        old_text = _as_text(old)
        if not old_text:
            return value
        if new is None:
            return None
        text, new_text = _as_text(value), _as_text(new)
        # Refuse before building a result SQLite would refuse anyway (its limit is in
        # bytes, which are never fewer than characters).
        if len(text) + text.count(old_text) * (len(new_text) - len(old_text)) > MAX_VALUE_BYTES:
            policy.deny(f"replace(): {TOO_BIG.format(cap=MAX_VALUE_BYTES)}")
            raise _Stopped
        return text.replace(old_text, new_text)

    return replace


def _trim(left: bool, right: bool) -> Callable[..., str | None]:
    def trim(value: Any, characters: Any = " ") -> str | None:
        if value is None or characters is None:
            return None
        text, strip = _as_text(value), frozenset(_as_text(characters))
        start, end = 0, len(text)
        while left and start < end and text[start] in strip:
            start += 1
        while right and end > start and text[end - 1] in strip:
            end -= 1
        return text[start:end]

    return trim


def _printf(policy: _Policy, name: str) -> Callable[..., Any]:
    """SQLite's printf (or format) once its format is checked: no ``*`` (a width taken
    from an argument) and widths and precisions adding up to at most MAX_VALUE_BYTES, so
    one call does bounded work; then SQLite's own printf makes the text."""

    def printf(*args: Any) -> Any:
        if args and args[0] is not None:
            specs = PRINTF_SPEC.findall(_as_text(args[0]))
            if any("*" in spec for spec in specs):
                policy.deny(REFUSED_PRINTF_STAR.format(name=name))
                raise _Stopped
            if sum(_widths(spec) for spec in specs) > MAX_VALUE_BYTES:
                policy.deny(REFUSED_PRINTF_WIDTH.format(name=name, cap=MAX_VALUE_BYTES))
                raise _Stopped
        marks = ", ".join("?" * len(args))
        return _private_sqlite().execute(f"SELECT printf({marks})", args).fetchone()[0]

    return printf


def _widths(spec: str) -> int:
    """The widths and precisions written in one printf conversion, added up (a number
    too long to read counts as over any budget)."""
    numbers = re.findall(r"[0-9]+", spec)
    return sum(int(n) if len(n) <= 9 else MAX_VALUE_BYTES + 1 for n in numbers)


def _on_time(deadline: _Deadline, function: Callable[..., Any]) -> Callable[..., Any]:
    """``function``, refusing to start once the time limit has passed."""

    def run(*args: Any) -> Any:
        if deadline():
            raise _Stopped
        return function(*args)

    return run


def _install_functions(conn: sqlite3.Connection, policy: _Policy, deadline: _Deadline) -> None:
    """The linear stand-ins and the checked printf (they take precedence over SQLite's
    built-ins)."""
    for name, arity, function in (
        ("instr", 2, _instr),
        ("replace", 3, _replace(policy)),
        ("trim", 1, _trim(True, True)),
        ("trim", 2, _trim(True, True)),
        ("ltrim", 1, _trim(True, False)),
        ("ltrim", 2, _trim(True, False)),
        ("rtrim", 1, _trim(False, True)),
        ("rtrim", 2, _trim(False, True)),
        ("printf", -1, _printf(policy, "printf")),
        ("format", -1, _printf(policy, "format")),
    ):
        conn.create_function(name, arity, _on_time(deadline, function), deterministic=True)


def _prepare(conn: sqlite3.Connection, deadline: _Deadline, with_edits: bool) -> _Policy:
    """Shadow the tables with the filtered views (and edit triggers), install the guard
    functions and the limits on ``conn``."""
    # Sorts, DISTINCT/UNION sets and materialised CTEs spill to a temp file beyond a
    # small page cache, however the SQLite library was built (set before any temp object).
    conn.execute("PRAGMA temp_store = FILE")
    tag = secrets.token_hex(8)
    triggers = {table: f"guard_edit_{table}_{tag}" for table in SHADOWED}
    policy = _Policy(
        hidden_view=f"guard_rows_{tag}",
        pending_table=f"guard_pending_{tag}",
        edit_counter=f"guard_count_{tag}",
        triggers=frozenset(triggers.values()) if with_edits else frozenset(),
    )
    conn.execute(
        f"CREATE TEMP VIEW {policy.hidden_view} AS SELECT * FROM main.messages "
        f"WHERE role != '{HIDDEN_ROLE}'"
    )
    conn.execute(f"CREATE TEMP VIEW messages AS SELECT * FROM {policy.hidden_view}")
    conn.execute("CREATE TEMP VIEW memories AS SELECT * FROM main.memories")
    conn.execute("CREATE TEMP VIEW sessions AS SELECT * FROM main.sessions")
    shown = ", ".join(f"'{key}'" for key in READABLE_SETTINGS)
    conn.execute(
        f"CREATE TEMP VIEW profile AS SELECT key, value FROM main.profile WHERE key IN ({shown})"
    )
    if with_edits:
        # old/new have no type, so a BLOB or a number stays what it is until checked.
        conn.execute(
            f"""CREATE TEMP TABLE {policy.pending_table} (
                    tbl TEXT NOT NULL, row_id, old, new, PRIMARY KEY (tbl, row_id))"""
        )
        conn.create_function(policy.edit_counter, 2, policy.count_edit)
        for table, trigger in triggers.items():
            column = EDITABLE_COLUMNS[table]
            conn.execute(
                f"""CREATE TEMP TRIGGER {trigger} INSTEAD OF UPDATE ON {table}
                    WHEN new.{column} IS NOT old.{column}
                    BEGIN
                        SELECT {policy.edit_counter}('{table}', old.id);
                        INSERT OR REPLACE INTO {policy.pending_table} (tbl, row_id, old, new)
                        VALUES ('{table}', old.id, old.{column}, new.{column});
                    END"""
            )
    _install_functions(conn, policy, deadline)
    # Text that is not valid UTF-8 (left by an older version) reads as text with U+FFFD
    # instead of failing the whole query.
    conn.text_factory = lambda raw: raw.decode("utf-8", "replace")
    for limit, value in CONNECTION_LIMITS.items():
        conn.setlimit(limit, value)
    return policy


def run_sql(
    db_path: Path | str,
    sql: object,
    *,
    row_cap: int = ROW_CAP,
    cell_cap: int = CELL_CAP,
    time_limit: float = TIME_LIMIT_SECONDS,
    clock: Callable[[], datetime] = utc_now,
) -> dict[str, Any]:
    """Run one guarded statement; SELECT -> {columns, rows, row_count, truncated},
    UPDATE -> {updated}; any refusal or failure -> {"error": ...}. Never raises."""
    try:
        checked = check_sql(sql)
    except SqlRefused as exc:
        log.info("memory_sql refused (%s)", exc.kind)
        return {"error": str(exc)}
    try:
        conn = connect(db_path, read_only=True)
    except sqlite3.Error as exc:
        log.exception("memory_sql could not open the database")
        return {"error": f"could not open the database: {exc}"}
    conn.isolation_level = None  # autocommit: the guard manages its own transactions
    deadline = _Deadline(time_limit)
    policy: _Policy | None = None
    try:
        policy = _prepare(conn, deadline, with_edits=checked.kind == "UPDATE")
        conn.set_progress_handler(deadline, PROGRESS_STEPS)
        if checked.kind == "SELECT":
            return _select(conn, policy, checked.sql, row_cap, cell_cap)
        edits = _planned_edits(conn, policy, checked.sql)
        conn.close()  # end the read before the write begins (closing twice is harmless)
        return _apply(db_path, edits, format_time(clock()))
    except SqlRefused as exc:
        log.info("memory_sql refused (%s)", exc.kind)
        return {"error": str(exc)}
    except EditConflict as exc:
        log.info("memory_sql refused (edit conflict)")
        return {"error": str(exc)}
    except (sqlite3.Error, MemoryError) as exc:  # a guard function's _Stopped arrives as
        # sqlite3.OperationalError; the reason it recorded is in policy.denied
        log.warning("memory_sql statement stopped (%s)", _failure_kind(exc, policy, deadline))
        return {"error": _failure(exc, policy, deadline)}
    except Exception as exc:  # the guard must answer with data whatever happened
        log.exception("memory_sql failed")
        return {"error": f"memory_sql failed: {type(exc).__name__}: {exc}"}
    finally:
        conn.close()


def _failure_kind(exc: BaseException, policy: _Policy | None, deadline: _Deadline) -> str:
    """What kind of failure ``_failure`` reports, for the log: never the error's text,
    which may quote the person's rows or the model's SQL."""
    if policy is not None and policy.denied:
        return "refused by the guard"
    if deadline.hit:
        return "time limit"
    if isinstance(exc, MemoryError):
        return "too complex"
    return f"{type(exc).__name__} {getattr(exc, 'sqlite_errorname', '')}".strip()


def _failure(exc: BaseException, policy: _Policy | None, deadline: _Deadline) -> str:
    """What the model is told about a statement SQLite (or a guard function) stopped."""
    if policy is not None and policy.denied:
        return policy.denied[0]
    if deadline.hit:
        return TIME_LIMIT_ERROR.format(seconds=deadline.seconds)
    if isinstance(exc, MemoryError):
        # SQLITE_LIMIT_VDBE_OP: SQLite reports a program over the limit as out of memory.
        return REFUSED_TOO_COMPLEX.format(ops=MAX_PROGRAM_OPS)
    message = f"SQL error: {exc}"
    hints = [hint for words, hint in LIMIT_HINTS if words in str(exc)]
    return "; ".join([message, *hints])


def _cell(value: Any, cell_cap: int) -> Any:
    if isinstance(value, bytes):
        return f"<blob {len(value)} bytes>"
    if isinstance(value, str) and len(value) > cell_cap:
        return value[:cell_cap] + "…"
    return value


def _select(
    conn: sqlite3.Connection, policy: _Policy, sql: str, row_cap: int, cell_cap: int
) -> dict[str, Any]:
    # The authorizer stays on while rows are fetched: if SQLite recompiles the statement
    # (the schema changed meanwhile), the new program is checked too.
    conn.set_authorizer(policy)
    try:
        cursor = conn.execute(sql)
        columns = [_cell(str(c[0]), COLUMN_NAME_CAP) for c in cursor.description or ()]
        budget = RESULT_CHAR_CAP - sum(len(name) for name in columns)
        rows: list[list[Any]] = []
        truncated = False
        while (row := cursor.fetchone()) is not None:
            cells = [_cell(value, cell_cap) for value in row]
            size = sum(len(str(cell)) for cell in cells)
            if len(rows) == row_cap or (rows and size > budget):
                truncated = True
                break
            rows.append(cells)
            budget -= size
    finally:
        conn.set_authorizer(None)
    return {"columns": columns, "rows": rows, "row_count": len(rows), "truncated": truncated}


def _planned_edits(conn: sqlite3.Connection, policy: _Policy, sql: str) -> list[Edit]:
    """Run the UPDATE on the read-only connection, where the views' triggers only record
    what it would change; those changes, checked."""
    conn.set_authorizer(policy)
    try:
        conn.execute(sql)
    finally:
        conn.set_authorizer(None)
    recorded = conn.execute(
        f"""SELECT tbl, row_id, typeof(old), CAST(old AS BLOB), typeof(new), CAST(new AS BLOB)
            FROM temp.{policy.pending_table} ORDER BY rowid"""
    ).fetchall()
    return [_edit(*row) for row in recorded]


def _edit(
    table: str, row_id: Any, old_kind: str, old_raw: bytes, new_kind: str, new_raw: bytes | None
) -> Edit:
    column = EDITABLE_COLUMNS[table]
    where = f"{table}.{column}"
    if new_kind != "text" or new_raw is None:
        raise SqlRefused(
            NOT_TEXT.format(where=where, kind="NULL" if new_kind == "null" else new_kind), "edit"
        )
    try:
        new = new_raw.decode("utf-8")
    except UnicodeDecodeError:
        raise SqlRefused(NOT_UTF8.format(where=where), "edit") from None
    if "\x00" in new:
        raise SqlRefused(HAS_NUL.format(where=where), "edit")
    old = _stored(old_kind, old_raw)
    if len(new) > max(MAX_WRITE_CHARS[table], len(old)):  # a long message may shrink
        raise SqlRefused(TOO_LONG.format(where=where, cap=MAX_WRITE_CHARS[table]), "edit")
    if table in NOT_EMPTY and not new.strip():
        raise SqlRefused(EMPTY_TEXT.format(where=where), "edit")
    return Edit(table, row_id, column, old, new)


def _stored(kind: str, raw: bytes) -> str | bytes:
    """The value a row holds now, as text when it is text (else its bytes)."""
    if kind == "text":
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            return raw
    return raw


def _apply(db_path: Path | str, edits: list[Edit], now: str) -> dict[str, Any]:
    """Write the planned edits by id in one short transaction, with their journal."""
    if not edits:
        return {"updated": 0}
    conn = connect(db_path)
    conn.isolation_level = None
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            apply_edits(conn, edits, new_batch_id(), now)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
    finally:
        conn.close()
    return {"updated": len(edits)}
