"""Live tabs: every open page shows what changed elsewhere (issue 25, item 3).

A page polls the store's ``chat_version`` every ``WATCH_SECONDS`` (a ``gr.Timer``): a
token that moves whenever a message is added or deleted, or a chat is made, renamed,
pinned or deleted, by another tab or another app process on the same database. When it
moves, the page shows the chat list and the chat again from the store, then follows the
turn running in it, if any (the same follow a reload does). A page that is following a
turn already (``Pages.busy``) is left alone: its stream shows the turn, and it ends on
the stored chat. Why polling the store: it is the one path that sees other processes too
(docs/turns.md); one indexed read a second per open page.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

WATCH_SECONDS = 1.0


class Pages:
    """Which pages (Gradio's ``session_hash``, one per open tab) follow a turn now."""

    def __init__(self) -> None:
        self._following: Counter[str] = Counter()

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
