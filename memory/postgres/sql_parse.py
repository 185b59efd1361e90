"""memory_sql's parse on Postgres: the statement read with Postgres's own grammar (pglast).

One SELECT or UPDATE; every node type, relation (with CTE scope), function, cast and
operator on an allow-list; LIKE becomes ILIKE as on SQLite. What runs is the checked tree
deparsed, parsed again to prove it reads the same. The first layer of several, not the
only one. Design: docs/postgres.md.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

from pglast import ast, enums, parse_sql
from pglast.parser import ParseError
from pglast.stream import RawStream

from memory.errors import SqlRefused
from memory.rules.sql_policy import (
    EDITABLE_COLUMNS,
    REFUSED_FUNCTION,
    REFUSED_KEYWORD,
    REFUSED_TYPE,
    REFUSED_UPDATE_COLUMN,
    sql_text,
)
from memory.rules.text import word_set

# What memory_sql may read: SQLite's visible schema (memory.sqlite.sql_guard), with the profile
# cut to the readable settings and memory_tool messages dropped by policies.
READABLE: tuple[str, ...] = ("sessions", "messages", "memories", "segments", "profile")
SCHEMA = "public"
CATALOG = "pg_catalog"

ALLOWED_FUNCTIONS = word_set(
    """
    count sum avg min max string_agg array_agg bool_and bool_or every stddev stddev_pop
    stddev_samp variance var_pop var_samp mode percentile_cont percentile_disc json_agg
    jsonb_agg
    row_number rank dense_rank percent_rank cume_dist ntile lag lead first_value
    last_value nth_value
    length char_length character_length octet_length lower upper initcap btrim ltrim
    rtrim substr substring left right strpos position replace translate reverse
    split_part concat concat_ws starts_with chr ascii md5 to_hex overlay like_escape
    similar_to_escape regexp_replace regexp_match regexp_matches regexp_like
    regexp_count regexp_substr regexp_instr regexp_split_to_array regexp_split_to_table
    string_to_array string_to_table array_to_string
    now date_trunc date_part extract age make_date make_time make_interval
    make_timestamp make_timestamptz to_char to_date to_timestamp to_number timezone
    justify_days justify_hours justify_interval date_bin isfinite clock_timestamp
    statement_timestamp transaction_timestamp overlaps
    abs round trunc floor ceil ceiling sign mod power pow sqrt cbrt exp ln log log10
    div pi degrees radians width_bucket random gcd lcm scale
    to_json to_jsonb row_to_json json_build_object jsonb_build_object json_build_array
    jsonb_build_array json_extract_path json_extract_path_text jsonb_extract_path
    jsonb_extract_path_text json_array_length jsonb_array_length json_typeof
    jsonb_typeof json_each json_each_text jsonb_each jsonb_each_text json_object_keys
    jsonb_object_keys json_array_elements json_array_elements_text jsonb_array_elements
    jsonb_array_elements_text jsonb_pretty
    array_length cardinality array_position array_positions array_append array_prepend
    array_remove array_upper array_lower unnest generate_series
    to_tsvector to_tsquery plainto_tsquery phraseto_tsquery websearch_to_tsquery ts_rank
    ts_rank_cd ts_headline
    num_nulls num_nonnulls
    """
)
# Casts to these only (the parser spells INTEGER, DOUBLE PRECISION… as pg_catalog.int4…).
ALLOWED_TYPES = word_set(
    """
    text varchar bpchar char int2 int4 int8 numeric float4 float8 bool date time timetz
    timestamp timestamptz interval json jsonb tsvector tsquery uuid
    """
)
_SVF = enums.SQLValueFunctionOp
_KIND = enums.A_Expr_Kind
DATE_TIME_VALUES = frozenset(
    {
        _SVF.SVFOP_CURRENT_DATE,
        _SVF.SVFOP_CURRENT_TIME,
        _SVF.SVFOP_CURRENT_TIME_N,
        _SVF.SVFOP_CURRENT_TIMESTAMP,
        _SVF.SVFOP_CURRENT_TIMESTAMP_N,
        _SVF.SVFOP_LOCALTIME,
        _SVF.SVFOP_LOCALTIME_N,
        _SVF.SVFOP_LOCALTIMESTAMP,
        _SVF.SVFOP_LOCALTIMESTAMP_N,
    }
)
# ``m.f`` (or ``(expr).f``) calls f(m) when m has no column f: Postgres's attribute
# notation, which the tree cannot tell from a column. These are the built-ins it can
# reach that are not allowed (every one-argument function of pg_catalog that takes any
# value or row): pure functions of the person's own row, refused as names all the same.
ATTRIBUTE_CALLS = word_set(
    """
    any_out anycompatible_out anycompatiblenonarray_out anyelement_out anynonarray_out
    hash_record pg_collation_for pg_column_compression pg_column_size
    pg_column_toast_chunk_id pg_typeof quote_literal quote_nullable record_out
    record_send
    """
)
# Nodes with nothing to check of their own: their children are walked.
PLAIN_NODES = word_set(
    """
    ResTarget A_Const BoolExpr TypeCast RangeSubselect JoinExpr CaseExpr CaseWhen
    CoalesceExpr NullTest BooleanTest WindowDef A_Star A_Indices
    A_ArrayExpr RowExpr MinMaxExpr String Integer Float Boolean BitString Alias
    RangeFunction CollateClause GroupingSet GroupingFunc NamedArgExpr MultiAssignRef
    SetToDefault
    """
)
# How the model is told about a part it may not use (by node type; others by name).
PART_NAMES = {
    "IntoClause": "SELECT … INTO",
    "LockingClause": "FOR UPDATE / FOR SHARE",
    "ReturningClause": "RETURNING",
    "UpdateStmt": "an UPDATE inside another statement (a data-modifying WITH)",
    "InsertStmt": "INSERT (a data-modifying WITH)",
    "DeleteStmt": "DELETE (a data-modifying WITH)",
    "MergeStmt": "MERGE (a data-modifying WITH)",
    "ParamRef": "a parameter ($1)",
    "RangeTableSample": "TABLESAMPLE",
    "RangeTableFunc": "XMLTABLE",
    "ColumnDef": "a column definition list",
    "CTESearchClause": "SEARCH in WITH RECURSIVE",
    "CTECycleClause": "CYCLE in WITH RECURSIVE",
}
STATEMENT_NAMES = {
    "VariableSetStmt": "SET/RESET",
    "VariableShowStmt": "SHOW",
    "TransactionStmt": "a transaction command",
    "DoStmt": "DO",
    "CallStmt": "CALL",
    "CopyStmt": "COPY",
    "LockStmt": "LOCK",
    "ExplainStmt": "EXPLAIN",
}
ILIKE = {"~~": "~~*", "!~~": "!~~*"}  # LIKE, NOT LIKE -> ILIKE, NOT ILIKE

REFUSED_RELATION = (
    "refused: reading {name} is not allowed — memory_sql reads sessions, messages, "
    "memories, segments and profile (their columns are in the tool's description)"
)
REFUSED_CAST = "refused: casting to {name} is not allowed"
REFUSED_VALUE = "refused: {name} is not allowed in memory_sql"
REFUSED_OPERATOR = "refused: operator {name} of another schema is not allowed"
UNPARSABLE = "refused: Postgres cannot parse this SQL: {detail}"
TOO_COMPLEX = "refused: the statement is too deeply nested to check; write it more simply"
NOT_FAITHFUL = "refused: the statement could not be checked as written; write it more simply"

Scope = frozenset[str]  # the CTE names a relation name may resolve to, where it stands


@dataclass(frozen=True)
class PgChecked:
    """A statement that passed the parse: the text to run and what it is."""

    sql: str
    kind: Literal["SELECT", "UPDATE"]


def check_pg_sql(sql: object) -> PgChecked:
    """Parse ``sql`` as Postgres does and check the tree; the deparsed text to run, or
    SqlRefused naming what is not allowed."""
    statement = _one_statement(sql_text(sql))
    try:
        kind = _statement(statement)
        text = RawStream()(statement)
        again = parse_sql(text)
    except RecursionError:
        raise SqlRefused(TOO_COMPLEX, "parse") from None
    if len(again) != 1 or again[0].stmt != statement:
        raise SqlRefused(NOT_FAITHFUL, "parse")
    return PgChecked(text, kind)


def _one_statement(text: str) -> ast.Node:
    try:
        statements = parse_sql(text)
    except ParseError as exc:
        raise SqlRefused(UNPARSABLE.format(detail=exc.args[0]), "parse") from None
    except RecursionError:
        raise SqlRefused(TOO_COMPLEX, "parse") from None
    if not statements:
        raise SqlRefused("refused: no SQL statement given (only comments)", "input")
    if len(statements) > 1:
        raise SqlRefused("refused: several statements given; send one at a time", "statement")
    statement = statements[0].stmt
    if statement is None:
        raise SqlRefused("refused: no SQL statement given (only comments)", "input")
    return statement


def _statement(node: ast.Node) -> Literal["SELECT", "UPDATE"]:
    if isinstance(node, ast.SelectStmt):
        _select(node, frozenset())
        return "SELECT"
    if isinstance(node, ast.UpdateStmt):
        _update(node)
        return "UPDATE"
    name = type(node).__name__
    what = STATEMENT_NAMES.get(name) or name.removesuffix("Stmt").upper()
    raise SqlRefused(REFUSED_TYPE.format(what=what), "statement")


def _refuse_part(node: ast.Node) -> SqlRefused:
    name = type(node).__name__
    return SqlRefused(REFUSED_KEYWORD.format(what=PART_NAMES.get(name, name)), "part")


def _walk(value: Any, scope: Scope) -> None:
    """Check ``value`` (a node, a list of them, or a plain value) and what it holds."""
    if isinstance(value, list | tuple):
        for item in value:
            _walk(item, scope)
        return
    if not isinstance(value, ast.Node):
        return  # a name, a number, a flag, an enum
    check = _CHECKS.get(type(value))
    if check is not None:
        check(value, scope)
    elif type(value).__name__ in PLAIN_NODES:
        _walk_fields(value, scope)
    else:
        raise _refuse_part(value)


def _walk_fields(node: ast.Node, scope: Scope, skip: Iterable[str] = ()) -> None:
    skipped = frozenset(skip)
    for field in node:
        if field not in skipped:
            _walk(getattr(node, field), scope)


def _select(node: ast.SelectStmt, scope: Scope) -> None:
    for part in (node.intoClause, node.lockingClause):
        if part:
            raise _refuse_part(part if isinstance(part, ast.Node) else part[0])
    inner = _with(node.withClause, scope)
    _walk_fields(node, inner, skip=("withClause", "intoClause", "lockingClause"))


def _with(clause: ast.WithClause | None, scope: Scope) -> Scope:
    """Check a WITH clause's queries, each where its own names are in scope as Postgres
    has them (without RECURSIVE, a CTE sees the ones before it only); the scope of the
    statement it belongs to."""
    if clause is None:
        return scope
    ctes = clause.ctes or ()
    names = [cte.ctename for cte in ctes]
    for position, cte in enumerate(ctes):
        if cte.search_clause or cte.cycle_clause:
            raise _refuse_part(cte.search_clause or cte.cycle_clause)
        if not isinstance(cte.ctequery, ast.SelectStmt):
            raise _refuse_part(cte.ctequery)
        seen = names if clause.recursive else names[:position]
        _select(cte.ctequery, scope | frozenset(seen))
    return scope | frozenset(names)


def _update(node: ast.UpdateStmt) -> None:
    scope = _with(node.withClause, frozenset())
    target = node.relation
    if target is None or target.catalogname or target.schemaname not in (None, SCHEMA):
        name = _dotted(target) if target else "?"
        raise SqlRefused(REFUSED_RELATION.format(name=name), "table")
    table = target.relname or ""
    column = EDITABLE_COLUMNS.get(table)  # None: no column of this table is editable
    for assignment in node.targetList or ():
        if assignment.name != column or assignment.indirection:
            raise SqlRefused(
                REFUSED_UPDATE_COLUMN.format(table=table, column=assignment.name), "column"
            )
        _walk(assignment.val, scope)
    if node.returningClause:
        raise _refuse_part(node.returningClause)
    _walk(node.fromClause, scope)
    _walk(node.whereClause, scope)


def _dotted(relation: ast.RangeVar) -> str:
    parts = (relation.catalogname, relation.schemaname, relation.relname)
    return ".".join(part or "" for part in parts if part)


def _relation(node: ast.RangeVar, scope: Scope) -> None:
    plain = node.catalogname is None and node.schemaname is None
    if plain and node.relname in scope:
        return  # the statement's own CTE
    if node.catalogname is None and node.schemaname in (None, SCHEMA) and node.relname in READABLE:
        return
    raise SqlRefused(REFUSED_RELATION.format(name=_dotted(node)), "table")


def _names(parts: Iterable[ast.String] | None) -> list[str]:
    return [part.sval or "" for part in parts or ()]


def _builtin(names: list[str]) -> str | None:
    """The name of a built-in as written (``name`` or ``pg_catalog.name``), else None."""
    if len(names) == 1 or (len(names) == 2 and names[0] == CATALOG):
        return names[-1]
    return None


def _function(node: ast.FuncCall, scope: Scope) -> None:
    names = _names(node.funcname)
    name = _builtin(names)
    if name is None or name not in ALLOWED_FUNCTIONS:
        raise SqlRefused(REFUSED_FUNCTION.format(name=".".join(names)), "function")
    node.funcname = (ast.String(sval=CATALOG), ast.String(sval=name))
    _walk_fields(node, scope, skip=("funcname",))


def _type(node: ast.TypeName, scope: Scope) -> None:
    names = _names(node.names)
    name = _builtin(names)
    if node.setof or node.pct_type or name is None or name not in ALLOWED_TYPES:
        raise SqlRefused(REFUSED_CAST.format(name=".".join(names)), "type")
    _walk(node.typmods, scope)


def _value_function(node: ast.SQLValueFunction, scope: Scope) -> None:
    if node.op not in DATE_TIME_VALUES:
        name = getattr(node.op, "name", "it").removeprefix("SVFOP_")
        raise SqlRefused(REFUSED_VALUE.format(name=name), "function")


def _operator_name(parts: Iterable[ast.String] | None) -> list[str]:
    """An operator's name as written, if it is a built-in's (or none is written)."""
    names = _names(parts)
    if names and _builtin(names) is None:
        raise SqlRefused(REFUSED_OPERATOR.format(name=".".join(names)), "function")
    return names


def _sublink(node: ast.SubLink, scope: Scope) -> None:
    _operator_name(node.operName)  # x OPERATOR(s.=) ANY (SELECT …)
    _walk_fields(node, scope, skip=("operName",))


def _sort(node: ast.SortBy, scope: Scope) -> None:
    _operator_name(node.useOp)  # ORDER BY x USING s.<
    _walk_fields(node, scope, skip=("useOp",))


def _operator(node: ast.A_Expr, scope: Scope) -> None:
    names = _operator_name(node.name)
    if node.kind == _KIND.AEXPR_LIKE:
        node.kind = _KIND.AEXPR_ILIKE
        node.name = (ast.String(sval=ILIKE[names[-1]]),)
    elif node.kind in (_KIND.AEXPR_OP_ANY, _KIND.AEXPR_OP_ALL) and names[-1] in ILIKE:
        node.name = (ast.String(sval=ILIKE[names[-1]]),)  # LIKE ANY (…), NOT LIKE ALL (…)
    _walk(node.lexpr, scope)
    _walk(node.rexpr, scope)


def _column(node: ast.ColumnRef, scope: Scope) -> None:
    _no_attribute_call(node.fields[1:] if node.fields else ())


def _indirection(node: ast.A_Indirection, scope: Scope) -> None:
    _no_attribute_call(node.indirection or ())
    _walk(node.arg, scope)
    _walk(node.indirection, scope)


def _no_attribute_call(fields: Iterable[ast.Node]) -> None:
    for field in fields:
        if isinstance(field, ast.String) and field.sval in ATTRIBUTE_CALLS:
            raise SqlRefused(REFUSED_FUNCTION.format(name=field.sval), "function")


_CHECKS: dict[type[ast.Node], Callable[[Any, Scope], None]] = {
    ast.ColumnRef: _column,
    ast.SubLink: _sublink,
    ast.SortBy: _sort,
    ast.A_Indirection: _indirection,
    ast.SelectStmt: _select,
    ast.RangeVar: _relation,
    ast.FuncCall: _function,
    ast.TypeName: _type,
    ast.SQLValueFunction: _value_function,
    ast.A_Expr: _operator,
}
