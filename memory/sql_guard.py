"""Run model-written SQL over the chat database safely (the memory_sql tool's engine).

The model may write anything, so nothing here trusts the text. Three layers:

1. **Parse** (sqlparse): exactly one statement, of type SELECT (``WITH … SELECT``
   included) or UPDATE; INSERT, DELETE, REPLACE, DROP, ALTER, CREATE, ATTACH, DETACH,
   PRAGMA, VACUUM, REINDEX, ANALYZE, ``UPDATE OR …`` conflict clauses (``OR REPLACE``
   deletes rows), RETURNING and load_extension are refused before anything runs.
2. **SQLite's authorizer**, consulted while SQLite compiles the statement, so it sees
   what the SQL really does whatever its spelling: only SELECT, READ of the allowed
   tables, RECURSIVE, allow-listed FUNCTIONs, and UPDATE of the editable columns pass.
   SELECTs run on a read-only connection.
3. **Hidden rows by construction**: on the guard's own connection, the unqualified name
   ``messages`` is a TEMP view (the temp schema shadows main) over a second TEMP view with
   a random per-connection name that drops ``role = 'memory_tool'`` rows. The authorizer
   allows reading ``main.messages`` only when SQLite reports that random view as the
   reader — a CTE named ``messages`` or a qualified ``main.messages`` is refused, and
   the temp schema (where the random name could be read) and the FTS tables (whose index
   covers every row) are unreadable. Each run opens a fresh connection with a fresh
   random name, so even a name leaked by one run is useless to the next. An UPDATE of
   ``messages`` goes through an INSTEAD OF trigger on the view that records
   ``(id, content)`` in a temp table; only after the user statement has finished does the
   guard apply those edits with its own parameterised UPDATE, which again skips
   memory_tool rows (and lets the FTS index follow through the store's own triggers).

Editable columns: ``messages.content``, ``memories.value``, ``sessions.title`` — text the
user may want corrected; ids, roles, timestamps and FSRS state stay out of reach.

Runaway queries stop at a time limit (progress handler); results are capped in rows and
cell length. ``run_sql`` never raises: every failure is ``{"error": ...}``.
"""

from __future__ import annotations

import secrets
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import sqlparse
from sqlparse import tokens as T

from memory.db import connect
from memory.text import word_set

MAX_SQL_CHARS = 20_000
ROW_CAP = 100
CELL_CAP = 500
TIME_LIMIT_SECONDS = 2.0
PROGRESS_STEPS = 1_000
MAX_VALUE_BYTES = 1_000_000

HIDDEN_ROLE = "memory_tool"
READABLE_TABLES = frozenset(
    {"sessions", "memories", "segments", "profile", "sqlite_master", "schema_version"}
)
EDITABLE_COLUMNS: dict[str, frozenset[str]] = {
    "messages": frozenset({"content"}),
    "memories": frozenset({"value"}),
    "sessions": frozenset({"title"}),
}
FORBIDDEN_KEYWORDS = frozenset(
    {
        "INSERT",
        "DELETE",
        "REPLACE",
        "DROP",
        "ALTER",
        "CREATE",
        "ATTACH",
        "DETACH",
        "PRAGMA",
        "VACUUM",
        "REINDEX",
        "ANALYZE",
        "RETURNING",
        "UPSERT",
        "TRUNCATE",
        "GRANT",
        "REVOKE",
        "BEGIN",
        "COMMIT",
        "ROLLBACK",
        "SAVEPOINT",
        "RELEASE",
        "EXPLAIN",
    }
)
FORBIDDEN_FUNCTIONS = frozenset(
    {"load_extension", "readfile", "writefile", "edit", "fts3_tokenizer", "zeroblob", "randomblob"}
)
ALLOWED_FUNCTIONS = word_set(
    """
    abs avg changes char coalesce concat concat_ws count cume_dist date datetime dense_rank
    first_value format glob group_concat hex ifnull iif instr json json_array
    json_array_length json_extract json_group_array json_group_object json_object json_quote
    json_type json_valid julianday lag last_value lead length like likelihood likely lower
    ltrim max min nth_value ntile nullif percent_rank printf quote random rank replace round
    row_number rtrim sign strftime string_agg substr substring sum time timediff total trim
    typeof unicode unixepoch unlikely upper
    """
)

REFUSED_TYPE = (
    "refused: {what} is not allowed — memory_sql runs one SELECT (or WITH … "
    "SELECT) or UPDATE statement"
)
REFUSED_KEYWORD = "refused: {what} is not allowed in memory_sql"
REFUSED_UPDATE_COLUMN = (
    "refused: updating {table}.{column} is not allowed; editable: "
    "messages.content, memories.value, sessions.title"
)
REFUSED_TABLE = "refused: reading {table} is not allowed"
REFUSED_SCHEMA = (
    "refused: changing the schema (sqlite_master) or using virtual tables (the FTS "
    "indexes messages_fts/segments_fts, pragma_*, json_each) is not allowed"
)
REFUSED_DIRECT_UPDATE = "refused: updating main.messages directly is not allowed (UPDATE messages)"
REFUSED_FUNCTION = "refused: function {name}() is not allowed"
REFUSED_ACTION = "refused: {action} is not allowed"
TIME_LIMIT_ERROR = (
    "query stopped: it ran longer than {seconds:g} s (time limit); add a LIMIT or a narrower WHERE"
)


class SqlRefused(Exception):
    """The SQL was refused before running; the message names what was refused."""


@dataclass(frozen=True)
class Checked:
    """A statement that passed the parse layer."""

    sql: str
    kind: str  # "SELECT" or "UPDATE"


def check_sql(sql: object) -> Checked:
    """The parse layer: one SELECT or UPDATE statement, or SqlRefused naming the problem."""
    if not isinstance(sql, str):
        raise SqlRefused("refused: the SQL must be text")
    text = sql.strip()
    if not text:
        raise SqlRefused("refused: no SQL given")
    if len(text) > MAX_SQL_CHARS:
        raise SqlRefused(f"refused: SQL longer than {MAX_SQL_CHARS} characters")
    if "\x00" in text:
        raise SqlRefused("refused: the SQL contains a NUL character")
    try:
        statements = [
            statement
            for statement in sqlparse.parse(text)
            if statement.token_first(skip_cm=True, skip_ws=True) is not None
        ]
    except Exception as exc:  # sqlparse's own limits (deep nesting) or a parser bug
        raise SqlRefused(f"refused: the SQL could not be parsed ({type(exc).__name__})") from exc
    if not statements:
        raise SqlRefused("refused: no SQL statement given (only comments)")
    if len(statements) > 1:
        raise SqlRefused("refused: several statements given; send one at a time")
    statement = statements[0]
    kind = statement.get_type()
    if kind not in ("SELECT", "UPDATE"):
        first = statement.token_first(skip_cm=True, skip_ws=True)
        what = kind if kind != "UNKNOWN" else (first.value.upper() if first else "it")
        raise SqlRefused(REFUSED_TYPE.format(what=what))
    previous = ""
    for token in statement.flatten():
        if token.is_whitespace or token.ttype in T.Comment:
            continue
        word = token.value.upper()
        if token.ttype in T.Keyword and word in FORBIDDEN_KEYWORDS:
            raise SqlRefused(REFUSED_KEYWORD.format(what=word))
        if token.ttype in T.Name and token.value.lower() in FORBIDDEN_FUNCTIONS:
            raise SqlRefused(REFUSED_FUNCTION.format(name=token.value.lower()))
        if previous == "UPDATE" and word == "OR":
            raise SqlRefused(REFUSED_KEYWORD.format(what="UPDATE OR … (conflict clause)"))
        previous = word
    return Checked(text, kind)


@dataclass
class _Policy:
    """The authorizer of one guarded run; remembers why it first said no."""

    hidden_view: str
    edit_trigger: str
    pending_table: str
    denied: list[str] = field(default_factory=list)

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
            name = (arg2 or "").lower()
            if name in ALLOWED_FUNCTIONS:
                return sqlite3.SQLITE_OK
            return self.deny(REFUSED_FUNCTION.format(name=name))
        if action == sqlite3.SQLITE_READ:
            return self._read(arg1 or "", database or "", source)
        if action == sqlite3.SQLITE_UPDATE:
            return self._update(arg1 or "", arg2 or "", database or "", source)
        if (
            action == sqlite3.SQLITE_INSERT
            and database == "temp"
            and arg1 == self.pending_table
            and source == self.edit_trigger
        ):
            return sqlite3.SQLITE_OK
        return self.deny(REFUSED_ACTION.format(action=_action_name(action, arg1)))

    def _read(self, table: str, database: str, source: str | None) -> int:
        if not database:
            # A CTE or subquery result: its own reads of real tables were checked already.
            return sqlite3.SQLITE_OK
        if database == "main" and table == "messages":
            # Only the hidden-row filter view may read the real table.
            if source == self.hidden_view:
                return sqlite3.SQLITE_OK
            return self.deny(REFUSED_TABLE.format(table="main.messages directly (use messages)"))
        if database == "temp":
            if table == "messages" or (table == self.hidden_view and source == "messages"):
                return sqlite3.SQLITE_OK
            if source == self.edit_trigger:
                return sqlite3.SQLITE_OK
            return self.deny(REFUSED_TABLE.format(table=f"temp.{table}"))
        if database == "main" and table in READABLE_TABLES:
            return sqlite3.SQLITE_OK
        return self.deny(REFUSED_TABLE.format(table=f"{database}.{table}"))

    def _update(self, table: str, column: str, database: str, source: str | None) -> int:
        if table == "sqlite_master":
            # SQLite also asks this while opening a virtual table (FTS, pragma_*, json_each).
            return self.deny(REFUSED_SCHEMA)
        allowed = EDITABLE_COLUMNS.get(table, frozenset())
        if table == "messages":
            # The view (temp) is editable; the real table only through the guard itself.
            if database == "temp" and column in allowed and source is None:
                return sqlite3.SQLITE_OK
            if database != "temp":
                return self.deny(REFUSED_DIRECT_UPDATE)
        elif database == "main" and column in allowed and source is None:
            return sqlite3.SQLITE_OK
        return self.deny(REFUSED_UPDATE_COLUMN.format(table=table, column=column))


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


def _prepare(conn: sqlite3.Connection, with_edits: bool) -> _Policy:
    """Shadow ``messages`` with the filtered views (and the edit trigger) on ``conn``."""
    tag = secrets.token_hex(8)
    policy = _Policy(f"guard_rows_{tag}", f"guard_edit_{tag}", f"guard_pending_{tag}")
    conn.execute(
        f"CREATE TEMP VIEW {policy.hidden_view} AS SELECT * FROM main.messages "
        f"WHERE role != '{HIDDEN_ROLE}'"
    )
    conn.execute(f"CREATE TEMP VIEW messages AS SELECT * FROM {policy.hidden_view}")
    if with_edits:
        conn.execute(
            f"CREATE TEMP TABLE {policy.pending_table} (id INTEGER PRIMARY KEY, content TEXT)"
        )
        conn.execute(
            f"""CREATE TEMP TRIGGER {policy.edit_trigger} INSTEAD OF UPDATE ON messages
                BEGIN
                    INSERT OR REPLACE INTO {policy.pending_table} (id, content)
                    VALUES (old.id, new.content);
                END"""
        )
    conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
    conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)
    return policy


def _cell(value: Any, cell_cap: int) -> Any:
    if isinstance(value, bytes):
        return f"<blob {len(value)} bytes>"
    if isinstance(value, str) and len(value) > cell_cap:
        return value[:cell_cap] + "…"
    return value


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


def run_sql(
    db_path: Path | str,
    sql: object,
    *,
    row_cap: int = ROW_CAP,
    cell_cap: int = CELL_CAP,
    time_limit: float = TIME_LIMIT_SECONDS,
) -> dict[str, Any]:
    """Run one guarded statement; SELECT -> {columns, rows, row_count, truncated},
    UPDATE -> {updated}; any refusal or failure -> {"error": ...}. Never raises."""
    try:
        checked = check_sql(sql)
    except SqlRefused as exc:
        return {"error": str(exc)}
    try:
        conn = connect(db_path, read_only=checked.kind == "SELECT")
    except sqlite3.Error as exc:
        return {"error": f"could not open the database: {exc}"}
    conn.isolation_level = None  # the guard manages its one transaction itself
    try:
        policy = _prepare(conn, with_edits=checked.kind == "UPDATE")
        deadline = _Deadline(time_limit)
        conn.set_progress_handler(deadline, PROGRESS_STEPS)
        try:
            if checked.kind == "SELECT":
                return _select(conn, policy, checked.sql, row_cap, cell_cap)
            return _update(conn, policy, checked.sql)
        except sqlite3.Error as exc:
            if policy.denied:
                return {"error": policy.denied[0]}
            if deadline.hit:
                return {"error": TIME_LIMIT_ERROR.format(seconds=time_limit)}
            return {"error": f"SQL error: {exc}"}
    except Exception as exc:  # the guard must answer with data whatever happened
        return {"error": f"memory_sql failed: {type(exc).__name__}: {exc}"}
    finally:
        conn.close()


def _select(
    conn: sqlite3.Connection, policy: _Policy, sql: str, row_cap: int, cell_cap: int
) -> dict[str, Any]:
    conn.set_authorizer(policy)
    try:
        cursor = conn.execute(sql)
        columns = [column[0] for column in cursor.description or ()]
        fetched = cursor.fetchmany(row_cap + 1)
    finally:
        conn.set_authorizer(None)
    rows = [[_cell(value, cell_cap) for value in row] for row in fetched[:row_cap]]
    return {
        "columns": columns,
        "rows": rows,
        "row_count": len(rows),
        "truncated": len(fetched) > row_cap,
    }


def _update(conn: sqlite3.Connection, policy: _Policy, sql: str) -> dict[str, Any]:
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.set_authorizer(policy)
        try:
            cursor = conn.execute(sql)
        finally:
            conn.set_authorizer(None)
        direct = max(cursor.rowcount, 0)
        pending = conn.execute(f"SELECT id, content FROM temp.{policy.pending_table}").fetchall()
        applied = 0
        for row in pending:
            applied += conn.execute(
                "UPDATE main.messages SET content = ? WHERE id = ? AND role != ?",
                (row["content"], row["id"], HIDDEN_ROLE),
            ).rowcount
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return {"updated": applied if pending else direct}


def format_result(result: dict[str, Any]) -> str:
    """A readable text table of a run_sql result (or the error / update count)."""
    if "error" in result:
        return f"Error: {result['error']}"
    if "updated" in result:
        return f"{result['updated']} row(s) updated."
    columns = [str(column) for column in result.get("columns", [])]
    rows = [
        ["NULL" if v is None else str(v).replace("\n", " ") for v in row]
        for row in result.get("rows", [])
    ]
    if not columns:
        return "(no columns)"
    widths = [min(60, max([len(c)] + [len(r[i]) for r in rows])) for i, c in enumerate(columns)]

    def line(cells: list[str]) -> str:
        return " | ".join(
            (cell if len(cell) <= widths[i] else cell[: widths[i] - 1] + "…").ljust(widths[i])
            for i, cell in enumerate(cells)
        ).rstrip()

    out = [line(columns), "-+-".join("-" * w for w in widths)]
    out.extend(line(row) for row in rows)
    footer = f"({result.get('row_count', len(rows))} row(s)"
    footer += ", truncated)" if result.get("truncated") else ")"
    out.append(footer)
    return "\n".join(out)
