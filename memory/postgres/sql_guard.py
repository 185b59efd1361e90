"""memory_sql on Postgres: model-written SQL over one person's rows of the shared database.

The statement is parsed with Postgres's grammar (``memory.postgres.sql_parse``) and run
as ``companion_sql``, a login role that is a member of no role, bound to its person by a
binding the app writes and it cannot change; restrictive policies, a read-only
transaction for SELECTs and an admin-owned journal trigger for UPDATEs hold even if a
layer before fails. ``memory.postgres.schema.prepare`` makes the role and ``verify``
checks every guarantee (``companion db migrate`` runs both). ``run_sql`` never raises.
Design: docs/postgres.md; threat model: docs/security.md.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from psycopg import AsyncConnection, Rollback, errors
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.sql import SQL, Composed, Identifier

from memory.errors import SqlRefused
from memory.postgres.sql_parse import READABLE, PgChecked, check_pg_sql
from memory.rules.sql_policy import (
    CELL_CAP,
    COLUMN_NAME_CAP,
    EDITABLE_COLUMNS,
    MAX_ROWS_CHANGED,
    RESULT_CHAR_CAP,
    ROW_CAP,
    TIME_LIMIT_SECONDS,
    TOO_MANY_ROWS,
    new_batch_id,
)
from memory.types import format_time, utc_now

log = logging.getLogger("companion.memory_sql")

SQL_ROLE = "companion_sql"
APP_ROLE = "companion"
# The app's other tables, named so ``prepare`` takes back anything granted on them before.
UNREADABLE: tuple[str, ...] = (
    "running_turns",
    "job_leases",
    "sql_edits",
    "schema_version",
    "sql_login",
    "sql_bindings",
    "chat_imports",
    "message_terms",
    "message_term_totals",
    "message_terms_backfill",
    "answer_traces",
    "answer_feedback",
)
EDITABLE: dict[str, str] = dict(EDITABLE_COLUMNS)  # messages.content, memories.value, …
JOURNAL_TRIGGER = "companion_sql_journal"  # also the name of its function
PERSON_FUNCTION = "memory_sql_person"  # the person of the calling connection's binding
LOGINS = "sql_login"
BINDINGS = "sql_bindings"
ROLE_TIMEOUT = f"{TIME_LIMIT_SECONDS:g}s"
CONNECT_SECONDS = 10
SCRAM_ITERATIONS = 4096
# Built-ins granted to PUBLIC that only a superuser could take back: reported by
# ``verify``, refused by the parse, relied on by nothing.
OPEN_BUILT_INS = (
    "pg_catalog.set_config(text, text, boolean)",
    "pg_catalog.current_setting(text)",
    "pg_catalog.pg_notify(text, text)",
    "pg_catalog.lo_from_bytea(oid, bytea)",
    "pg_catalog.lo_create(oid)",
    "pg_catalog.pg_advisory_lock(bigint)",
)
OPEN_VIEWS = (
    "pg_catalog.pg_stat_activity",
    "pg_catalog.pg_stat_user_tables",
    "pg_catalog.pg_locks",
)
# Privileges checked on every relation and sequence outside the system schemas.
TABLE_PRIVILEGES = ("SELECT", "INSERT", "UPDATE", "DELETE", "TRUNCATE", "REFERENCES", "TRIGGER")
COLUMN_PRIVILEGES = ("SELECT", "INSERT", "UPDATE", "REFERENCES")
SEQUENCE_PRIVILEGES = ("USAGE", "SELECT", "UPDATE")
SYSTEM_SCHEMAS = "n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname !~ '^pg_'"

PERMISSION_DENIED = (
    "refused: {detail} — memory_sql reads sessions, messages, memories, segments and "
    "profile, and may change only messages.content, memories.value and sessions.title"
)
READ_ONLY = "refused: a SELECT cannot change anything ({detail}); use UPDATE to edit text"
TIME_LIMIT = (
    "query stopped: it ran longer than {seconds:g} s (time limit); add a LIMIT or a narrower WHERE"
)
NO_DATABASE = "could not reach the database: {detail}"
NOT_SET_UP = "memory_sql is not set up on this database: run `companion db migrate`"


class _Unreachable(Exception):
    """memory_sql could not connect (as the app, or as companion_sql)."""


@dataclass(frozen=True)
class SetupReport:
    """What ``verify`` found: problems break a guarantee (migrate fails on any); notes
    are open doors memory_sql does not rely on."""

    problems: tuple[str, ...]
    notes: tuple[str, ...]


# the admin's side: companion db migrate -------------------------------------------


# the admin's side: what holds, checked ---------------------------------------------


async def verify(
    admin_url: str, app_role: str, app_url: str | None = None, sql_role: str = SQL_ROLE
) -> SetupReport:
    """Check, as the admin, that every guarantee above holds in the database as it is;
    with ``app_url``, also log in as sql_role where the app connects and try to leave it."""
    problems: list[str] = []
    connecting = AsyncConnection.connect(admin_url, autocommit=True)
    async with await connecting as conn:
        problems += await _role_problems(conn, sql_role, app_role)
        problems += await _privilege_problems(conn, sql_role)
        problems += await _security_problems(conn, sql_role)
        notes = await _open_doors(conn, sql_role)
        password = await _password_kept(conn, sql_role)
        admin = (await _rows(conn, "SELECT current_user::text"))[0][0]
    if app_url is not None and password is not None:
        leave_for = (app_role, admin)
        login_problems, login_notes = await _login_problems(app_url, password, leave_for)
        problems += login_problems
        notes += login_notes
    if password is None:
        problems.append(f"{sql_role} has no password in {LOGINS}: run `companion db migrate`")
    return SetupReport(tuple(problems), tuple(notes))


async def _rows(
    conn: AsyncConnection[Any], query: str | SQL | Composed, *params: Any
) -> list[tuple[Any, ...]]:
    cursor = await conn.execute(query, params)
    return await cursor.fetchall()


async def _role_problems(conn: AsyncConnection[Any], sql_role: str, app_role: str) -> list[str]:
    problems: list[str] = []
    roles = {
        row[0]: row[1:]
        for row in await _rows(
            conn,
            """SELECT rolname, rolsuper, rolbypassrls, rolcreaterole, rolcreatedb,
                      rolreplication, rolcanlogin, rolinherit
               FROM pg_roles WHERE rolname IN (%s, %s)""",
            sql_role,
            app_role,
        )
    }
    names = ("SUPERUSER", "BYPASSRLS", "CREATEROLE", "CREATEDB", "REPLICATION")
    if sql_role not in roles:
        return [f"the role {sql_role} does not exist"]
    *powers, can_login, inherits = roles[sql_role]
    problems += [f"{sql_role} has {name}" for name, on in zip(names, powers, strict=True) if on]
    if not can_login:
        problems.append(f"{sql_role} cannot log in (memory_sql connects as it)")
    if inherits:
        problems.append(f"{sql_role} has INHERIT (it must be NOINHERIT)")
    if app_role not in roles:
        problems.append(f"the app role {app_role} does not exist")
    else:
        app_powers = roles[app_role][:2]
        problems += [
            f"the app role {app_role} has {name}"
            for name, on in zip(names[:2], app_powers, strict=True)
            if on
        ]
    for (granted,) in await _rows(
        conn,
        """SELECT g.rolname FROM pg_auth_members a JOIN pg_roles g ON g.oid = a.roleid
           JOIN pg_roles m ON m.oid = a.member WHERE m.rolname = %s ORDER BY 1""",
        sql_role,
    ):
        problems.append(f"{sql_role} is a member of {granted} (it must be a member of no role)")
    for (other,) in await _rows(
        conn,
        "SELECT r FROM unnest(ARRAY[%s, current_user::text]) r WHERE pg_has_role(%s, r, 'MEMBER')",
        app_role,
        sql_role,
    ):
        problems.append(f"{sql_role} can become {other}")
    return problems


async def _privilege_problems(conn: AsyncConnection[Any], sql_role: str) -> list[str]:
    """Every privilege sql_role has on every relation and sequence outside the system
    schemas, against exactly what it should have."""
    granted = await _rows(
        conn,
        f"""SELECT n.nspname, c.relname, p.privilege
            FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            CROSS JOIN unnest(%s::text[]) p(privilege)
            WHERE c.relkind IN ('r', 'v', 'm', 'p', 'f') AND {SYSTEM_SCHEMAS}
              AND has_table_privilege(%s, c.oid, p.privilege)
            UNION ALL
            SELECT n.nspname, c.relname, p.privilege || ' (' || a.attname || ')'
            FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
            CROSS JOIN unnest(%s::text[]) p(privilege)
            WHERE c.relkind IN ('r', 'v', 'm', 'p', 'f') AND {SYSTEM_SCHEMAS}
              AND has_column_privilege(%s, c.oid, a.attnum, p.privilege)
            UNION ALL
            SELECT n.nspname, c.relname, p.privilege
            FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            CROSS JOIN unnest(%s::text[]) p(privilege)
            WHERE c.relkind = 'S' AND {SYSTEM_SCHEMAS}
              AND has_sequence_privilege(%s, c.oid, p.privilege)""",
        list(TABLE_PRIVILEGES),
        sql_role,
        list(COLUMN_PRIVILEGES),
        sql_role,
        list(SEQUENCE_PRIVILEGES),
        sql_role,
    )
    has = {(schema, table, privilege) for schema, table, privilege in granted}
    needed = {("public", table, "SELECT") for table in READABLE} | {
        ("public", table, f"UPDATE ({column})") for table, column in EDITABLE.items()
    }
    extra = sorted(
        f"{sql_role} may {privilege} on {schema}.{table}"
        for schema, table, privilege in has - needed
        if not (schema == "public" and table in READABLE and privilege.startswith("SELECT ("))
    )
    missing = sorted(f"{sql_role} lacks {p} on {s}.{t}" for s, t, p in needed - has)
    return extra + missing


async def _security_problems(conn: AsyncConnection[Any], sql_role: str) -> list[str]:
    """Row security on the readable tables with the binding policies; no schema to
    create in; no SECURITY DEFINER function but the binding's own within reach."""
    problems: list[str] = []
    secured = await _rows(
        conn,
        """SELECT c.relname, c.relrowsecurity AND c.relforcerowsecurity,
                  EXISTS (SELECT 1 FROM pg_policy p WHERE p.polrelid = c.oid
                          AND p.polname = c.relname || '_' || %s || '_person'
                          AND NOT p.polpermissive
                          AND p.polroles = ARRAY[(SELECT oid FROM pg_roles WHERE rolname = %s)]
                          AND pg_get_expr(p.polqual, p.polrelid) LIKE %s)
           FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
           WHERE n.nspname = 'public' AND c.relname = ANY(%s)""",
        sql_role,
        sql_role,
        f"%{PERSON_FUNCTION}()%",
        list(READABLE),
    )
    found = {table: (forced, bound) for table, forced, bound in secured}
    for table in READABLE:
        forced, bound = found.get(table, (False, False))
        if not forced:
            problems.append(f"row-level security is not enabled and forced on {table}")
        if not bound:
            problems.append(f"{table} has no restrictive policy binding {sql_role} to a person")
    for (schema,) in await _rows(
        conn,
        """SELECT n.nspname FROM pg_namespace n WHERE NOT (n.nspname = 'information_schema'
           OR n.nspname ~ '^pg_') AND has_schema_privilege(%s, n.oid, 'CREATE') ORDER BY 1""",
        sql_role,
    ):
        problems.append(f"{sql_role} may create objects in schema {schema}")
    for (function,) in await _rows(
        conn,
        f"""SELECT p.oid::regprocedure::text FROM pg_proc p
            JOIN pg_namespace n ON n.oid = p.pronamespace
            WHERE p.prosecdef AND {SYSTEM_SCHEMAS} AND p.prorettype <> 'trigger'::regtype
              AND has_function_privilege(%s, p.oid, 'EXECUTE')
              AND p.oid <> %s::regprocedure ORDER BY 1""",
        sql_role,
        f"public.{PERSON_FUNCTION}()",
    ):
        problems.append(f"{sql_role} may call the SECURITY DEFINER function {function}")
    rows = await _rows(
        conn,
        "SELECT has_function_privilege(%s, %s::regprocedure, 'EXECUTE'), "
        "has_database_privilege(%s, current_database(), 'CREATE')",
        sql_role,
        f"public.{PERSON_FUNCTION}()",
        sql_role,
    )
    calls_person, creates_schemas = rows[0]
    if not calls_person:
        problems.append(f"{sql_role} may not call public.{PERSON_FUNCTION}()")
    if creates_schemas:
        problems.append(f"{sql_role} may create schemas in the database")
    return problems


async def _open_doors(conn: AsyncConnection[Any], sql_role: str) -> list[str]:
    """What every role may do that only a superuser could take away: reported, since
    memory_sql refuses it in the parse and relies on it nowhere."""
    calls = [
        function
        for function in OPEN_BUILT_INS
        if (
            await _rows(
                conn,
                "SELECT has_function_privilege(%s, %s::regprocedure, 'EXECUTE')",
                sql_role,
                function,
            )
        )[0][0]
    ]
    reads = [
        view
        for view in OPEN_VIEWS
        if (await _rows(conn, "SELECT has_table_privilege(%s, %s, 'SELECT')", sql_role, view))[0][0]
    ]
    notes = []
    if calls:
        notes.append(
            f"{sql_role} may call {', '.join(calls)} (granted to PUBLIC; only a superuser "
            "can revoke them): memory_sql's parse refuses them, and whose rows it sees "
            f"comes from {BINDINGS}, not a setting"
        )
    if reads:
        notes.append(
            f"{sql_role} may read {', '.join(reads)} (granted to PUBLIC): memory_sql's "
            "parse refuses every catalog"
        )
    return notes


async def _password_kept(conn: AsyncConnection[Any], sql_role: str) -> str | None:
    try:
        query = SQL("SELECT password FROM {} WHERE role = %s").format(Identifier(LOGINS))
        rows = await _rows(conn, query, sql_role)
    except errors.UndefinedTable:
        return None
    return str(rows[0][0]) if rows else None


async def _login_problems(
    app_url: str, password: str, leave_for: tuple[str, ...]
) -> tuple[list[str], list[str]]:
    """Log in as memory_sql does and try to leave the role: problems if it becomes any
    of ``leave_for`` or sees a row without a binding; a note if it cannot log in."""
    try:
        conn = await AsyncConnection.connect(_login_conninfo(app_url, password, ROLE_TIMEOUT))
    except errors.OperationalError as exc:
        return [], [
            f"memory_sql could not log in as {SQL_ROLE} from here ({str(exc)!r}): "
            f"pg_hba.conf must let {SQL_ROLE} log in with a password from the app's machines"
        ]
    problems: list[str] = []
    async with conn:
        for role in leave_for:
            try:
                async with conn.transaction():
                    await conn.execute(SQL("SET LOCAL ROLE {}").format(Identifier(role)))
                problems.append(f"{SQL_ROLE}'s login can SET ROLE {role}")
            except errors.InsufficientPrivilege:
                pass  # as it must be
        for table in READABLE:
            cursor = await conn.execute(SQL("SELECT count(*) FROM {}").format(Identifier(table)))
            row = await cursor.fetchone()
            if row and row[0]:
                problems.append(f"{SQL_ROLE} sees rows of {table} without a binding")
    return problems, []


# the app's side: run one statement -------------------------------------------------


def _login_conninfo(url: str, password: str, timeout: str) -> str:
    """The app URL's server and database, as companion_sql, with the settings the
    checked text relies on (standard strings, the public schema) fixed at login."""
    params = conninfo_to_dict(url)
    params.update(
        user=SQL_ROLE,
        password=password,
        options=(
            f"-c statement_timeout={timeout} -c search_path=public "
            "-c standard_conforming_strings=on"
        ),
        application_name="companion memory_sql",
        connect_timeout=str(CONNECT_SECONDS),
    )
    params.pop("passfile", None)
    return make_conninfo("", **params)


def _cell(value: Any) -> Any:
    """A value as the tool returns it: JSON-friendly, long text cut like on SQLite."""
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, bytes | memoryview):
        return f"<blob {len(bytes(value))} bytes>"
    text = format_time(value) if isinstance(value, datetime) else str(value)
    return text if len(text) <= CELL_CAP else text[:CELL_CAP] + "…"


def _error(exc: errors.Error, timeout_ms: int) -> str:
    """What the model is told about a statement Postgres refused or stopped."""
    detail = exc.diag.message_primary or str(exc)
    if isinstance(exc, errors.QueryCanceled):
        return TIME_LIMIT.format(seconds=timeout_ms / 1000)
    if isinstance(exc, errors.InsufficientPrivilege):
        return PERMISSION_DENIED.format(detail=detail)
    if isinstance(exc, errors.ReadOnlySqlTransaction):
        return READ_ONLY.format(detail=detail)
    if isinstance(exc, errors.CheckViolation) and detail.startswith("refused:"):
        return detail  # the journal trigger's refusal, written for the model
    return f"SQL error: {detail}"


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
        checked = check_pg_sql(sql)
        if not person:
            raise SqlRefused("memory_sql needs a person", "input")
        edit_at = (now or utc_now()).replace(microsecond=0)
        return await _run_bound(url, person, checked, max_rows, timeout_ms, edit_at)
    except SqlRefused as exc:
        log.info("memory_sql refused (%s)", exc.kind)
        return {"error": str(exc)}
    except _Unreachable as exc:
        return {"error": NO_DATABASE.format(detail=exc)}
    except errors.Error as exc:  # the statement's own failure: its text may quote rows
        error = _error(exc, timeout_ms)
        if isinstance(exc, errors.CheckViolation) and error.startswith("refused:"):
            log.info("memory_sql refused (journal)")
        else:
            log.warning(
                "memory_sql statement failed on Postgres (%s, SQLSTATE %s)",
                type(exc).__name__,
                exc.sqlstate,
            )
        return {"error": error}
    except Exception as exc:  # a bug of ours: the guard must still answer with data
        log.exception("memory_sql failed")
        return {"error": f"memory_sql failed: {type(exc).__name__}"}


async def _run_bound(
    url: str, person: str, checked: PgChecked, max_rows: int, timeout_ms: int, edit_at: datetime
) -> dict[str, Any]:
    """Connect as companion_sql, bind the connection to ``person`` (as the app), run the
    statement, and unbind once the connection is closed."""
    async with await _connect(url) as app:
        password = await _sql_password(app)
        conn = await _connect(_login_conninfo(url, password, str(max(1, timeout_ms))))
        pid, batch = conn.info.backend_pid, new_batch_id()
        try:
            # Bindings a dead process left behind go too (their backends are gone).
            await app.execute(
                SQL(
                    "WITH gone AS (DELETE FROM {bindings} WHERE backend_pid NOT IN "
                    "(SELECT pid FROM pg_stat_activity WHERE pid IS NOT NULL)) "
                    "INSERT INTO {bindings} (backend_pid, person, batch, edit_at) "
                    "VALUES (%s, %s, %s, %s) ON CONFLICT (backend_pid) DO UPDATE SET "
                    "person = excluded.person, batch = excluded.batch, edit_at = excluded.edit_at"
                ).format(bindings=Identifier(BINDINGS)),
                (pid, person, batch, edit_at),
            )
            return await _execute(conn, checked, max_rows)
        finally:
            await conn.close()
            await app.execute(
                SQL("DELETE FROM {} WHERE backend_pid = %s AND batch = %s").format(
                    Identifier(BINDINGS)
                ),
                (pid, batch),
            )


async def _connect(conninfo: str) -> AsyncConnection[Any]:
    try:
        return await AsyncConnection.connect(
            conninfo, autocommit=True, connect_timeout=CONNECT_SECONDS
        )
    except errors.OperationalError as exc:
        # No row data here; repr keeps libpq's newlines from forging a log line.
        log.warning("memory_sql could not connect (%s): %r", exc.sqlstate, str(exc))
        raise _Unreachable(exc.diag.message_primary or str(exc)) from exc


async def _sql_password(app: AsyncConnection[Any]) -> str:
    """companion_sql's password, which the app role alone may read."""
    try:
        cursor = await app.execute(
            SQL("SELECT password FROM {} WHERE role = %s").format(Identifier(LOGINS)),
            (SQL_ROLE,),
        )
    except errors.UndefinedTable:
        raise SqlRefused(NOT_SET_UP, "setup") from None
    row = await cursor.fetchone()
    if row is None:
        raise SqlRefused(NOT_SET_UP, "setup")
    return str(row[0])


async def _execute(conn: AsyncConnection[Any], checked: PgChecked, max_rows: int) -> dict[str, Any]:
    """The checked statement in one transaction: a SELECT read-only and rolled back, an
    UPDATE committed unless it changed more than MAX_ROWS_CHANGED rows."""
    async with conn.transaction():
        cursor = conn.cursor()
        if checked.kind == "SELECT":
            await cursor.execute("SET TRANSACTION READ ONLY")
        # Parameters (none) make psycopg use the extended protocol, which runs one
        # statement only; % is then escaped.
        await cursor.execute(checked.sql.replace("%", "%%"), ())
        if checked.kind == "UPDATE":
            changed = cursor.rowcount
            if changed > MAX_ROWS_CHANGED:
                raise SqlRefused(TOO_MANY_ROWS.format(cap=MAX_ROWS_CHANGED), "edit")
            return {"updated": changed}
        columns = [str(_cell(column.name))[:COLUMN_NAME_CAP] for column in cursor.description or ()]
        fetched = await cursor.fetchmany(max_rows + 1)
        # A SELECT never needs to commit: whatever it did is undone.
        raise Rollback
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
