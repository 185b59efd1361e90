"""The naive LIKE-scan baseline that ``bench.recall`` compares memory search against.

The same job as ``memory.retrieval.search_messages`` without an index: every message
scanned with ``LIKE '%word%'``, ranked by how many query words it contains, newest first.
It is a yardstick, never a search the product runs, so it lives with the test support.
"""

from __future__ import annotations

from memory import Message
from memory.rules.search import MAX_QUERY_TERMS, TOP
from memory.rules.text import content_words
from memory.sqlite.store import SqliteStore, _message

ROLES_SQL = "m.role IN ('user', 'assistant')"  # the roles memory search reads


def naive_search(
    store: SqliteStore, query: str, *, session_id: str | None = None, limit: int = TOP
) -> list[Message]:
    """Messages holding any of the query's words, by word count then newest first."""
    terms = content_words(query)[:MAX_QUERY_TERMS]
    if not terms:
        return []
    like = "m.content LIKE ? ESCAPE '\\'"
    hits = " + ".join(f"({like})" for _ in terms)
    likes = " OR ".join(like for _ in terms)
    sql = f"SELECT m.* FROM messages m WHERE {ROLES_SQL} AND ({likes})"
    patterns = [f"%{escape_like(term)}%" for term in terms]
    params: list[object] = list(patterns)
    if session_id is not None:
        sql += " AND m.session_id = ?"
        params.append(session_id)
    sql += f" ORDER BY {hits} DESC, m.id DESC LIMIT ?"
    params += [*patterns, limit]
    return [_message(row) for row in store.conn.execute(sql, params).fetchall()]


def escape_like(term: str) -> str:
    """The term with LIKE's wildcards (and the escape character) taken literally."""
    return term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
