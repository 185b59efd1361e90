"""memory_sql: the model's read (and careful edit) access to the chat database in SQL.

What makes this safe lives in the store's ``run_sql`` (``memory.sqlite.sql_guard``,
``memory.postgres.sql_guard``) and ``memory.rules.sql_policy``: one SELECT or UPDATE,
memory_tool rows out of sight; time, size and row limits; an UPDATE changes a few rows
at most, text only, journalled so ``companion undo-sql`` can undo it. This module only
declares the tool and unwraps what models wrap SQL in (code fences). docs/security.md.
"""

from __future__ import annotations

import re
from typing import Any

from memory import SqlRefused
from memory.rules.sql_policy import (
    CELL_CAP,
    MAX_COLUMNS,
    MAX_ROWS_CHANGED,
    ROW_CAP,
    check_sql,
    format_result,
)
from tools.base import ToolContext, ToolSpec

FENCE = re.compile(r"^\s*```[a-zA-Z]*\s*\n?(.*?)\n?\s*```\s*$", re.DOTALL)

USE_WHEN = (
    "Run one SQL statement (SQLite) over the chat database when a question needs counting, "
    "listing or exact lookups that memory_search cannot do, or to correct stored text."
)
DESCRIPTION = (
    "Only SELECT (WITH … SELECT allowed) and UPDATE run; anything else is refused. "
    "Tables: messages(id, session_id, role, content, created_at UTC 'YYYY-MM-DD HH:MM:SS', "
    "tool_name, meta, image_path), sessions(id, title, persona, created_at), "
    "memories(id, category, key, value, created_at, updated_at, last_recalled_at, "
    "recall_count), segments(id, session_id, start_at, end_at, summary), profile(key, value). "
    "Editable: messages.content, memories.value, sessions.title; an UPDATE writes text "
    f"only and changes at most {MAX_ROWS_CHANGED} rows (more: nothing changes). At most "
    f"{ROW_CAP} rows, {MAX_COLUMNS} columns and {CELL_CAP} characters per cell come back. "
    "Example: SELECT created_at, content FROM messages "
    "WHERE role = 'user' AND content LIKE '%cook%' ORDER BY id DESC LIMIT 10"
)
PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "sql": {
            "type": "string",
            "minLength": 1,
            "description": "One SELECT or UPDATE statement.",
        }
    },
    "required": ["sql"],
    "additionalProperties": False,
}


def unfence(text: str) -> str:
    """The SQL inside a Markdown code fence, or the text itself."""
    found = FENCE.match(text)
    return found[1].strip() if found else text.strip()


async def memory_sql(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    """Run the guarded statement through the store (``AsyncStore.run_sql``)."""
    sql = args.get("sql")
    if not isinstance(sql, str):
        return {"error": "memory_sql needs an `sql` string"}
    return await ctx.store.run_sql(unfence(sql), now=ctx.now())


def parse_command(text: str) -> dict[str, Any]:
    """``/memory_sql`` + SQL on the same or the following lines."""
    return {"sql": unfence(text)}


def is_write(args: dict[str, Any]) -> bool:
    """True unless the statement is a SELECT (refused SQL never runs, so it writes nothing)."""
    try:
        return check_sql(unfence(str(args.get("sql") or ""))).kind != "SELECT"
    except SqlRefused:
        return False


async def has_history(ctx: ToolContext) -> bool:
    """Gate: offered only when there is history beyond the message being answered."""
    return (await ctx.memory_gates()).history


TOOLS = [
    ToolSpec(
        name="memory_sql",
        use_when=USE_WHEN,
        description=DESCRIPTION,
        parameters=PARAMETERS,
        run=memory_sql,
        role="memory_tool",
        command="memory_sql",
        parse_command=parse_command,
        available=has_history,
        format=format_result,
        multiline=True,
        examples=("/memory_sql\nSELECT COUNT(*) FROM messages WHERE role = 'user'",),
        writes_memory=is_write,
        private=True,
    )
]
