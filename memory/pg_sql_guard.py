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
   NOLOGIN role the app role may become (``prepare``), which may SELECT what SQLite's
   memory_sql shows (sessions, messages, memories, segments, profile) and UPDATE only
   ``messages.content``, ``memories.value`` and ``sessions.title``: no other table
   (schema_version, running_turns, job_leases, the journal sql_edits, …), no INSERT or
   DELETE, no sequence, no server files (``pg_read_file``, ``COPY`` need roles it lacks).
3. **Row-level security** — the tables' person policy (memory.pg_store) applies to it,
   scoped to the person through ``app.person``, set for this transaction alone; and a
   restrictive policy for companion_sql drops ``role = 'memory_tool'`` messages from
   everything it reads or updates, whatever the spelling (CTE named messages,
   ``public.messages``, subqueries, UNION), and another keeps only the profile keys
   of ``sql_guard.READABLE_SETTINGS`` (never an API key). Because the person policy
   trusts a setting, ``prepare`` takes ``set_config`` from PUBLIC (the app role keeps
   it): otherwise a SELECT could set ``app.person`` to someone else in the middle of
   its own scan.
   ``SET``/``RESET`` statements are refused by the parse and are not allowed inside the
   functions that run SQL text (``query_to_xml``), which are not volatile.
4. **Read-only SELECTs** — a SELECT runs in a ``READ ONLY`` transaction, so whatever
   it calls cannot write tables, and the transaction is rolled back, never committed,
   which also undoes what READ ONLY lets through (``lo_create``, ``pg_notify``).

5. **The journal** — every UPDATE as companion_sql fires a statement-level AFTER UPDATE
   trigger (``WHEN current_user = companion_sql``, so the app's own writes are not
   journalled) whose function runs as the admin (SECURITY DEFINER): from the statement's
   transition tables it records each changed text with the text it replaced in
   ``sql_edits`` (memory.pg_store's migration 3), in the changed rows' own person, under
   the batch id and time ``run_sql`` set with ``set_config`` before becoming
   companion_sql (which may not call it). companion_sql has no privilege on sql_edits
   and cannot call a trigger function; the app role reads it and marks batches undone
   but cannot insert. The same function refuses what SQLite's guard refuses of the new
   text (over ``MAX_WRITE_CHARS`` unless it shrinks, an empty memory value or title)
   and an edit of more than ``MAX_ROWS_CHANGED`` rows, and keeps the last
   ``KEPT_BATCHES`` batches. ``PgStore.undo_last_sql_edit`` undoes the newest batch; it
   writes through fixed statements under the undoer's row-level security, never on a
   memory_tool message and only where the row still holds the journalled new text, so
   a forged entry cannot reach another person's row or a hidden one.

SQLite's dialect where it matters: the model writes memory_sql as for SQLite, whose
LIKE ignores case, so a LIKE (or NOT LIKE) operator runs as ILIKE (``sqlite_like``: the
operator tokens only, never a string or a quoted name).

Limits: ``statement_timeout`` for the transaction (``timeout_ms``; also set on the role,
though a role's settings only apply to logins); at most ``max_rows`` rows fetched
(``max_rows + 1`` read to report truncation), cells, column names and the whole result
capped as on SQLite; an UPDATE changing more than ``sql_guard.MAX_ROWS_CHANGED`` rows is
rolled back. ``run_sql`` never raises: every failure is ``{"error": ...}``.

Not covered yet: a general function allow-list: Postgres functions granted to PUBLIC
stay callable, except set_config and the large-object writers, which ``prepare`` takes
back (time is bounded by statement_timeout); and SQLite's own catalog
(``sqlite_master``, ``schema_version``): here the schema is read from
``information_schema``. An UPDATE reports the rows it matched (SQLite: the rows whose
text changed); only changed texts are journalled.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

import sqlparse
from psycopg import AsyncConnection, Rollback, errors
from psycopg.sql import SQL, Identifier, Literal
from sqlparse import tokens as T

from memory.sql_guard import (
    CELL_CAP,
    COLUMN_NAME_CAP,
    EMPTY_TEXT,
    MAX_ROWS_CHANGED,
    MAX_WRITE_CHARS,
    NOT_EMPTY,
    READABLE_SETTINGS,
    RESULT_CHAR_CAP,
    ROW_CAP,
    TIME_LIMIT_SECONDS,
    TOO_LONG,
    TOO_MANY_ROWS,
    SqlRefused,
    check_sql,
)
from memory.sql_journal import EDITABLE_COLUMNS, HIDDEN_ROLE, KEPT_BATCHES, new_batch_id
from memory.store import format_time, utc_now

log = logging.getLogger("companion.memory_sql")

SQL_ROLE = "companion_sql"
APP_ROLE = "companion"
# What memory_sql may read: SQLite's visible schema (memory.sql_guard), with the profile
# cut to sql_guard.READABLE_SETTINGS and memory_tool messages dropped by policies.
READABLE: tuple[str, ...] = ("sessions", "messages", "memories", "segments", "profile")
# The app's other tables, named so ``prepare`` takes back anything granted on them before.
UNREADABLE: tuple[str, ...] = ("running_turns", "job_leases", "sql_edits")
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
EDITABLE: dict[str, str] = dict(EDITABLE_COLUMNS)  # messages.content, memories.value, …
JOURNAL_TRIGGER = "companion_sql_journal"  # also the name of its function
ROLE_TIMEOUT = f"{TIME_LIMIT_SECONDS:g}s"

PERMISSION_DENIED = (
    "refused: {detail} — memory_sql reads sessions, messages, memories, segments and "
    "profile, and may change only messages.content, memories.value and sessions.title"
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
        await conn.execute(
            SQL("REVOKE ALL ON {} FROM {}").format(
                SQL(", ").join(map(Identifier, READABLE + UNREADABLE)), role
            )
        )
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
        # The profile as memory_sql sees it on SQLite: the readable settings only (never
        # an API key), bound the same way.
        policy = Identifier(f"profile_{sql_role}_readable")
        await conn.execute(SQL("DROP POLICY IF EXISTS {} ON profile").format(policy))
        await conn.execute(
            SQL(
                "CREATE POLICY {policy} ON profile AS RESTRICTIVE FOR ALL TO {role} "
                "USING (key IN ({keys}) OR current_user <> {name})"
            ).format(
                policy=policy,
                role=role,
                keys=SQL(", ").join(map(Literal, READABLE_SETTINGS)),
                name=Literal(sql_role),
            )
        )
        # The journal: every text an UPDATE as sql_role changes, by the trigger alone.
        await conn.execute(_journal_function())
        for table in EDITABLE:
            trigger = Identifier(JOURNAL_TRIGGER)
            await conn.execute(
                SQL("DROP TRIGGER IF EXISTS {} ON {}").format(trigger, Identifier(table))
            )
            await conn.execute(
                SQL(
                    "CREATE TRIGGER {trigger} AFTER UPDATE ON {table} "
                    "REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows "
                    "FOR EACH STATEMENT WHEN (current_user = {name}) "
                    "EXECUTE FUNCTION public.{function}()"
                ).format(
                    trigger=trigger,
                    table=Identifier(table),
                    name=Literal(sql_role),
                    function=Identifier(JOURNAL_TRIGGER),
                )
            )


def _journal_function() -> str:
    """The journal trigger's function: as the admin (SECURITY DEFINER: companion_sql
    cannot write sql_edits itself), record each text the statement changed with what it
    replaced, under the batch and time ``run_sql`` set before becoming companion_sql
    (which may not call set_config), in the rows' own person; refuse the new text
    SQLite's guard would refuse, and an edit past the row cap; keep the last
    ``KEPT_BATCHES`` batches. A trigger function cannot be called directly."""

    def quoted(text: str) -> str:
        return Literal(text).as_string()

    where = {table: f"{table}.{column}" for table, column in EDITABLE.items()}
    too_long = " ".join(
        f"WHEN {quoted(table)} THEN {cap}" for table, cap in MAX_WRITE_CHARS.items()
    )
    long_error = " ".join(
        f"WHEN {quoted(table)} THEN "
        + quoted(TOO_LONG.format(where=where[table], cap=MAX_WRITE_CHARS[table]))
        for table in EDITABLE
    )
    empty_error = " ".join(
        f"WHEN {quoted(table)} THEN {quoted(EMPTY_TEXT.format(where=where[table]))}"
        for table in sorted(NOT_EMPTY)
    )
    not_empty = ", ".join(quoted(table) for table in sorted(NOT_EMPTY))
    inserts = "\n    ELSIF ".join(
        f"""TG_TABLE_NAME = '{table}' THEN
        INSERT INTO public.sql_edits (person, batch, table_name, row_id, column_name,
                                      old_value, new_value, created_at)
        SELECT n.person, v_batch, '{table}', n.id::text, '{column}', o.{column}, n.{column},
               v_at
        FROM old_rows o JOIN new_rows n ON n.person = o.person AND n.id = o.id
        WHERE n.{column} IS DISTINCT FROM o.{column} ORDER BY n.id;"""
        for table, column in EDITABLE.items()
    )
    body = rf"""
CREATE OR REPLACE FUNCTION public.{JOURNAL_TRIGGER}() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $journal$
DECLARE
    v_batch  text := current_setting('app.sql_batch', true);
    v_person text := current_setting('app.person', true);
    v_at     timestamptz;
    e        record;
    changed  integer;
BEGIN
    IF coalesce(v_batch, '') = '' OR coalesce(v_person, '') = '' THEN
        RAISE EXCEPTION 'refused: a memory_sql edit needs its journal batch'
            USING ERRCODE = 'check_violation';
    END IF;
    v_at := current_setting('app.sql_edit_at')::timestamptz;
    IF {inserts}
    END IF;
    FOR e IN SELECT table_name, old_value, new_value FROM public.sql_edits
             WHERE person = v_person AND batch = v_batch LOOP
        IF length(e.new_value) > greatest(CASE e.table_name {too_long} END,
                                          length(e.old_value)) THEN
            RAISE EXCEPTION USING ERRCODE = 'check_violation',
                MESSAGE = CASE e.table_name {long_error} END;
        END IF;
        IF e.table_name IN ({not_empty}) AND e.new_value ~ '^\s*$' THEN
            RAISE EXCEPTION USING ERRCODE = 'check_violation',
                MESSAGE = CASE e.table_name {empty_error} END;
        END IF;
    END LOOP;
    SELECT count(*) INTO changed FROM public.sql_edits
    WHERE person = v_person AND batch = v_batch;
    IF changed > {MAX_ROWS_CHANGED} THEN
        RAISE EXCEPTION USING ERRCODE = 'check_violation',
            MESSAGE = {quoted(TOO_MANY_ROWS.format(cap=MAX_ROWS_CHANGED))};
    END IF;
    DELETE FROM public.sql_edits WHERE person = v_person AND batch IN (
        SELECT b.batch FROM public.sql_edits b WHERE b.person = v_person
        GROUP BY b.batch ORDER BY max(b.id) DESC OFFSET {KEPT_BATCHES});
    RETURN NULL;
END $journal$"""
    return body


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
    if isinstance(exc, errors.CheckViolation) and detail.startswith("refused:"):
        return detail  # the journal trigger's refusal, written for the model
    if isinstance(exc, errors.OperationalError):
        return NO_DATABASE.format(detail=detail)
    return f"SQL error: {detail}"


def sqlite_like(sql: str) -> str:
    """``sql`` with its LIKE operators made ILIKE: SQLite's LIKE ignores case, and the
    model writes memory_sql as it would for SQLite (``LIKE '%kopi%'`` must find "Kopi").
    Only the operator tokens change, never a string or a quoted name."""
    parts = []
    for token in sqlparse.parse(sql)[0].flatten():
        if token.ttype is T.Operator.Comparison and token.value.split()[-1].upper() == "LIKE":
            parts.append(token.value[: -len("LIKE")] + "ILIKE")
        else:
            parts.append(token.value)
    return "".join(parts)


async def run_sql(
    url: str,
    person: str,
    sql: str,
    *,
    max_rows: int = ROW_CAP,
    timeout_ms: int = 2000,
    now: datetime | None = None,
) -> dict[str, Any]:
    """Run one guarded statement as ``person``; SELECT -> {columns, rows, row_count,
    truncated}, UPDATE -> {updated}, journalled as one batch at ``now`` (default: the
    real clock); any refusal or failure -> {"error": ...}. Never raises."""
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
            if checked.kind == "UPDATE":
                # What the journal trigger files this statement's edits under.
                edited_at = (now or utc_now()).replace(microsecond=0)
                await cursor.execute(
                    """SELECT set_config('app.sql_batch', %s, true),
                              set_config('app.sql_edit_at', %s, true)""",
                    (new_batch_id(), edited_at.isoformat()),
                )
            await cursor.execute(SQL("SET LOCAL ROLE {}").format(Identifier(SQL_ROLE)))
            # Parameters (none) make psycopg use the extended protocol, which runs one
            # statement only, whatever the parse above concluded; % is then escaped.
            await cursor.execute(sqlite_like(checked.sql).replace("%", "%%"), ())
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
        error = _error(exc, timeout_ms)
        if isinstance(exc, errors.CheckViolation) and error == exc.diag.message_primary:
            log.info("memory_sql refused: %s", error)  # the journal trigger's refusal
        else:
            log.exception("memory_sql statement failed on Postgres")
        return {"error": error}
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
