"""memory_sql's parse on Postgres (memory.pg_sql_parse): Postgres's own grammar decides
what the statement is, allow-lists decide what it may touch, and what runs is the
checked tree written back out. Offline: pglast is the server's parser, no server needed."""

from __future__ import annotations

import pytest

from memory import SqlRefused
from memory.postgres.sql_parse import check_pg_sql

# Issue 19's C1: sqlparse ended the first comment at the first */ and saw a statement it
# allows; Postgres nests comments and sees a DO block.
NESTED_COMMENTS = [
    "/* /* */ SELECT 1 */ DO $x$ DECLARE v text; BEGIN SET LOCAL ROLE companion; "
    "PERFORM set_config('app.person','owner',true); "
    "SELECT string_agg(key||'='||value,' | ') INTO v FROM memories; "
    "RAISE EXCEPTION 'LEAK %', v; END $x$",
    "/* /* */ UPDATE sessions SET title='x' WHERE id='' */ DO $x$ BEGIN "
    "SET LOCAL ROLE companion; INSERT INTO logins(token_hash,name) VALUES "
    "(encode(sha256('bob-owns-ann'::bytea),'hex'),'ann'); END $x$",
    "/* /* */ SELECT 1 */ SET ROLE companion",
]

REFUSED = [
    # statements
    ("DO $$ BEGIN END $$", "DO"),
    ("SET ROLE companion", "SET"),
    ("SET app.person = 'ann'", "SET"),
    ("RESET ROLE", "SET/RESET"),
    ("CALL anything()", "CALL"),
    ("COPY messages TO STDOUT", "COPY"),
    ("LOCK messages", "LOCK"),
    ("BEGIN", "transaction"),
    ("EXPLAIN SELECT 1", "EXPLAIN"),
    ("INSERT INTO messages (content) VALUES ('x')", "INSERT"),
    ("DELETE FROM messages", "DELETE"),
    ("SELECT 1; SELECT 2", "several statements"),
    ("/* only a comment */", "only comments"),
    ("SELECT (", "cannot parse"),
    # functions
    ("SELECT set_config('app.person', 'owner', true)", "set_config"),
    ("SELECT (SELECT set_config('app.person','owner',true)), 1", "set_config"),
    ("SELECT current_setting('app.person')", "current_setting"),
    ("SELECT pg_notify('c', 'x')", "pg_notify"),
    ("SELECT lo_from_bytea(0, 'x')", "lo_from_bytea"),
    ("SELECT lo_create(0)", "lo_create"),
    ("SELECT * FROM dblink('host=x', 'SELECT 1') AS t(a text)", "dblink"),
    ("SELECT query_to_xml('SELECT * FROM users', true, true, '')", "query_to_xml"),
    ("SELECT pg_read_file('/etc/passwd')", "pg_read_file"),
    ("SELECT pg_sleep(10)", "pg_sleep"),
    ("SELECT pg_advisory_lock(1)", "pg_advisory_lock"),
    ("SELECT repeat('x', 100000000)", "repeat"),
    ("SELECT lpad('x', 100000000)", "lpad"),
    ("SELECT format('%100000000s', 'x')", "format"),
    ("SELECT public.lower('x')", "public.lower"),
    ("SELECT lower(content) FROM messages WHERE id = current_user", "CURRENT_USER"),
    ("SELECT nextval('messages_id_seq')", "nextval"),
    ("SELECT m.pg_column_size FROM messages m", "pg_column_size"),  # = pg_column_size(m)
    ("SELECT (m).pg_typeof FROM messages m", "pg_typeof"),
    # relations
    ("SELECT * FROM pg_stat_user_tables", "pg_stat_user_tables"),
    ("SELECT * FROM pg_locks", "pg_locks"),
    ("SELECT * FROM pg_catalog.pg_class", "pg_catalog.pg_class"),
    ("SELECT * FROM information_schema.columns", "information_schema.columns"),
    ("SELECT * FROM users", "reading users"),
    ("SELECT * FROM sql_bindings", "reading sql_bindings"),
    ("SELECT * FROM other.messages", "other.messages"),
    ("SELECT * FROM companion.public.messages", "companion.public.messages"),
    ('SELECT * FROM "Messages"', "Messages"),
    # a CTE's name counts only where Postgres resolves it to the CTE
    ("SELECT (WITH pg_locks AS (SELECT 1) SELECT 1), (SELECT count(*) FROM pg_locks)", "pg_locks"),
    ("WITH a AS (SELECT * FROM pg_locks), pg_locks AS (SELECT 1) SELECT * FROM a", "pg_locks"),
    ("(WITH x AS (SELECT 1) SELECT * FROM x) UNION SELECT * FROM x", "reading x"),
    # parts
    ("SELECT * INTO TEMP t FROM messages", "SELECT … INTO"),
    ("SELECT * FROM messages FOR UPDATE", "FOR UPDATE"),
    ("UPDATE messages SET content = 'x' RETURNING *", "RETURNING"),
    ("WITH x AS (UPDATE messages SET content = 'x') SELECT 1", "data-modifying WITH"),
    ("SELECT $1", "parameter"),
    ("SELECT xmlelement(name a)", "XmlExpr"),
    ("SELECT 1::regclass", "casting to regclass"),
    ("SELECT 'pg_authid'::pg_catalog.regclass", "casting to pg_catalog.regclass"),
    ("SELECT 1 OPERATOR(public.+) 1", "operator public.+"),
    ("SELECT 1 WHERE 1 OPERATOR(public.=) ANY (SELECT 1)", "operator public.="),
    ("SELECT id FROM messages ORDER BY id USING OPERATOR(public.<)", "operator public.<"),
    # an UPDATE's target and column
    ("UPDATE messages SET role = 'user'", "updating messages.role"),
    ("UPDATE messages SET person = 'ann'", "updating messages.person"),
    ("UPDATE sql_bindings SET person = 'ann'", "updating sql_bindings.person"),
    ("UPDATE public.logins SET name = 'ann'", "updating logins.name"),
    ("UPDATE other.messages SET content = 'x'", "other.messages"),
    ("UPDATE messages SET (content, role) = ('x', 'user')", "updating messages.role"),
    # input
    ("", "no SQL"),
    ("SELECT 1" + " " * 20_000 + "+ 1", "longer than"),
    ("SELECT '\x00'", "NUL"),
    ("SELECT " + " + ".join(["1"] * 3000), "too deeply nested"),
]


@pytest.mark.parametrize("sql", NESTED_COMMENTS)
def test_nested_comments_are_read_as_postgres_reads_them(sql: str) -> None:
    with pytest.raises(SqlRefused, match=r"(DO|SET/RESET) is not allowed"):
        check_pg_sql(sql)


@pytest.mark.parametrize(("sql", "named"), REFUSED)
def test_refused(sql: str, named: str) -> None:
    with pytest.raises(SqlRefused) as refused:
        check_pg_sql(sql)
    assert str(refused.value).startswith("refused") and named in str(refused.value)


ACCEPTED = [
    # what runs: the checked tree, deparsed; built-ins called in pg_catalog, LIKE as ILIKE
    (
        "select role, content from messages where content like '%Kopi%' /* a comment */",
        "SELECT role, content FROM messages WHERE content ILIKE '%Kopi%'",
        "SELECT",
    ),
    (
        "SELECT COUNT(*) FROM messages WHERE content NOT LIKE 'a!%' ESCAPE '!'",
        "SELECT pg_catalog.count(*) FROM messages "
        "WHERE content NOT ILIKE pg_catalog.like_escape('a!%', '!')",
        "SELECT",
    ),
    ("SELECT 'LIKE' AS word", "SELECT 'LIKE' AS word", "SELECT"),
    (
        "SELECT 1 WHERE 'Kopi' LIKE ANY (ARRAY['%kopi%']) AND 'x' NOT LIKE ALL (ARRAY['X'])",
        "SELECT 1 WHERE 'Kopi' ILIKE ANY(ARRAY['%kopi%']) AND 'x' NOT ILIKE ALL(ARRAY['X'])",
        "SELECT",
    ),
    (
        "SELECT $q$it's$q$, E'a\\nb'",
        "SELECT 'it''s', 'a\nb'",
        "SELECT",
    ),
    (
        "WITH messages AS (SELECT * FROM public.messages) SELECT content FROM messages",
        "WITH messages AS (SELECT * FROM public.messages) SELECT content FROM messages",
        "SELECT",
    ),
    (
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5) "
        "SELECT i FROM n",
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5) "
        "SELECT i FROM n",
        "SELECT",
    ),
    (
        "WITH a AS (SELECT 1 AS x), b AS (SELECT x FROM a) SELECT * FROM b",
        "WITH a AS (SELECT 1 AS x), b AS (SELECT x FROM a) SELECT * FROM b",
        "SELECT",
    ),
    (
        "SELECT date_trunc('day', created_at)::date, string_agg(content, ' | ' ORDER BY id) "
        "FROM messages WHERE created_at > now() - interval '7 days' GROUP BY 1",
        "SELECT CAST(pg_catalog.date_trunc('day', created_at) AS date), "
        "pg_catalog.string_agg(content, ' | ' ORDER BY id) FROM messages "
        "WHERE created_at > pg_catalog.now() - CAST('7 days' AS interval) GROUP BY 1",
        "SELECT",
    ),
    (
        "SELECT extract(year FROM created_at), current_date FROM sessions",
        "SELECT EXTRACT(YEAR FROM created_at), CURRENT_DATE FROM sessions",
        "SELECT",
    ),
    (
        "UPDATE memories SET value = replace(value, 'tea', 'coffee') WHERE key = 'drink'",
        "UPDATE memories SET value = pg_catalog.replace(value, 'tea', 'coffee') "
        "WHERE key = 'drink'",
        "UPDATE",
    ),
    (
        "UPDATE sessions SET title = 'Trip' WHERE id IN (SELECT session_id FROM messages "
        "WHERE content LIKE '%bali%')",
        "UPDATE sessions SET title = 'Trip' WHERE id IN (SELECT session_id FROM messages "
        "WHERE content ILIKE '%bali%')",
        "UPDATE",
    ),
    ("TABLE profile", "SELECT * FROM profile", "SELECT"),
    (
        "SELECT id FROM messages WHERE id = ANY (SELECT id FROM messages) ORDER BY id USING >",
        "SELECT id FROM messages WHERE id = ANY (SELECT id FROM messages) ORDER BY id USING >",
        "SELECT",
    ),
]


@pytest.mark.parametrize(("sql", "runs", "kind"), ACCEPTED)
def test_accepted_and_written_back_out(sql: str, runs: str, kind: str) -> None:
    checked = check_pg_sql(sql)
    assert (checked.sql, checked.kind) == (runs, kind)
    assert check_pg_sql(checked.sql) == checked  # checking what runs changes nothing more
