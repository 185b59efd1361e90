"""Live tabs: every open page shows what changed elsewhere (issue 25, item 3).

A page polls the store's ``chat_version`` every ``WATCH_SECONDS`` (a ``gr.Timer``): a
token that moves whenever a message is added or deleted, or a chat is made, renamed,
pinned or deleted, by another tab or another app process on the same database. When it
moves, the page shows the chat list and the chat again from the store, then follows the
turn running in it, if any (the same follow a reload does). A page that is following a
turn already (``Pages.busy``) is left alone: its stream shows the turn, and it ends on
the stored chat. A token the page was shown already (``Pages.seen``: its load, the end
of its own turn) shows nothing again: the first tick after a load, or after an answer,
would otherwise send the whole chat and the list once more, a second after they came.
A token that moved for another chat (a message there, a title) shows the list only: a
chat or a list is sent only when it differs from what the page was last shown of it
(``Pages.fresh``). Sending the same chat again redraws every bubble, and a click made
then (Edit's Submit, a Retry) is lost with the button it landed on (CI, once).
Why polling the store: it is the one path that sees other processes too (docs/turns.md);
one indexed read a second per open page.

The same tick checks that the page shows the chat its session names as it is stored
(``shown_mark``: how many messages the person wrote there, the first one's first letters
and the last bubble's last ones). Gradio's page
applies each event's updates in a loop of its own, so the last chunks of a stream it is
still drawing can land after the next chat was shown (New chat just after an answer,
quick clicks in the list, a follow cancelled while the page still drew it), and the
server cannot order them. A page showing another chat
than its own is shown the stored one again within a tick; a page not following the turn
running in its chat (a quick switch cancelled its follow) is made to follow it.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TypeVar

WATCH_SECONDS = 1.0
MARK_CHARS = 24  # letters and digits of the first message, in the mark
MARK_LIMIT = 2 * MARK_CHARS + 16  # a page's mark is cut to this before it is used
MARKS_KEPT = 256  # stored chats' marks kept (per chat and version)
PAGES_KEPT = 1024  # open pages whose last shown token is kept
STALE = "stale"  # in the token while a page shows another chat than its own
UNFOLLOWED = "unfollowed"  # in the token while a page does not follow its chat's turn

K = TypeVar("K")
V = TypeVar("V")


def keep_newest(kept: dict[K, V], key: K, value: V, limit: int = PAGES_KEPT) -> None:
    """``kept[key] = value``, ``key`` now the newest (a dict keeps its keys in the order
    they came); the oldest beyond ``limit`` are dropped. What the app keeps per open page
    (or per chat) is bounded this way: a page that is closed never says so."""
    kept.pop(key, None)
    kept[key] = value
    while len(kept) > limit:
        kept.pop(next(iter(kept)))


# The tick's page side: the mark of the chat on screen, from its bubbles (the chat's value
# is not an input: it would be sent each second, and an input's status redrawn).
SHOWN_JS = (
    "(session) => {"
    " const letters = (bubble) => Array.from(bubble ? bubble.innerText.toLowerCase() : '')"
    "   .filter((c) => /[\\p{L}\\p{N}]/u.test(c)).join('');"
    " const asked = document.querySelectorAll('#chatbot [data-testid=\"user\"]');"
    " const all = document.querySelectorAll("
    '   \'#chatbot [data-testid="user"], #chatbot [data-testid="bot"]\');'
    f" const first = letters(asked[0]).slice(0, {MARK_CHARS});"
    f" const last = letters(all[all.length - 1]).slice(-{MARK_CHARS});"
    " return [session, asked.length + ':' + first + ':' + last];"
    " }"
)


def redraws(token: str | None) -> bool:
    """Whether a page's token (``ChatHandlers.on_watch``) says it shows another chat than
    its own or does not follow its chat's turn: its second word. Only the first two words
    of the page's input are read."""
    return (token or "").split(" ", 2)[1:2] in ([STALE], [UNFOLLOWED])


def shown_mark(asked: Sequence[str], last: str) -> str:
    """The mark of a chat whose person's messages are ``asked`` and whose last bubble's
    text is ``last``, as ``SHOWN_JS`` makes it of the bubbles on screen: how many messages
    the person wrote, the first one's first letters and digits, the last bubble's last
    ones (a bubble shows its text rendered as Markdown, whose other characters differ)."""

    def letters(text: str) -> str:
        return "".join(c for c in text.lower() if c.isalnum())

    first = letters(asked[0])[:MARK_CHARS] if asked else ""
    return f"{len(asked)}:{first}:{letters(last)[-MARK_CHARS:]}"


class Pages:
    """Which pages (Gradio's ``session_hash``, one per open tab) follow a turn now, and
    the token (``chat_version``) of what each page was last shown from the store."""

    def __init__(self) -> None:
        self._following: Counter[str] = Counter()
        self._seen: dict[str, str] = {}
        self._shown: dict[tuple[str, str], bytes] = {}

    def saw(self, page: str, version: str) -> None:
        """``page`` was shown the stored chats as of ``version`` (a load, the end of its
        own turn, a change shown): a tick that finds that token shows nothing again."""
        keep_newest(self._seen, page, version)

    def seen(self, page: str) -> str | None:
        """The token ``page`` was last shown as, if known."""
        return self._seen.get(page)

    def showed(self, page: str, part: str, value: object) -> None:
        """``page`` is shown ``value`` as its ``part`` ("chat": the session and its
        bubbles, "list": the rows)."""
        self.fresh(page, part, value)

    def fresh(self, page: str, part: str, value: object) -> bool:
        """True unless ``value`` is what ``page`` was last shown as its ``part``; either
        way ``value`` counts as shown now (``showed``)."""
        key, digest = (page, part), hashlib.blake2b(repr(value).encode(), digest_size=16).digest()
        if self._shown.get(key) == digest:
            return False
        keep_newest(self._shown, key, digest, 2 * PAGES_KEPT)
        return True

    @contextmanager
    def following(self, page: str) -> Iterator[None]:
        """While the block runs, ``page`` is following a turn (a stream that is
        cancelled, by a switch of chat or a closed tab, ends it too)."""
        self._following[page] += 1
        try:
            yield
        finally:
            self._following[page] -= 1
            if self._following[page] <= 0:
                del self._following[page]

    def busy(self, page: str) -> bool:
        """True while ``page`` follows a turn."""
        return self._following[page] > 0
