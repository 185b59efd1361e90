"""A tab's queue stream stays open while the tab holds it, so no sent message is lost.

Gradio's page gets every event's results over one stream per tab
(``/gradio_api/queue/data``), which the server closes when the tab's last pending event
completes. A message sent in that instant is lost: its join is answered after the server
chose to close, the page still counts the stream as open and opens no other, and the
message stays in the composer with nothing said (seen under load: the send's join
answered 0.6 s after the close). ``OpenQueueStreams`` counts a pending event of its own
for each tab while the tab's stream is connected, so the server never closes it for
want of events; the tab's leaving (the connection closing) ends it as before.
"""

from __future__ import annotations

from collections import Counter
from typing import Any
from urllib.parse import parse_qs

from starlette.types import ASGIApp, Receive, Scope, Send

QUEUE_STREAM = "/gradio_api/queue/data"
HELD = "companion:stream-held"  # never a real event id (Gradio's are uuid4 hex)


class OpenQueueStreams:
    """ASGI middleware over a Gradio app: ``blocks`` is the launched ``gr.Blocks``."""

    def __init__(self, app: ASGIApp, blocks: Any) -> None:
        self.app = app
        self.blocks = blocks
        self.streams: Counter[str] = Counter()  # a tab may reconnect before the old one ends

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        session = _session(scope) if scope["type"] == "http" else None
        if session is None or scope["path"] != QUEUE_STREAM:
            await self.app(scope, receive, send)
            return
        pending = self.blocks._queue.pending_event_ids_session
        self.streams[session] += 1
        pending.setdefault(session, set()).add(HELD)
        try:
            await self.app(scope, receive, send)
        finally:
            self.streams[session] -= 1
            if self.streams[session] <= 0:
                del self.streams[session]
                ids = pending.get(session)
                if ids is not None:
                    ids.discard(HELD)
                    if not ids:
                        pending.pop(session, None)


def _session(scope: Scope) -> str | None:
    values = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("session_hash")
    return values[0] if values else None
