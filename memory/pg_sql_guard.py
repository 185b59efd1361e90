"""memory_sql on Postgres (issue 15): model-written SQL over one person's rows of a shared
database, held by the database itself rather than by string pasting.

On SQLite (memory.sql_guard) each person has a file of their own and the guard shadows
tables with views and watches every compiled step. On Postgres every person's rows share
the tables, so the statement runs where the database enforces the limits:

1. **Parse** — the same pre-check as SQLite, ``sql_guard.check_sql`` itself: one
   statement, SELECT (``WITH … SELECT`` included) or UPDATE, none of the forbidden
   keywords (INSERT, DELETE, DROP, RETURNING — so no data-modifying CTE —, BEGIN, …).
   It is backend-neutral; its SQLite-only words (PRAGMA, ATTACH, load_extension) simply
   never match here. Nothing else SQLite-specific is reused: the authorizer, TEMP views
   and function allow-list are replaced by the layers below.
2. **A restricted role** — the statement runs after ``SET LOCAL ROLE companion_sql``, a
   NOLOGIN role the app role may become (``prepare``), which may SELECT sessions and
   messages and UPDATE only ``messages.content`` and ``sessions.title``: no other table
   (schema_version, profile, running_turns, memories, …), no INSERT or DELETE, no
   sequence, no server files (``pg_read_file``, ``COPY`` need roles it lacks).
3. **Row-level security** — the tables' person policy (memory.pg_store) applies to it,
   scoped to the person through ``app.person``, set for this transaction alone; and a
   restrictive policy for companion_sql drops ``role = 'memory_tool'`` messages from
   everything it reads or updates, whatever the spelling (CTE named messages,
   ``public.messages``, subqueries, UNION). Because the person policy trusts a setting,
   ``prepare`` takes ``set_config`` from PUBLIC (the app role keeps it): otherwise a
   SELECT could set ``app.person`` to someone else in the middle of its own scan.
   ``SET``/``RESET`` statements are refused by the parse and are not allowed inside the
   functions that run SQL text (``query_to_xml``), which are not volatile.
4. **Read-only SELECTs** — a SELECT runs in a ``READ ONLY`` transaction, so whatever
   it calls cannot write tables, and the transaction is rolled back, never committed,
   which also undoes what READ ONLY lets through (``lo_create``, ``pg_notify``).

Limits: ``statement_timeout`` for the transaction (``timeout_ms``; also set on the role,
though a role's settings only apply to logins); at most ``max_rows`` rows fetched
(``max_rows + 1`` read to report truncation), cells, column names and the whole result
capped as on SQLite; an UPDATE changing more than ``sql_guard.MAX_ROWS_CHANGED`` rows is
rolled back. ``run_sql`` never raises: every failure is ``{"error": ...}``.

Not covered yet: memories and segments (not granted to companion_sql until their tables'
guard is written), the journal of edits (an UPDATE here is not journalled, so
``companion undo-sql`` cannot undo it), SQLite's checks of the new text (length caps,
non-empty titles), and a general function allow-list: Postgres functions granted to
PUBLIC stay callable, except set_config and the large-object writers, which ``prepare``
takes back (time is bounded by statement_timeout).
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from psycopg import AsyncConnection, Rollback, errors
from psycopg.sql import SQL, Identifier, Literal

from memory.sql_guard import (
    CELL_CAP,
    COLUMN_NAME_CAP,
    MAX_ROWS_CHANGED,
    RESULT_CHAR_CAP,
    ROW_CAP,
    TIME_LIMIT_SECONDS,
    TOO_MANY_ROWS,
    SqlRefused,
    check_sql,
)
from memory.sql_journal import HIDDEN_ROLE
from memory.store import format_time

log = logging.getLogger("companion.memory_sql")

SQL_ROLE = "companion_sql"
APP_ROLE = "companion"
READABLE: tuple[str, ...] = ("sessions", "messages")
# Server-side large-object functions that create or change one (granted to PUBLIC by
# default); ``prepare`` takes them back.
LARGE_OBJECT_WRITERS = (
    "pg_catalog.lo_create(oid)",
    "pg_catalog.lo_creat(integer)",
    "pg_catalog.lo_from_bytea(oid, bytea)",
    "pg_catalog.lo_put(oid, bigint, bytea)",
    "pg_catalog.lo_unlink(oid)",
    "pg_catalog.lo_truncate(integer, integer)",
    "pg_catalog.lo_truncate64(integer, bigint)",
    "pg_catalog.lowrite(integer, bytea)",
    "pg_catalog.lo_open(oid, integer)",
)
EDITABLE: dict[str, str] = {"messages": "content", "sessions": "title"}
ROLE_TIMEOUT = f"{TIME_LIMIT_SECONDS:g}s"

PERMISSION_DENIED = (
    "refused: {detail} — memory_sql reads sessions and messages and may change only "
    "messages.content and sessions.title"
)
READ_ONLY = "refused: a SELECT cannot change anything ({detail}); use UPDATE to edit text"
TIME_LIMIT = (
    "query stopped: it ran longer than {seconds:g} s (time limit); add a LIMIT or a narrower WHERE"
)
NO_DATABASE = "could not reach the database: {detail}"


async def prepare(admin_url: str, sql_role: str = SQL_ROLE, app_role: str = APP_ROLE) -> None:
    """Create (or bring up to date) the restricted role memory_sql runs as, its grants and
    its row-level security policies; run as the admin after ``pg_store.migrate``."""
    role, app = Identifier(sql_role), Identifier(app_role)
    connecting = AsyncConnection.connect(admin_url, autocommit=True)
    async with await connecting as conn, conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(hashtext('companion.sql_guard'))")
        cursor = await conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (sql_role,))
        if await cursor.fetchone() is None:
            await conn.execute(
                SQL(
                    "CREATE ROLE {} NOLOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS"
                ).format(role)
            )
        await conn.execute(SQL("GRANT {} TO {}").format(role, app))
        await conn.execute(
            SQL("ALTER ROLE {} SET statement_timeout = {}").format(role, Literal(ROLE_TIMEOUT))
        )
        tables = SQL(", ").join(map(Identifier, READABLE))
        # Exactly these privileges: take back anything granted before, then grant.
        await conn.execute(SQL("REVOKE ALL ON {} FROM {}").format(tables, role))
        await conn.execute(SQL("GRANT SELECT ON {} TO {}").format(tables, role))
        for table, column in EDITABLE.items():
            await conn.execute(
                SQL("GRANT UPDATE ({}) ON {} TO {}").format(
                    Identifier(column), Identifier(table), role
                )
            )
        # The person policy trusts app.person, so the role must not be able to set it.
        await conn.execute(
            "REVOKE EXECUTE ON FUNCTION pg_catalog.set_config(text, text, boolean) FROM PUBLIC"
        )
        await conn.execute(
            SQL(
                "GRANT EXECUTE ON FUNCTION pg_catalog.set_config(text, text, boolean) TO {}"
            ).format(app)
        )
        # Large objects live outside every table's row-level security, and an UPDATE
        # commits: nobody but the owner may make or change one.
        for function in LARGE_OBJECT_WRITERS:
            await conn.execute(
                SQL("REVOKE EXECUTE ON FUNCTION {} FROM PUBLIC").format(SQL(function))
            )
        policy = Identifier(f"messages_{sql_role}_hidden")
        await conn.execute(SQL("DROP POLICY IF EXISTS {} ON messages").format(policy))
        # The app role is a member of sql_role, and a policy for a role also binds its
        # members: the condition holds only while the current user is sql_role itself.
        await conn.execute(
            SQL(
                "CREATE POLICY {policy} ON messages AS RESTRICTIVE FOR ALL TO {role} "
                "USING (role <> {hidden} OR current_user <> {name}) "
                "WITH CHECK (role <> {hidden} OR current_user <> {name})"
            ).format(policy=policy, role=role, hidden=Literal(HIDDEN_ROLE), name=Literal(sql_role))
        )


def _cell(value: Any) -> Any:
    """A value as the tool returns it: JSON-friendly, long text cut like on SQLite."""
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, bytes | memoryview):
        return f"<blob {len(bytes(value))} bytes>"
    text = format_time(value) if isinstance(value, datetime) else str(value)
    return text if len(text) <= CELL_CAP else text[:CELL_CAP] + "…"


def _error(exc: Exception, timeout_ms: int) -> str:
    """What the model is told about a statement Postgres refused or stopped."""
    detail = exc.diag.message_primary if isinstance(exc, errors.Error) else None
    detail = detail or str(exc)
    if isinstance(exc, errors.QueryCanceled):
        return TIME_LIMIT.format(seconds=timeout_ms / 1000)
    if isinstance(exc, errors.InsufficientPrivilege):
        return PERMISSION_DENIED.format(detail=detail)
    if isinstance(exc, errors.ReadOnlySqlTransaction):
        return READ_ONLY.format(detail=detail)
    if isinstance(exc, errors.OperationalError):
        return NO_DATABASE.format(detail=detail)
    return f"SQL error: {detail}"


async def run_sql(
    url: str, person: str, sql: str, *, max_rows: int = ROW_CAP, timeout_ms: int = 2000
) -> dict[str, Any]:
    """Run one guarded statement as ``person``; SELECT -> {columns, rows, row_count,
    truncated}, UPDATE -> {updated}; any refusal or failure -> {"error": ...}. Never raises."""
    try:
        checked = check_sql(sql)
    except SqlRefused as exc:
        log.info("memory_sql refused: %s", exc)
        return {"error": str(exc)}
    if not person:
        return {"error": "memory_sql needs a person"}
    try:
        connecting = AsyncConnection.connect(url, autocommit=True)
        async with await connecting as conn, conn.transaction():
            cursor = conn.cursor()
            if checked.kind == "SELECT":
                await cursor.execute("SET TRANSACTION READ ONLY")
            await cursor.execute(
                """SELECT set_config('app.person', %s, true),
                              set_config('statement_timeout', %s, true)""",
                (person, str(max(1, timeout_ms))),
            )
            await cursor.execute(SQL("SET LOCAL ROLE {}").format(Identifier(SQL_ROLE)))
            # Parameters (none) make psycopg use the extended protocol, which runs one
            # statement only, whatever the parse above concluded; % is then escaped.
            await cursor.execute(checked.sql.replace("%", "%%"), ())
            if checked.kind == "UPDATE":
                changed = cursor.rowcount
                if changed > MAX_ROWS_CHANGED:
                    raise SqlRefused(TOO_MANY_ROWS.format(cap=MAX_ROWS_CHANGED))
                return {"updated": changed}
            columns = [
                str(_cell(column.name))[:COLUMN_NAME_CAP] for column in cursor.description or ()
            ]
            fetched = await cursor.fetchmany(max_rows + 1)
            # A SELECT never needs to commit: whatever it did (a large object, a NOTIFY:
            # the few writes a READ ONLY transaction allows) is undone.
            raise Rollback
    except SqlRefused as exc:  # raised inside the transaction, which rolled back
        log.info("memory_sql refused: %s", exc)
        return {"error": str(exc)}
    except Exception as exc:  # the guard must answer with data whatever happened
        log.exception("memory_sql statement failed on Postgres")
        return {"error": _error(exc, timeout_ms)}
    return _result(columns, fetched, max_rows)


def _result(columns: list[str], fetched: list[tuple[Any, ...]], max_rows: int) -> dict[str, Any]:
    budget = RESULT_CHAR_CAP - sum(len(name) for name in columns)
    rows: list[list[Any]] = []
    truncated = False
    for row in fetched:
        cells = [_cell(value) for value in row]
        size = sum(len(str(cell)) for cell in cells)
        if len(rows) == max_rows or (rows and size > budget):
            truncated = True
            break
        rows.append(cells)
        budget -= size
    return {"columns": columns, "rows": rows, "row_count": len(rows), "truncated": truncated}
