"""Searching across chats (``AsyncStore.search_chats``), the same on both backends: which
titles match, the line shown for a matching message, and the order of the results; and
the ratings a person may give an answer (``checked_rating``).

A title matches when it holds every word of the query (case and accents ignored, a word
as the start of one of the title's words, so "band" finds "Trip to Bandung"). Messages
come from the backend's full-text search (stemmed, the longer roots as prefixes:
``memory.rules.search.query_terms``); each shows the line around its first matching
word, at most ``SNIPPET`` characters, as plain text.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable

from memory.errors import StoreError
from memory.rules.search import query_terms
from memory.types import ChatHit, Message, Session

SNIPPET = 160  # characters of a message shown around its match
RATINGS = (1, -1)  # 👍, 👎
MAX_COMMENT = 2000  # characters of a rating's comment kept
_WORD = re.compile(r"\w+")


def fold(text: str) -> str:
    """Lowercase, accents dropped: how a title and a query are compared."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(char for char in decomposed if not unicodedata.combining(char))


def title_matches(title: str, query: str) -> bool:
    """True when every word of ``query`` starts one of the title's words."""
    wanted = _WORD.findall(fold(query))
    words = _WORD.findall(fold(title))
    return bool(wanted) and all(any(w.startswith(q) for w in words) for q in wanted)


def _first_match(text: str, query: str) -> int:
    """Where the first word of ``text`` that a query root starts is (0 when none)."""
    roots = [root for root, _ in query_terms(query)] or _WORD.findall(fold(query))
    folded = fold(text)
    if len(folded) != len(text):  # a letter whose folding changes the length
        folded = text.lower()
    for found in _WORD.finditer(folded):
        if any(found.group().startswith(root) for root in roots):
            return found.start()
    return 0


def snippet(text: str, query: str, limit: int = SNIPPET) -> str:
    """The line of ``text`` around its first match, whitespace collapsed, at most
    ``limit`` characters with an ellipsis where it was cut."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    at = _first_match(flat, query)
    start = max(0, min(at - limit // 3, len(flat) - limit))
    if start:  # begin at a word
        space = flat.find(" ", start)
        start = space + 1 if 0 <= space < at else start
    shown = flat[start : start + limit - 2 * bool(start)].rstrip()
    head = "…" if start else ""
    tail = "…" if start + len(shown) < len(flat) else ""
    return f"{head}{shown[: limit - len(head) - len(tail)]}{tail}"


def chat_hits(
    query: str,
    sessions: Iterable[Session],
    messages: Iterable[Message],
    limit: int,
) -> list[ChatHit]:
    """The results of a search: titles that match (most recently active first), then
    the matching messages in the order the full-text search ranked them, ``limit`` in
    all. ``sessions`` are the person's (a message of a chat not among them is skipped)."""
    chats = list(sessions)
    titles = {session.id: session.title for session in chats}
    hits = [
        ChatHit(session.id, session.title, None, None, session.title, session.active_at)
        for session in chats
        if title_matches(session.title, query)
    ]
    for message in messages:
        if message.session_id in titles and message.role in ("user", "assistant"):
            title, line = titles[message.session_id], snippet(message.content, query)
            found = (message.id, message.role, line, message.created_at)
            hits.append(ChatHit(message.session_id, title, *found))
    return hits[:limit]


def checked_rating(rating: int | None, comment: str) -> tuple[int | None, str]:
    """A rating the store keeps (1, -1 or None) and its comment, trimmed and capped."""
    if rating is not None and rating not in RATINGS:
        raise StoreError(f"a rating is 1 or -1, not {rating!r}")
    return rating, comment.strip()[:MAX_COMMENT]


def feedback_query(session_id: str | None, mark: str) -> tuple[str, tuple[str, ...]]:
    """``feedback``'s SELECT and its parameters on a backend whose placeholder is
    ``mark``: the ratings of ``session_id`` (None: every session's), newest first."""
    sql = """SELECT f.message_id, m.session_id, f.rating, f.comment, f.created_at
             FROM answer_feedback f JOIN messages m ON m.id = f.message_id"""
    where = f" WHERE m.session_id = {mark}" if session_id is not None else ""
    params = (session_id,) if session_id is not None else ()
    return sql + where + " ORDER BY f.created_at DESC, f.message_id DESC", params


def version(newest: int | None, count: int | None, chats: str | None, turns: str | None) -> str:
    """``chat_version``'s token: the newest message's id, the chat's message count and a
    digest of every chat's id, pin and title and of the chat's running turns (their ids:
    a turn another process starts or ends moves the token even when no message does, as
    a retry, whose user message is stored already)."""
    seen = f"{chats or ''}\0{turns or ''}"
    digest = hashlib.blake2b(seen.encode(), digest_size=8).hexdigest()
    return f"{newest or 0}.{count or 0}.{digest}"
