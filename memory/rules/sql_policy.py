"""SQL policy."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import sqlparse
from sqlparse import tokens as T

from memory.errors import EditConflict, SqlRefused
from memory.rules.memories import MAX_VALUE_CHARS

MAX_SQL_CHARS = 20_000
TIME_LIMIT_SECONDS = 2.0


# What comes back: at most ROW_CAP rows, each cell cut at CELL_CAP characters, column
# names at COLUMN_NAME_CAP, and rows stop once RESULT_CHAR_CAP characters are used (the
# first row always comes: at most MAX_COLUMNS cells, so about the same size).
ROW_CAP = 100
CELL_CAP = 500
COLUMN_NAME_CAP = 60
RESULT_CHAR_CAP = 16_000


# What an UPDATE may write: at most this many rows per call, text only, this long.
MAX_ROWS_CHANGED = 20
MAX_WRITE_CHARS = {"messages": 100_000, "memories": MAX_VALUE_CHARS, "sessions": 200}
NOT_EMPTY = frozenset({"memories", "sessions"})  # the store refuses empty values/titles too


# The settings memory_sql may read (``profile`` is a view of these rows only): never an API
# key, a password or a URL that may carry credentials, which go only to the endpoint they
# were given for. tests/memory/sqlite/test_sql_guard.py checks this list against config's keys.
READABLE_SETTINGS = (
    "chat_model",
    "vision_model",
    "tool_mode",
    "image_backend",
    "image_model",
    "latitude",
    "longitude",
    "timezone",
    "persona",
    "identity",
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
REFUSED_FUNCTION = "refused: function {name}() is not allowed"
TOO_MANY_ROWS = (
    "refused: this UPDATE would change more than {cap} rows, and memory_sql changes at "
    "most {cap} rows per call, so nothing was changed; narrow the WHERE clause "
    "(for example WHERE id IN (…))"
)
TOO_LONG = "refused: {where} is at most {cap:,} characters; nothing was changed"
EMPTY_TEXT = "refused: {where} cannot be empty; nothing was changed"


def sql_text(sql: object) -> str:
    """The model's SQL, stripped, if it is text a parser should see at all (both
    backends): not empty, not too long, no NUL; else SqlRefused."""
    if not isinstance(sql, str):
        raise SqlRefused("refused: the SQL must be text", "input")
    text = sql.strip()
    if not text:
        raise SqlRefused("refused: no SQL given", "input")
    if len(text) > MAX_SQL_CHARS:
        raise SqlRefused(f"refused: SQL longer than {MAX_SQL_CHARS} characters", "input")
    if "\x00" in text:
        raise SqlRefused("refused: the SQL contains a NUL character", "input")
    return text


HIDDEN_ROLE = "memory_tool"
EDITABLE_COLUMNS: dict[str, str] = {
    "messages": "content",
    "memories": "value",
    "sessions": "title",
}
KEPT_BATCHES = 50
EDIT_CONFLICT = (
    "{rows} changed since {when}; nothing was {done} (run it again to see the current values)"
)


def undo_conflict(moved: list[str], created_at: str) -> EditConflict:
    """The refusal of an undo whose rows (``moved``: their labels) changed since
    memory_sql edited them at ``created_at``."""
    return EditConflict(
        EDIT_CONFLICT.format(
            rows=", ".join(moved),
            when=f"memory_sql edited them at {created_at}",
            done="restored",
        )
    )


def new_batch_id() -> str:
    """A fresh batch id."""
    return uuid.uuid4().hex[:12]


MAX_COLUMNS = 32  # result columns (a 1,891-column SELECT made a 95 MB result)
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


@dataclass(frozen=True)
class Checked:
    """A statement that passed the parse layer."""

    sql: str
    kind: str  # "SELECT" or "UPDATE"


def check_sql(sql: object) -> Checked:
    """The parse layer: one SELECT or UPDATE statement, or SqlRefused naming the problem."""
    text = sql_text(sql)
    try:
        statements = [
            statement
            for statement in sqlparse.parse(text)
            if statement.token_first(skip_cm=True, skip_ws=True) is not None
        ]
    except Exception as exc:  # sqlparse's own limits (deep nesting) or a parser bug
        raise SqlRefused(
            f"refused: the SQL could not be parsed ({type(exc).__name__})", "parse"
        ) from exc
    if not statements:
        raise SqlRefused("refused: no SQL statement given (only comments)", "input")
    if len(statements) > 1:
        raise SqlRefused("refused: several statements given; send one at a time", "statement")
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
            raise SqlRefused(REFUSED_KEYWORD.format(what=word), "keyword")
        if token.ttype in T.Name and token.value.lower() in FORBIDDEN_FUNCTIONS:
            raise SqlRefused(REFUSED_FUNCTION.format(name=token.value.lower()), "function")
        if previous == "UPDATE" and word == "OR":
            raise SqlRefused(
                REFUSED_KEYWORD.format(what="UPDATE OR … (conflict clause)"), "keyword"
            )
        previous = word
    return Checked(text, kind)


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
