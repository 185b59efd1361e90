"""The Postgres schema: the store's tables with row-level security per person, the
users table, and the grants of the app role, made by ``companion db migrate``."""

from __future__ import annotations

import psycopg
from psycopg import AsyncConnection, sql

from memory.errors import StoreError
from memory.postgres.sql_guard import SQL_ROLE, SetupReport, prepare, verify
from memory.types import ROLES

# The tables each migration adds (all scoped to a person), and their sequences.
_TABLES_1 = ("sessions", "messages", "running_turns", "profile")
_TABLES_2 = ("memories", "segments")
_TABLES_3 = ("job_leases", "sql_edits")


# The tables the app role may read and write (schema_version is the admin's alone; the
# journal, sql_edits, it may read, mark undone and delete, but only memory_sql's
# trigger, memory.postgres.sql_guard, writes new entries).
APP_TABLES: tuple[str, ...] = _TABLES_1 + _TABLES_2 + _TABLES_3
APP_SEQUENCES: tuple[str, ...] = ("messages_id_seq", "running_turns_id_seq", "segments_id_seq")
JOURNAL = "sql_edits"
_ROLE_LIST = ", ".join(f"'{role}'" for role in ROLES)


# Every table's person: the transaction's app.person unless given, never empty.
_PERSON = "person text NOT NULL DEFAULT current_setting('app.person') CHECK (person <> '')"


# The words full-text search indexes: punctuation splits them, accents go, any language
# (TEXT_SEARCH: 'simple' through unaccent).
TEXT_SEARCH = "companion_words"
_WORDS = f"to_tsvector('{TEXT_SEARCH}', regexp_replace(%s, '[[:punct:]]+', ' ', 'g'))"


def _scoped(table: str) -> str:
    """Row-level security on ``table``: its rows are the current person's only."""
    return f"""
    ALTER TABLE {table} ENABLE ROW LEVEL SECURITY;
    ALTER TABLE {table} FORCE ROW LEVEL SECURITY;
    CREATE POLICY {table}_person ON {table}
        USING (person = current_setting('app.person', true))
        WITH CHECK (person = current_setting('app.person', true));
    """


# Each entry upgrades the schema by one version. Never edit a shipped entry: append.
PG_MIGRATIONS: tuple[str, ...] = (
    # 1: sessions, messages (+ a generated tsvector for full-text search), running
    # turns and the profile, every row a person's.
    f"""
    CREATE TABLE sessions (
        id          text NOT NULL,
        {_PERSON},
        title       text NOT NULL DEFAULT 'New chat',
        persona     text,
        created_at  timestamptz NOT NULL,
        style_note  text,
        PRIMARY KEY (person, id)
    );
    CREATE TABLE messages (
        id           bigserial PRIMARY KEY,
        {_PERSON},
        session_id   text NOT NULL,
        role         text NOT NULL CHECK (role IN ({_ROLE_LIST})),
        content      text NOT NULL DEFAULT '',
        created_at   timestamptz NOT NULL,
        tool_name    text,
        tool_call_id text,
        meta         jsonb NOT NULL DEFAULT '{{}}',
        image_path   text,
        tsv          tsvector GENERATED ALWAYS AS (to_tsvector('simple', content)) STORED,
        FOREIGN KEY (person, session_id) REFERENCES sessions (person, id) ON DELETE CASCADE
    );
    CREATE INDEX messages_session_id ON messages (person, session_id, id);
    CREATE INDEX messages_tsv ON messages USING gin (tsv);
    CREATE TABLE running_turns (
        id              bigserial PRIMARY KEY,
        {_PERSON},
        session_id      text NOT NULL,
        user_message_id bigint NOT NULL,
        owner           text NOT NULL,
        partial         text NOT NULL DEFAULT '',
        started_at      timestamptz NOT NULL,
        updated_at      timestamptz NOT NULL,
        FOREIGN KEY (person, session_id) REFERENCES sessions (person, id) ON DELETE CASCADE
    );
    CREATE INDEX running_turns_session ON running_turns (person, session_id);
    CREATE TABLE profile (
        {_PERSON},
        key   text NOT NULL,
        value text NOT NULL,
        PRIMARY KEY (person, key)
    );
    """
    + "".join(_scoped(table) for table in _TABLES_1),
    # 2: memories (FSRS state beside each fact) and segments (a generated tsvector over
    # the summary). stability and difficulty are double precision, as SQLite's REAL is:
    # float4 would rank memories differently from SQLite near ties.
    f"""
    CREATE TABLE memories (
        id               text NOT NULL,
        {_PERSON},
        category         text NOT NULL CHECK (category IN
                              ('identity', 'principles', 'focus', 'signals')),
        key              text NOT NULL,
        value            text NOT NULL,
        created_at       timestamptz NOT NULL,
        updated_at       timestamptz NOT NULL,
        stability        double precision NOT NULL DEFAULT 1.0,
        difficulty       double precision NOT NULL DEFAULT 5.0,
        last_recalled_at timestamptz,
        recall_count     integer NOT NULL DEFAULT 0,
        PRIMARY KEY (person, id),
        UNIQUE (person, category, key)
    );
    CREATE TABLE segments (
        id               bigserial PRIMARY KEY,
        {_PERSON},
        session_id       text NOT NULL,
        start_message_id bigint NOT NULL,
        end_message_id   bigint NOT NULL,
        start_at         timestamptz NOT NULL,
        end_at           timestamptz NOT NULL,
        summary          text NOT NULL,
        summary_kind     text NOT NULL DEFAULT 'extractive',
        tsv              tsvector GENERATED ALWAYS AS (to_tsvector('simple', summary)) STORED,
        FOREIGN KEY (person, session_id) REFERENCES sessions (person, id) ON DELETE CASCADE
    );
    CREATE INDEX segments_session ON segments (person, session_id, end_message_id);
    CREATE INDEX segments_end_at ON segments (person, end_at);
    CREATE INDEX segments_tsv ON segments USING gin (tsv);
    """
    + "".join(_scoped(table) for table in _TABLES_2),
    # 3: Stop asked from another process (the running one polls the flag), leases of
    # background jobs (one holder at a time per person and job, until it expires), and
    # the journal of memory_sql edits (memory.sqlite.journal's sql_edits, by person): each
    # changed text with what it replaced, written by memory.postgres.sql_guard's trigger, so
    # the newest batch can be undone. A row's entries go when the row goes (the
    # triggers below), so deleted text does not live on in the journal.
    f"""
    ALTER TABLE running_turns ADD COLUMN stop_requested boolean NOT NULL DEFAULT false;
    CREATE TABLE job_leases (
        name   text NOT NULL,
        {_PERSON},
        holder text NOT NULL,
        until  timestamptz NOT NULL,
        PRIMARY KEY (person, name)
    );
    CREATE TABLE sql_edits (
        id          bigserial PRIMARY KEY,
        {_PERSON},
        batch       text NOT NULL,
        table_name  text NOT NULL,
        row_id      text NOT NULL,
        column_name text NOT NULL,
        old_value   text NOT NULL,
        new_value   text NOT NULL,
        created_at  timestamptz NOT NULL,
        undone_at   timestamptz,
        CHECK ((table_name, column_name) IN
               (('messages', 'content'), ('memories', 'value'), ('sessions', 'title')))
    );
    CREATE INDEX sql_edits_batch ON sql_edits (person, batch);
    CREATE INDEX sql_edits_row ON sql_edits (person, table_name, row_id);
    CREATE FUNCTION sql_edits_forget_rows() RETURNS trigger LANGUAGE plpgsql
        SET search_path = pg_catalog, pg_temp AS $$
    BEGIN
        DELETE FROM public.sql_edits e USING gone g
        WHERE e.person = g.person AND e.table_name = TG_TABLE_NAME AND e.row_id = g.id::text;
        RETURN NULL;
    END $$;
    CREATE TRIGGER sql_edits_messages_ad AFTER DELETE ON messages
        REFERENCING OLD TABLE AS gone FOR EACH STATEMENT
        EXECUTE FUNCTION sql_edits_forget_rows();
    CREATE TRIGGER sql_edits_memories_ad AFTER DELETE ON memories
        REFERENCING OLD TABLE AS gone FOR EACH STATEMENT
        EXECUTE FUNCTION sql_edits_forget_rows();
    CREATE TRIGGER sql_edits_sessions_ad AFTER DELETE ON sessions
        REFERENCING OLD TABLE AS gone FOR EACH STATEMENT
        EXECUTE FUNCTION sql_edits_forget_rows();
    """
    + "".join(_scoped(table) for table in _TABLES_3),
    # 4: full-text search splits words at punctuation and drops accents, as SQLite's
    # FTS5 unicode61 does ("rendang" finds budi.dev/posts/rendang and rendang@example.com,
    # "cafe" finds "Café"; 'simple' alone keeps those whole and accented; unaccent is a
    # trusted extension, so the database's owner may create it); and the person's newest
    # messages and time windows are found by index (the newest-1000 floor and a cue's id
    # range scanned all of a person's messages).
    f"""
    CREATE EXTENSION IF NOT EXISTS unaccent;
    CREATE TEXT SEARCH CONFIGURATION {TEXT_SEARCH} (COPY = simple);
    ALTER TEXT SEARCH CONFIGURATION {TEXT_SEARCH}
        ALTER MAPPING FOR word, hword, hword_part WITH unaccent, simple;
    ALTER TABLE messages DROP COLUMN tsv;
    ALTER TABLE messages ADD COLUMN tsv tsvector GENERATED ALWAYS AS ({_WORDS % "content"}) STORED;
    CREATE INDEX messages_tsv ON messages USING gin (tsv);
    ALTER TABLE segments DROP COLUMN tsv;
    ALTER TABLE segments ADD COLUMN tsv tsvector GENERATED ALWAYS AS ({_WORDS % "summary"}) STORED;
    CREATE INDEX segments_tsv ON segments USING gin (tsv);
    CREATE INDEX messages_person_id ON messages (person, id);
    CREATE INDEX messages_person_time ON messages (person, created_at, id);
    """,
    # 5: memory_sql's own login (memory.postgres.sql_guard). The model's statement
    # runs on a connection whose login role is companion_sql: sql_login keeps that
    # role's password (made by `companion db migrate`) for the app role alone to read,
    # and sql_bindings names, for each such connection by its backend pid, whose rows it
    # sees and which journal batch and time its edits go under. Only the app role
    # writes bindings; companion_sql reads its own through a SECURITY DEFINER function,
    # so no statement can change whose rows it sees. Neither table is a person's.
    """
    CREATE TABLE sql_login (
        role     text PRIMARY KEY,
        password text NOT NULL
    );
    CREATE TABLE sql_bindings (
        backend_pid integer PRIMARY KEY,
        person      text NOT NULL CHECK (person <> ''),
        batch       text NOT NULL,
        edit_at     timestamptz NOT NULL
    );
    """,
)


async def migrate(admin_url: str, app_role: str) -> int:
    """Bring the schema up to date as the admin and grant ``app_role`` what the app needs
    (rows of the app tables, their sequences; never ownership); the version in place."""
    connecting = AsyncConnection.connect(admin_url, autocommit=True)
    async with await connecting as conn, conn.transaction():
        # Two processes starting at once: the second waits, then finds nothing to do.
        await conn.execute("SELECT pg_advisory_xact_lock(hashtext('companion.migrate'))")
        await conn.execute("CREATE TABLE IF NOT EXISTS schema_version (version integer NOT NULL)")
        cursor = await conn.execute("SELECT MAX(version) FROM schema_version")
        row = await cursor.fetchone()
        current = int(row[0] or 0) if row else 0
        for version, script in enumerate(PG_MIGRATIONS[current:], start=current + 1):
            await conn.execute(script)
            await conn.execute("INSERT INTO schema_version (version) VALUES (%s)", (version,))
        role = sql.Identifier(app_role)
        await conn.execute(
            sql.SQL("GRANT SELECT, INSERT, UPDATE, DELETE ON {} TO {}").format(
                sql.SQL(", ").join(map(sql.Identifier, APP_TABLES)), role
            )
        )
        await conn.execute(
            sql.SQL("GRANT USAGE ON SEQUENCE {} TO {}").format(
                sql.SQL(", ").join(map(sql.Identifier, APP_SEQUENCES)), role
            )
        )
        # Only memory_sql's trigger (running as the admin) adds journal entries.
        await conn.execute(
            sql.SQL("REVOKE INSERT ON {} FROM {}").format(sql.Identifier(JOURNAL), role)
        )
    return len(PG_MIGRATIONS)


# Each entry upgrades the accounts schema by one version. Never edit a shipped entry.
ACCOUNTS_MIGRATIONS: tuple[str, ...] = (
    # 1: the people. A name is unique ignoring case, as on SQLite (NAME_PATTERN is ASCII,
    # so lower() folds it exactly like COLLATE NOCASE).
    """
    CREATE TABLE users (
        id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        name          text NOT NULL CHECK (name <> ''),
        password_hash text NOT NULL,
        created_at    timestamptz NOT NULL DEFAULT now()
    );
    CREATE UNIQUE INDEX users_name ON users (lower(name));
    """,
    # 2: logins, shared by every app process (memory.sqlite.accounts' migration 2): a token's
    # hash, whose login it is, and when it began.
    """
    CREATE TABLE logins (
        token_hash text PRIMARY KEY,
        name       text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX logins_name ON logins (lower(name));
    """,
    # 3: the login throttle (memory.sqlite.accounts' migration 3): failed logins per name tried
    # (lower case) and client address, and when that name last logged in from there.
    """
    CREATE TABLE login_failures (
        name     text NOT NULL,
        address  text NOT NULL,
        failures integer NOT NULL,
        last_at  double precision NOT NULL,
        known_at double precision,
        PRIMARY KEY (name, address)
    );
    CREATE INDEX login_failures_address ON login_failures (address);
    """,
)


def migrate_accounts(admin_url: str, app_role: str) -> int:
    """Bring the users table up to date as the admin and grant ``app_role`` exactly what
    logins and the CLI need; the version in place. Safe to run again, and at once from
    two processes (the second waits, then finds nothing to do)."""
    role = sql.Identifier(app_role)
    with psycopg.connect(admin_url, autocommit=True) as conn, conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(hashtext('companion.accounts_migrate'))")
        conn.execute(
            "CREATE TABLE IF NOT EXISTS accounts_schema_version (version integer NOT NULL)"
        )
        row = conn.execute("SELECT MAX(version) FROM accounts_schema_version").fetchone()
        current = int(row[0] or 0) if row else 0
        for version, script in enumerate(ACCOUNTS_MIGRATIONS[current:], start=current + 1):
            conn.execute(script)
            conn.execute("INSERT INTO accounts_schema_version (version) VALUES (%s)", (version,))
        # Exactly these privileges: take back anything granted before (to anyone), then
        # grant. Not UPDATE of id or name: a person's key and name never change.
        conn.execute(
            sql.SQL("REVOKE ALL ON users, logins, login_failures FROM PUBLIC, {}").format(role)
        )
        conn.execute(sql.SQL("GRANT SELECT, INSERT, DELETE ON logins TO {}").format(role))
        conn.execute(
            sql.SQL("GRANT SELECT, INSERT, UPDATE, DELETE ON login_failures TO {}").format(role)
        )
        conn.execute(
            sql.SQL(
                "GRANT SELECT, INSERT (name, password_hash), UPDATE (password_hash) ON users TO {}"
            ).format(role)
        )
    return len(ACCOUNTS_MIGRATIONS)


async def migrate_everything(
    admin_url: str, url: str, app_role: str
) -> tuple[int, int, SetupReport]:
    """``companion db migrate``: the store's schema, memory_sql's role and the users table,
    as the admin, granted to ``app_role``; then ``verify`` (logging in where ``url`` does).
    The versions in place and what verify found; StoreError when the database fails."""
    try:
        version = await migrate(admin_url, app_role)
        await prepare(admin_url, SQL_ROLE, app_role)
        accounts_version = migrate_accounts(admin_url, app_role)
        return version, accounts_version, await verify(admin_url, app_role, url)
    except psycopg.Error as exc:
        raise StoreError(str(exc)) from exc
