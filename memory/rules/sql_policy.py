"""SQL policy."""

from __future__ import annotations

import uuid

from memory.errors import SqlRefused
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
# were given for. tests/unit/test_sql_guard.py checks this list against config's keys.
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


def new_batch_id() -> str:
    """A fresh batch id."""
    return uuid.uuid4().hex[:12]
