"""Lexical turn search on Postgres: BM25 over the person's whole history, through the
search table (``message_terms``, memory.postgres.schema's migration 8).

Row security keeps the app role's queries from the tsvector's GIN index (``@@`` is not
leakproof), but not from a btree over text: each user/assistant message's words are rows
of ``message_terms`` by (person, term, message), so a query term is one range of that
index whatever the history's length. A query is ``memory.rules.search.query_terms``
(stemmed roots, the longer ones as prefixes: ``cook`` meets "cooked"), as on SQLite.

Scoring is FTS5's ``bm25`` (k1 1.2, b 0.75, the same IDF), so both backends rank alike:
the person's documents and words come from ``message_term_totals``, a term's documents
from its rows. The cost is bounded as memory.sqlite.retrieval bounds it: the rarest
terms (together in at most ``DOC_BUDGET`` messages) are scored over the whole history,
the others only over the newest ``SLICE`` messages, a count past the budget estimated
from them (a word said 80,000 times has little to tell apart). Design: docs/postgres.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime

from psycopg import AsyncCursor
from psycopg.rows import DictRow

from memory.postgres.schema import accent_map
from memory.rules.search import query_terms

Cursor = AsyncCursor[DictRow]

K1, B = 1.2, 0.75  # FTS5's bm25 defaults
MIN_IDF = 1e-6  # FTS5's floor for a term in half the documents or more
DOC_BUDGET = 5000  # a term's rows scored over the whole history (SQLite's budget)
SLICE = 20_000  # the newest messages a more common term is scored over
LEXEMES = 32  # the words a common prefix stands for in that slice (alphabetical first)
# The upper end of the range of words a root stands for: a prefix runs to the next root;
# an exact root to itself plus U+0001, which no word holds (the parser splits there).
_EXACT_END = "\x01"
_FOLD = str.maketrans(*accent_map())  # the stored words' accent folding (companion_fold)


@dataclass(frozen=True)
class Spec:
    """One range of the search table scored for one query term: words in [low, high)
    said in messages with ids from ``floor`` on."""

    term: int
    low: str
    high: str
    floor: int


@dataclass(frozen=True)
class Totals:
    """The person's indexed documents and their mean length in words."""

    documents: int
    mean_length: float

    def idf(self, documents: float) -> float:
        """FTS5's inverse document frequency of a term in ``documents`` messages."""
        ratio = (self.documents - documents + 0.5) / (documents + 0.5)
        return max(MIN_IDF, math.log(ratio)) if ratio > 0 else MIN_IDF


def word_range(root: str, prefix: bool) -> tuple[str, str]:
    """The words [low, high) a query root stands for, in byte order ("C")."""
    if not prefix:
        return root, root + _EXACT_END
    return root, root[:-1] + chr(ord(root[-1]) + 1)


def word_ranges(text: str) -> list[tuple[str, str]]:
    """The query's word ranges, its roots cut and folded as the stored text was: accents
    folded, and split at underscores ("q4_budget_final" was stored as q4, budget, final),
    the last part keeping the root's prefix."""
    ranges: list[tuple[str, str]] = []
    for root, prefix in query_terms(text):
        parts = [part for part in root.translate(_FOLD).split("_") if part]
        for n, part in enumerate(parts):
            found = word_range(part, prefix and n == len(parts) - 1)
            if found not in ranges:
                ranges.append(found)
    return ranges


async def lexical(
    cursor: Cursor,
    text: str,
    ids: tuple[int, int],
    window: tuple[datetime, datetime] | None,
    *,
    newest_first: bool,
    limit: int,
) -> dict[int, float]:
    """Message id -> BM25 of the ``limit`` best user/assistant messages with ids in
    ``ids`` (and said inside ``window``) that hold a word of ``text``; with
    ``newest_first`` (a "last time I…" question) the newest of them, scored by recency."""
    ranges = word_ranges(text)
    if not ranges or ids[1] < ids[0]:
        return {}
    totals, counts = await _counts(cursor, ranges)
    rare = _rare(counts)
    specs = [Spec(n, *ranges[n], ids[0]) for n in rare]
    documents = {n: float(count) for n, count in enumerate(counts)}
    common = [n for n in range(len(ranges)) if n not in rare]
    if common:
        more, estimates = await _slice(cursor, ranges, common, ids, totals)
        specs += more
        documents |= {n: df for n, df in estimates.items() if counts[n] > DOC_BUDGET}
    useful = {n: totals.idf(df) for n, df in documents.items() if _useful(df, totals)}
    specs = [spec for spec in specs if spec.term in useful]
    if newest_first:
        return await _newest(cursor, specs, ids[1], window, limit)
    return await _scored(cursor, specs, useful, totals, ids[1], window, limit)


def _rare(counts: list[int]) -> list[int]:
    """The terms scored over the whole history: the rarest, together in at most
    DOC_BUDGET messages (the rest are scored over the newest slice)."""
    rare: list[int] = []
    spent = 0
    for n in sorted(range(len(counts)), key=lambda n: counts[n]):
        if spent + counts[n] > DOC_BUDGET:
            break
        rare.append(n)
        spent += counts[n]
    return rare


def _useful(documents: float, totals: Totals) -> bool:
    """A term in more than half the messages tells nothing apart (SQLite drops it too);
    a small history keeps every term."""
    return documents * 2 <= totals.documents or totals.documents < 2 * DOC_BUDGET


async def _counts(cursor: Cursor, ranges: list[tuple[str, str]]) -> tuple[Totals, list[int]]:
    """The person's totals, and each range's documents (its rows, counted up to
    DOC_BUDGET + 1: a message holding two words of a prefix counts twice)."""
    await cursor.execute(
        """SELECT (SELECT coalesce(sum(documents), 0) FROM message_term_totals) AS documents,
                  (SELECT coalesce(sum(tokens), 0) FROM message_term_totals) AS tokens,
                  ARRAY(SELECT (SELECT count(*) FROM (
                                    SELECT 1 FROM message_terms
                                    WHERE term >= r.low AND term < r.high LIMIT %s) t)
                        FROM unnest(%s::text[], %s::text[]) WITH ORDINALITY r (low, high, n)
                        ORDER BY r.n) AS counts""",
        (DOC_BUDGET + 1, [low for low, _ in ranges], [high for _, high in ranges]),
    )
    row = await cursor.fetchone()
    assert row is not None
    documents = int(row["documents"])
    mean = int(row["tokens"]) / documents if documents else 1.0
    return Totals(documents, max(mean, 1.0)), [int(count) for count in row["counts"]]


async def _slice(
    cursor: Cursor,
    ranges: list[tuple[str, str]],
    common: list[int],
    ids: tuple[int, int],
    totals: Totals,
) -> tuple[list[Spec], dict[int, float]]:
    """The common terms' words among the newest SLICE messages of ``ids`` (at most
    LEXEMES per prefix, each its own range of the index), and each term's documents
    estimated from its share of the slice."""
    await cursor.execute(
        """SELECT coalesce((SELECT id FROM messages WHERE id BETWEEN %s AND %s
                            ORDER BY id DESC OFFSET %s LIMIT 1), %s) AS floor""",
        (ids[0], ids[1], SLICE - 1, ids[0]),
    )
    row = await cursor.fetchone()
    floor = int(row["floor"]) if row else ids[0]
    await cursor.execute(
        """WITH RECURSIVE
           r (term, low, high) AS (SELECT * FROM unnest(%s::int[], %s::text[], %s::text[])),
           word (term, word, high, n) AS (
               SELECT r.term, (SELECT t.term FROM message_terms t
                               WHERE t.term >= r.low AND t.term < r.high
                               ORDER BY t.term LIMIT 1), r.high, 1 FROM r
               UNION ALL
               SELECT w.term, (SELECT t.term FROM message_terms t
                               WHERE t.term > w.word AND t.term < w.high
                               ORDER BY t.term LIMIT 1), w.high, w.n + 1
               FROM word w WHERE w.word IS NOT NULL AND w.n < %s)
           SELECT w.term, w.word, (SELECT count(*) FROM message_terms t
                                   WHERE t.term = w.word AND t.message_id BETWEEN %s AND %s)
                                  AS found
           FROM word w WHERE w.word IS NOT NULL""",
        (
            common,
            [ranges[n][0] for n in common],
            [ranges[n][1] for n in common],
            LEXEMES,
            floor,
            ids[1],
        ),
    )
    rows = await cursor.fetchall()
    specs = [
        Spec(int(r["term"]), r["word"], r["word"] + _EXACT_END, floor) for r in rows if r["found"]
    ]
    share = totals.documents / min(SLICE, max(totals.documents, 1))
    found = {n: 0.0 for n in common}
    for r in rows:
        found[int(r["term"])] += int(r["found"]) * share
    return specs, {n: max(found[n], DOC_BUDGET + 1.0) for n in common}


def _window_join(window: tuple[datetime, datetime] | None) -> tuple[str, list[object]]:
    """The join keeping a window's messages, and its parameters ('' without a window)."""
    if window is None:
        return "", []
    return (
        " JOIN messages m ON m.id = t.message_id AND m.created_at >= %s AND m.created_at < %s",
        list(window),
    )


def _spec_arrays(specs: list[Spec]) -> list[object]:
    return [
        [s.term for s in specs],
        [s.low for s in specs],
        [s.high for s in specs],
        [s.floor for s in specs],
    ]


async def _scored(
    cursor: Cursor,
    specs: list[Spec],
    weights: dict[int, float],
    totals: Totals,
    high: int,
    window: tuple[datetime, datetime] | None,
    limit: int,
) -> dict[int, float]:
    """BM25 of the best ``limit`` messages over ``specs``' rows: per term, its words'
    counts summed in a message (a prefix's words are one term, as in FTS5)."""
    if not specs:
        return {}
    join, window_params = _window_join(window)
    await cursor.execute(
        f"""SELECT id, sum(w.idf * f * {K1 + 1}::float8
                           / (f + {K1}::float8 * ({1 - B}::float8 + {B}::float8 * length / %s)))
                       AS score
            FROM (SELECT t.message_id AS id, s.term, sum(t.frequency)::float8 AS f,
                         max(t.length)::float8 AS length
                  FROM unnest(%s::int[], %s::text[], %s::text[], %s::bigint[])
                           AS s (term, low, high, floor)
                  CROSS JOIN LATERAL (
                      SELECT t.message_id, t.frequency, t.length FROM message_terms t{join}
                      WHERE t.term >= s.low AND t.term < s.high
                        AND t.message_id BETWEEN s.floor AND %s) t
                  GROUP BY t.message_id, s.term) hit
            JOIN unnest(%s::int[], %s::float8[]) AS w (term, idf) ON w.term = hit.term
            GROUP BY id ORDER BY score DESC, id DESC LIMIT %s""",
        [
            totals.mean_length,
            *_spec_arrays(specs),
            *window_params,
            high,
            list(weights),
            list(weights.values()),
            limit,
        ],
    )
    return {int(row["id"]): float(row["score"]) for row in await cursor.fetchall()}


async def _newest(
    cursor: Cursor,
    specs: list[Spec],
    high: int,
    window: tuple[datetime, datetime] | None,
    limit: int,
) -> dict[int, float]:
    """The newest ``limit`` messages holding a word of ``specs``, scored by recency."""
    if not specs:
        return {}
    join, window_params = _window_join(window)
    await cursor.execute(
        f"""SELECT DISTINCT t.message_id AS id
            FROM unnest(%s::int[], %s::text[], %s::text[], %s::bigint[])
                     AS s (term, low, high, floor)
            CROSS JOIN LATERAL (
                SELECT t.message_id FROM message_terms t{join}
                WHERE t.term >= s.low AND t.term < s.high AND t.message_id BETWEEN s.floor AND %s
                ORDER BY t.message_id DESC LIMIT %s) t
            ORDER BY id DESC LIMIT %s""",
        [*_spec_arrays(specs), *window_params, high, limit, limit],
    )
    rows = await cursor.fetchall()
    return {int(row["id"]): 1.0 - n / len(rows) for n, row in enumerate(rows)}
