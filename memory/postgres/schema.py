"""All of Postgres's DDL, run as an admin by ``companion db migrate``
(``migrate_everything``).

``migrate``: the store's tables, every one with forced row-level security per person,
and the app role's grants (``PG_MIGRATIONS``, append-only), then the vector index where
the database has pgvector (``VECTOR_SCHEMA``, made whenever migrate finds the extension:
without it, nothing and no error). ``migrate_accounts``: the
users, logins and login-throttle tables. ``prepare``: memory_sql's login role
(``companion_sql``), its password, grants, restrictive policies and the journal trigger
that records every UPDATE. ``memory.postgres.sql_guard.verify`` then checks it all.
Design: docs/postgres.md."""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import secrets
import unicodedata
from typing import Any

import psycopg
from psycopg import AsyncConnection, errors, sql
from psycopg.sql import SQL, Composable, Identifier, Literal

from memory.errors import StoreError
from memory.postgres.sql_guard import (
    APP_ROLE,
    BINDINGS,
    EDITABLE,
    JOURNAL_TRIGGER,
    LOGINS,
    PERSON_FUNCTION,
    ROLE_TIMEOUT,
    SCRAM_ITERATIONS,
    SQL_ROLE,
    UNREADABLE,
    SetupReport,
    verify,
)
from memory.postgres.sql_parse import READABLE
from memory.rules.sql_policy import (
    EMPTY_TEXT,
    HIDDEN_ROLE,
    KEPT_BATCHES,
    MAX_ROWS_CHANGED,
    MAX_WRITE_CHARS,
    NOT_EMPTY,
    READABLE_SETTINGS,
    TOO_LONG,
    TOO_MANY_ROWS,
)
from memory.types import ROLES

log = logging.getLogger("companion.memory_sql")

# The tables each migration adds (all scoped to a person), and their sequences.
_TABLES_1 = ("sessions", "messages", "running_turns", "profile")
_TABLES_2 = ("memories", "segments")
_TABLES_3 = ("job_leases", "sql_edits")
_TABLES_7 = ("chat_imports",)
_TABLES_8 = ("message_terms", "message_term_totals")
_TABLES_9 = ("answer_traces", "answer_feedback")


# The tables the app role may read and write (schema_version is the admin's alone; the
# journal, sql_edits, it may read, mark undone and delete, but only memory_sql's
# trigger, memory.postgres.sql_guard, writes new entries).
APP_TABLES: tuple[str, ...] = _TABLES_1 + _TABLES_2 + _TABLES_3 + _TABLES_7 + _TABLES_8 + _TABLES_9
APP_SEQUENCES: tuple[str, ...] = ("messages_id_seq", "running_turns_id_seq", "segments_id_seq")
JOURNAL = "sql_edits"
_ROLE_LIST = ", ".join(f"'{role}'" for role in ROLES)


# Every table's person: the transaction's app.person unless given, never empty.
_PERSON = "person text NOT NULL DEFAULT current_setting('app.person') CHECK (person <> '')"


# The words full-text search indexes: punctuation splits them, accents go, any language
# (TEXT_SEARCH: 'simple', over text FOLD has folded: no extension needed).
TEXT_SEARCH = "companion_words"
_WORDS = f"to_tsvector('{TEXT_SEARCH}', regexp_replace(%s, '[[:punct:]]+', ' ', 'g'))"
FOLD = "companion_fold"
_FOLDED_WORDS = _WORDS % f"{FOLD}(%s)"


def accent_map() -> tuple[str, str]:
    """Latin letters with accents (U+00C0-U+024F) and their plain letters, for translate()."""
    accented, plain = "", ""
    for code in range(0xC0, 0x250):
        letter = chr(code)
        parts = unicodedata.normalize("NFD", letter)
        base, marks = parts[0], parts[1:]
        if marks and base.isascii() and all(unicodedata.combining(m) for m in marks):
            accented, plain = accented + letter, plain + base
    return accented, plain


def _scoped(table: str) -> str:
    """Row-level security on ``table``: its rows are the current person's only."""
    return f"""
    ALTER TABLE {table} ENABLE ROW LEVEL SECURITY;
    ALTER TABLE {table} FORCE ROW LEVEL SECURITY;
    CREATE POLICY {table}_person ON {table}
        USING (person = current_setting('app.person', true))
        WITH CHECK (person = current_setting('app.person', true));
    """


# The search table (migration 8, memory.postgres.lexical): each user/assistant message's
# words (its tsvector's lexemes) with their counts, and per person the documents and
# words indexed (summed over TERM_SHARDS rows, so two transactions of one person never
# wait for each other's count). ``{rows}`` is a relation of messages (id, person, role,
# tsv) whose person is app.person's: a trigger's transition table or a backfill batch.
TERMS = "message_terms"
TERMS_BACKFILL = "message_terms_backfill"
TERM_SHARDS = 16
_COUNT_TERMS = f"""
    INSERT INTO public.message_term_totals AS t (shard, documents, tokens)
    SELECT mod(pg_catalog.pg_backend_pid(), {TERM_SHARDS}), {{sign}}count(*),
           {{sign}}coalesce(sum(d.length), 0)
    FROM (SELECT DISTINCT message_id, length FROM counted) d HAVING count(*) > 0
    ON CONFLICT (person, shard) DO UPDATE
        SET documents = t.documents + excluded.documents, tokens = t.tokens + excluded.tokens"""
POST_TERMS = """
    WITH counted AS (
        INSERT INTO public.message_terms (term, message_id, frequency, length)
        SELECT w.lexeme, r.id, coalesce(pg_catalog.cardinality(w.positions), 1), d.length
        FROM {rows} r
        CROSS JOIN LATERAL (
            SELECT sum(coalesce(pg_catalog.cardinality(u.positions), 1))::integer AS length
            FROM pg_catalog.unnest(r.tsv) u) d
        CROSS JOIN LATERAL pg_catalog.unnest(r.tsv) w
        WHERE r.role IN ('user', 'assistant')
          AND r.person = pg_catalog.current_setting('app.person')
        ON CONFLICT DO NOTHING
        RETURNING message_id, length)""" + _COUNT_TERMS.format(sign="")
_UNPOST_TERMS = """
    WITH counted AS (
        DELETE FROM public.message_terms t
        USING {rows} r CROSS JOIN LATERAL pg_catalog.unnest(r.tsv) w
        WHERE r.person = pg_catalog.current_setting('app.person')
          AND t.term = w.lexeme AND t.message_id = r.id
        RETURNING t.message_id, t.length)""" + _COUNT_TERMS.format(sign="-")
# A changed message's old and new versions (an edit of its text or role), for UPDATE.
_CHANGED = """(SELECT {side}.* FROM gone o JOIN added n ON n.id = o.id
             WHERE (o.role, o.tsv) IS DISTINCT FROM (n.role, n.tsv))"""


def _terms_trigger(name: str, event: str, body: str, rows: str) -> str:
    """A statement-level trigger ``name`` on messages (``event``: its kind and transition
    tables) keeping the search table in step: ``body`` for the persons of ``rows``, each
    under its own app.person (as the admin, SECURITY DEFINER: memory_sql's role edits
    messages but may not touch the search table; row security, forced, still holds, so
    app.person is set to the rows' person, which is the transaction's own: row security
    let it change them)."""
    return f"""
    CREATE FUNCTION public.{name}() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
        SET search_path = pg_catalog, pg_temp AS $terms$
    DECLARE
        v_was text := current_setting('app.person', true);
        v_person text;
    BEGIN
        FOR v_person IN SELECT DISTINCT r.person FROM {rows} r LOOP
            PERFORM set_config('app.person', v_person, true);
            {body};
        END LOOP;
        PERFORM set_config('app.person', coalesce(v_was, ''), true);
        RETURN NULL;
    END $terms$;
    CREATE TRIGGER {name} AFTER {event} FOR EACH STATEMENT EXECUTE FUNCTION public.{name}();
    REVOKE ALL ON FUNCTION public.{name}() FROM PUBLIC;"""


_TERMS_TRIGGERS = "".join(
    (
        _terms_trigger(
            "message_terms_added",
            "INSERT ON messages REFERENCING NEW TABLE AS added",
            POST_TERMS.format(rows="added"),
            "added",
        ),
        _terms_trigger(
            "message_terms_gone",
            "DELETE ON messages REFERENCING OLD TABLE AS gone",
            _UNPOST_TERMS.format(rows="gone"),
            "gone",
        ),
        _terms_trigger(
            "message_terms_changed",
            "UPDATE ON messages REFERENCING OLD TABLE AS gone NEW TABLE AS added",
            _UNPOST_TERMS.format(rows=_CHANGED.format(side="o"))
            + ";\n"
            + POST_TERMS.format(rows=_CHANGED.format(side="n")),
            _CHANGED.format(side="n"),
        ),
    )
)


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
    # (Where unaccent cannot be created, e.g. a server without contrib, the mapping stays
    # 'simple'; migration 6 folds accents itself on every server.)
    f"""
    CREATE TEXT SEARCH CONFIGURATION {TEXT_SEARCH} (COPY = simple);
    DO $$ BEGIN
        CREATE EXTENSION IF NOT EXISTS unaccent;
        ALTER TEXT SEARCH CONFIGURATION {TEXT_SEARCH}
            ALTER MAPPING FOR word, hword, hword_part WITH unaccent, simple;
    EXCEPTION WHEN feature_not_supported OR undefined_file OR insufficient_privilege THEN
        NULL;
    END $$;
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
    # 6: accents fold without the unaccent extension (a server may lack contrib, like the
    # test server with pgvector): FOLD maps Latin letters with accents to plain ones, the
    # tsvectors are rebuilt over folded text, queries fold the same way
    # (memory.postgres.recall._TSQUERY), and the configuration is plain 'simple'.
    f"""
    CREATE OR REPLACE FUNCTION {FOLD}(words text) RETURNS text
        LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
        AS $$ SELECT translate(words, '{accent_map()[0]}', '{accent_map()[1]}') $$;
    ALTER TEXT SEARCH CONFIGURATION {TEXT_SEARCH}
        ALTER MAPPING FOR word, hword, hword_part WITH simple;
    ALTER TABLE messages DROP COLUMN tsv;
    ALTER TABLE messages ADD COLUMN tsv tsvector
        GENERATED ALWAYS AS ({_FOLDED_WORDS % "content"}) STORED;
    CREATE INDEX messages_tsv ON messages USING gin (tsv);
    ALTER TABLE segments DROP COLUMN tsv;
    ALTER TABLE segments ADD COLUMN tsv tsvector
        GENERATED ALWAYS AS ({_FOLDED_WORDS % "summary"}) STORED;
    CREATE INDEX segments_tsv ON segments USING gin (tsv);
    """,
    # 7: conversations brought from other apps (``companion import``, memory.sqlite's
    # migration 10): each keyed by its app and that app's conversation id, so a second
    # import of the same file adds nothing; the key goes with its session. Not readable
    # by memory_sql (sql_guard.UNREADABLE).
    f"""
    CREATE TABLE chat_imports (
        {_PERSON},
        source      text NOT NULL,
        source_id   text NOT NULL,
        session_id  text NOT NULL,
        imported_at timestamptz NOT NULL,
        PRIMARY KEY (person, source, source_id),
        UNIQUE (person, session_id),
        FOREIGN KEY (person, session_id) REFERENCES sessions (person, id) ON DELETE CASCADE
    );
    """
    + "".join(_scoped(table) for table in _TABLES_7),
    # 8: lexical search over the whole history under row security (docs/postgres.md,
    # memory.postgres.lexical). The tsvector's GIN index is useless to the app role (``@@``
    # is not leakproof, so row security keeps it from the index), but text comparison
    # is: each user/assistant message's words go into message_terms, a btree by (person,
    # term, message) that row security can use, kept in step by triggers on messages.
    # ``term`` compares byte by byte ("C"), so a prefix is one range of the index. The
    # messages there before are indexed by ``backfill_terms`` (resumable, run by migrate
    # after the migrations): message_terms_backfill holds, per person, the id below
    # which their messages still wait (the trigger covers every id above the sequence's).
    # Sessions are read past row security once, for the persons (a non-superuser owner
    # is held by FORCE).
    f"""
    CREATE TABLE message_terms (
        {_PERSON},
        term       text COLLATE "C" NOT NULL,
        message_id bigint NOT NULL,
        frequency  integer NOT NULL,
        length     integer NOT NULL,
        PRIMARY KEY (person, term, message_id) INCLUDE (frequency, length)
    );
    CREATE TABLE message_term_totals (
        {_PERSON},
        shard     integer NOT NULL,
        documents bigint NOT NULL,
        tokens    bigint NOT NULL,
        PRIMARY KEY (person, shard)
    );
    CREATE TABLE {TERMS_BACKFILL} (
        person text PRIMARY KEY,
        below  bigint NOT NULL
    );
    {_TERMS_TRIGGERS}
    ALTER TABLE sessions NO FORCE ROW LEVEL SECURITY;
    INSERT INTO {TERMS_BACKFILL} (person, below)
        SELECT DISTINCT person, (SELECT last_value + 1 FROM messages_id_seq) FROM sessions;
    ALTER TABLE sessions FORCE ROW LEVEL SECURITY;
    """
    + "".join(_scoped(table) for table in _TABLES_8),
    # 9: the chat list and the Graph tab (memory.sqlite's migration 11): a chat pinned to
    # the top, a title the person chose, each answer's trace and the person's rating of
    # it, both going with their answer. memory_sql reads neither (sql_guard.UNREADABLE).
    f"""
    ALTER TABLE sessions ADD COLUMN pinned_at timestamptz;
    ALTER TABLE sessions ADD COLUMN renamed boolean NOT NULL DEFAULT false;
    CREATE TABLE answer_traces (
        message_id bigint PRIMARY KEY REFERENCES messages (id) ON DELETE CASCADE,
        {_PERSON},
        trace      jsonb NOT NULL
    );
    CREATE TABLE answer_feedback (
        message_id bigint PRIMARY KEY REFERENCES messages (id) ON DELETE CASCADE,
        {_PERSON},
        rating     smallint NOT NULL CHECK (rating IN (1, -1)),
        comment    text NOT NULL DEFAULT '',
        created_at timestamptz NOT NULL
    );
    """
    + "".join(_scoped(table) for table in _TABLES_9),
)


# The vector index (memory.postgres.vectors), made by ``migrate`` once the database has
# pgvector: each user/assistant message's vector per embedding model, the person's like
# every row. ``embedding`` has no fixed dimension (each model has its own: one table
# serves them all, and a new model needs no migration); pgvector's HNSW indexes one
# dimension only, so each of INDEXED_DIMENSIONS has a partial index on the column cast
# to it (cosine distance), and a model of another dimension is searched exactly. A
# message's vectors go with it. memory_sql's role has no privilege on the table.
VECTORS = "message_vectors"
INDEXED_DIMENSIONS = (384, 512, 768, 1024, 1536)
_HNSW = """
    CREATE INDEX IF NOT EXISTS message_vectors_hnsw_{d} ON message_vectors
        USING hnsw ((embedding::vector({d})) vector_cosine_ops) WHERE dimensions = {d};"""
VECTOR_SCHEMA = f"""
    CREATE TABLE IF NOT EXISTS {VECTORS} (
        message_id bigint NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
        {_PERSON},
        model      text NOT NULL,
        embedding  vector NOT NULL,
        dimensions integer GENERATED ALWAYS AS (vector_dims(embedding)) STORED,
        PRIMARY KEY (person, model, message_id)
    );
    CREATE INDEX IF NOT EXISTS message_vectors_message ON {VECTORS} (message_id);
    ALTER TABLE {VECTORS} ENABLE ROW LEVEL SECURITY;
    ALTER TABLE {VECTORS} FORCE ROW LEVEL SECURITY;
    DROP POLICY IF EXISTS {VECTORS}_person ON {VECTORS};
    CREATE POLICY {VECTORS}_person ON {VECTORS}
        USING (person = current_setting('app.person', true))
        WITH CHECK (person = current_setting('app.person', true));
    """ + "".join(_HNSW.format(d=dimensions) for dimensions in INDEXED_DIMENSIONS)


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
        if await _has_pgvector(conn):
            await conn.execute(VECTOR_SCHEMA)
            await conn.execute(
                sql.SQL("GRANT SELECT, INSERT, UPDATE, DELETE ON {} TO {}").format(
                    sql.Identifier(VECTORS), role
                )
            )
    await backfill_terms(admin_url)
    return len(PG_MIGRATIONS)


# Messages one backfill transaction indexes (a few seconds at most; none is held longer).
BACKFILL_BATCH = 20_000
_BACKFILL_ROWS = """(SELECT id, person, role, tsv FROM public.messages
                     WHERE id >= %(lowest)s AND id < %(below)s)"""


async def backfill_terms(admin_url: str, batch: int = BACKFILL_BATCH) -> int:
    """Index the messages that were stored before the search table (migration 8), newest
    first, ``batch`` at a time, each batch one transaction that records how far it got:
    interrupted, the next migrate goes on from there (and two at once share the work).
    How many messages were indexed."""
    indexed = 0
    connecting = AsyncConnection.connect(admin_url, autocommit=True)
    async with await connecting as conn:
        while True:
            async with conn.transaction():
                done = await _backfill_batch(conn, batch)
            if done is None:
                return indexed
            indexed += done
            if indexed and indexed % (10 * batch) == 0:
                log.info("search table: %d older messages indexed", indexed)


async def _backfill_batch(conn: AsyncConnection[Any], batch: int) -> int | None:
    """One person's next ``batch`` messages still to index; None when nobody waits."""
    cursor = await conn.execute(
        SQL("SELECT person, below FROM {} ORDER BY person LIMIT 1 FOR UPDATE SKIP LOCKED").format(
            Identifier(TERMS_BACKFILL)
        )
    )
    row = await cursor.fetchone()
    if row is None:
        return None
    person, below = row
    await conn.execute("SELECT set_config('app.person', %s, true)", (person,))
    cursor = await conn.execute(
        """SELECT min(id), count(*) FROM (SELECT id FROM messages WHERE id < %s
                                          ORDER BY id DESC LIMIT %s) b""",
        (below, batch),
    )
    lowest, count = await cursor.fetchone() or (None, 0)
    if lowest is None:
        await conn.execute(
            SQL("DELETE FROM {} WHERE person = %s").format(Identifier(TERMS_BACKFILL)), (person,)
        )
        return 0
    await conn.execute(POST_TERMS.format(rows=_BACKFILL_ROWS), {"lowest": lowest, "below": below})
    await conn.execute(
        SQL("UPDATE {} SET below = %s WHERE person = %s").format(Identifier(TERMS_BACKFILL)),
        (lowest, person),
    )
    return int(count)


async def _has_pgvector(conn: AsyncConnection[Any]) -> bool:
    """Whether the database has pgvector's extension, creating it if this role may; a
    refusal (not installed on the server, or not ours to create) is a note in the log:
    recall is then lexical, and ``companion doctor`` says so."""
    try:
        async with conn.transaction():
            await conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except (errors.FeatureNotSupported, errors.InsufficientPrivilege, errors.UndefinedFile) as e:
        log.info("no vector index: pgvector's extension is not here (%s)", e.sqlstate)
        return False
    return True


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
    # 4: the ids of removed people (``PgAccounts.remove``): while anyone is left, a
    # removed first person stays the first (the smallest id), so no one else takes over
    # the rows from before accounts. Emptied when the last person goes.
    """
    CREATE TABLE removed_users (
        id bigint PRIMARY KEY
    );
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
            sql.SQL(
                "REVOKE ALL ON users, logins, login_failures, removed_users FROM PUBLIC, {}"
            ).format(role)
        )
        conn.execute(sql.SQL("GRANT SELECT, INSERT, DELETE ON logins TO {}").format(role))
        conn.execute(sql.SQL("GRANT SELECT, INSERT, DELETE ON removed_users TO {}").format(role))
        conn.execute(
            sql.SQL("GRANT SELECT, INSERT, UPDATE, DELETE ON login_failures TO {}").format(role)
        )
        conn.execute(
            sql.SQL(
                "GRANT SELECT, INSERT (name, password_hash), UPDATE (password_hash), DELETE "
                "ON users TO {}"
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


async def prepare(admin_url: str, sql_role: str = SQL_ROLE, app_role: str = APP_ROLE) -> None:
    """Create (or bring up to date) memory_sql's login role, its password, grants, row
    security policies and journal trigger; run as the admin after the schema's
    ``memory.postgres.schema.migrate``."""
    connecting = AsyncConnection.connect(admin_url, autocommit=True)
    async with await connecting as conn, conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(hashtext('companion.sql_guard'))")
        await _login_role(conn, sql_role, await _password(conn, sql_role))
        await _no_memberships(conn, sql_role, app_role)
        await _grants(conn, Identifier(sql_role), Identifier(app_role))
        await _policies(conn, sql_role)
        await conn.execute(_journal_function())
        await conn.execute(
            SQL("REVOKE ALL ON FUNCTION public.{}() FROM PUBLIC").format(
                Identifier(JOURNAL_TRIGGER)
            )
        )
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


async def _password(conn: AsyncConnection[Any], sql_role: str) -> str:
    """The login role's password: the one kept in sql_login, or a new random one."""
    cursor = await conn.execute(
        SQL("SELECT password FROM {} WHERE role = %s").format(Identifier(LOGINS)), (sql_role,)
    )
    row = await cursor.fetchone()
    if row is not None:
        return str(row[0])
    password = secrets.token_urlsafe(32)
    await conn.execute(
        SQL("INSERT INTO {} (role, password) VALUES (%s, %s)").format(Identifier(LOGINS)),
        (sql_role, password),
    )
    return password


def scram_verifier(password: str, salt: bytes | None = None) -> str:
    """``password`` as Postgres stores a SCRAM-SHA-256 one (RFC 5803), so ``ALTER ROLE
    … PASSWORD`` never carries the password itself (a server log may keep statements)."""
    salt = salt or secrets.token_bytes(16)
    salted = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, SCRAM_ITERATIONS)
    client_key = hmac.new(salted, b"Client Key", "sha256").digest()
    server_key = hmac.new(salted, b"Server Key", "sha256").digest()
    stored_key = hashlib.sha256(client_key).digest()

    def b64(raw: bytes) -> str:
        return base64.b64encode(raw).decode()

    return f"SCRAM-SHA-256${SCRAM_ITERATIONS}:{b64(salt)}${b64(stored_key)}:{b64(server_key)}"


async def _login_role(conn: AsyncConnection[Any], sql_role: str, password: str) -> None:
    """The role the model's statement logs in as: LOGIN, NOINHERIT, nothing else. (Only
    a superuser may even name SUPERUSER, BYPASSRLS or REPLICATION in ALTER ROLE: those
    are set when the role is made and checked by ``verify``.)"""
    role, verifier = Identifier(sql_role), Literal(scram_verifier(password))
    cursor = await conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (sql_role,))
    if await cursor.fetchone() is None:
        await conn.execute(
            SQL(
                "CREATE ROLE {} LOGIN NOINHERIT NOSUPERUSER NOCREATEDB NOCREATEROLE "
                "NOBYPASSRLS NOREPLICATION PASSWORD {}"
            ).format(role, verifier)
        )
        await conn.execute(
            SQL("ALTER ROLE {} SET statement_timeout = {}").format(role, Literal(ROLE_TIMEOUT))
        )
        return
    try:
        async with conn.transaction():
            await conn.execute(
                SQL("ALTER ROLE {} LOGIN NOINHERIT NOCREATEDB NOCREATEROLE PASSWORD {}").format(
                    role, verifier
                )
            )
            await conn.execute(
                SQL("ALTER ROLE {} SET statement_timeout = {}").format(role, Literal(ROLE_TIMEOUT))
            )
    except errors.InsufficientPrivilege:  # a superuser made it a superuser: verify says so
        log.warning("could not alter the role %r (verify reports why)", sql_role)


async def _no_memberships(conn: AsyncConnection[Any], sql_role: str, app_role: str) -> None:
    """Take back every role granted to sql_role (its login must lead nowhere) and
    sql_role from the app role (granted by earlier versions, which switched to it);
    what cannot be taken back here, ``verify`` reports."""
    cursor = await conn.execute(
        """SELECT g.rolname, m.rolname FROM pg_auth_members a
           JOIN pg_roles g ON g.oid = a.roleid JOIN pg_roles m ON m.oid = a.member
           WHERE m.rolname = %s OR (g.rolname = %s AND m.rolname = %s)""",
        (sql_role, sql_role, app_role),
    )
    for granted, member in await cursor.fetchall():
        try:
            async with conn.transaction():
                await conn.execute(
                    SQL("REVOKE {} FROM {}").format(Identifier(granted), Identifier(member))
                )
        except errors.InsufficientPrivilege:
            log.warning("could not revoke role %r from %r (verify reports it)", granted, member)


async def _grants(conn: AsyncConnection[Any], role: Identifier, app: Identifier) -> None:
    """Exactly these privileges: take back anything granted before, then grant."""
    every = SQL(", ").join(map(Identifier, READABLE + UNREADABLE))
    await conn.execute(SQL("REVOKE ALL ON {} FROM {}").format(every, role))
    await conn.execute(
        SQL("GRANT SELECT ON {} TO {}").format(SQL(", ").join(map(Identifier, READABLE)), role)
    )
    for table, column in EDITABLE.items():
        await conn.execute(
            SQL("GRANT UPDATE ({}) ON {} TO {}").format(Identifier(column), Identifier(table), role)
        )
    # The password and the bindings: the app role's alone.
    private = SQL(", ").join(map(Identifier, (LOGINS, BINDINGS)))
    await conn.execute(SQL("REVOKE ALL ON {} FROM PUBLIC").format(private))
    await conn.execute(SQL("GRANT SELECT ON {} TO {}").format(Identifier(LOGINS), app))
    await conn.execute(
        SQL("GRANT SELECT, INSERT, UPDATE, DELETE ON {} TO {}").format(Identifier(BINDINGS), app)
    )
    # Nothing to create objects in (PUBLIC kept CREATE on public before Postgres 15).
    await conn.execute("REVOKE CREATE ON SCHEMA public FROM PUBLIC")


async def _policies(conn: AsyncConnection[Any], sql_role: str) -> None:
    """The policies that bind companion_sql (and anyone who ever inherits it): its
    connection's person only, no memory_tool message, readable settings only."""
    role = Identifier(sql_role)
    function = Identifier(PERSON_FUNCTION)
    await conn.execute(
        SQL(
            "CREATE OR REPLACE FUNCTION public.{function}() RETURNS text "
            "LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS "
            "$$ SELECT person FROM public.{bindings} "
            "WHERE backend_pid = pg_catalog.pg_backend_pid() $$"
        ).format(function=function, bindings=Identifier(BINDINGS))
    )
    await conn.execute(SQL("REVOKE ALL ON FUNCTION public.{}() FROM PUBLIC").format(function))
    await conn.execute(SQL("GRANT EXECUTE ON FUNCTION public.{}() TO {}").format(function, role))
    person = SQL("person = (SELECT public.{}())").format(function)
    for table in READABLE:
        # Its rows are the binding's person's (the tables' own policy, for everyone, is
        # app.person's: permissive policies add up, so this one alone would not do) …
        await _policy(conn, table, f"{table}_{sql_role}_bound", "PERMISSIVE", role, person)
        # … and only those, whatever app.person says.
        await _policy(conn, table, f"{table}_{sql_role}_person", "RESTRICTIVE", role, person)
    hidden = SQL("role <> {}").format(Literal(HIDDEN_ROLE))
    await _policy(conn, "messages", f"messages_{sql_role}_hidden", "RESTRICTIVE", role, hidden)
    readable = SQL("key IN ({})").format(SQL(", ").join(map(Literal, READABLE_SETTINGS)))
    await _policy(conn, "profile", f"profile_{sql_role}_readable", "RESTRICTIVE", role, readable)


async def _policy(
    conn: AsyncConnection[Any],
    table: str,
    name: str,
    kind: str,
    role: Identifier,
    condition: Composable,
) -> None:
    policy = Identifier(name)
    await conn.execute(SQL("DROP POLICY IF EXISTS {} ON {}").format(policy, Identifier(table)))
    await conn.execute(
        SQL(
            "CREATE POLICY {policy} ON {table} AS {kind} FOR ALL TO {role} "
            "USING ({condition}) WITH CHECK ({condition})"
        ).format(
            policy=policy, table=Identifier(table), kind=SQL(kind), role=role, condition=condition
        )
    )


def _journal_function() -> str:
    """The journal trigger's function: as the admin (SECURITY DEFINER: companion_sql
    cannot write sql_edits itself), record each text the statement changed with what it
    replaced, under the person, batch and time of the connection's binding; refuse the
    new text SQLite's guard would refuse, and an edit past the row cap; keep the last
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
    v_person text;
    v_batch  text;
    v_at     timestamptz;
    e        record;
    changed  integer;
BEGIN
    SELECT b.person, b.batch, b.edit_at INTO v_person, v_batch, v_at
    FROM public.{BINDINGS} b WHERE b.backend_pid = pg_backend_pid();
    IF v_person IS NULL THEN
        RAISE EXCEPTION 'refused: a memory_sql edit needs its journal batch'
            USING ERRCODE = 'check_violation';
    END IF;
    -- The journal's row security (forced, on its owner too) is the binding's person's.
    PERFORM set_config('app.person', v_person, true);
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
