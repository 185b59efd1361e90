"""Questions whose time is another event's: "what did I do the week after the dentist
visit?", "aku ngapain seminggu setelah jual mobil?".

``anchored`` splits such a question into the event it names (found first, as any turn
is) and the span around that event's time to search: the day, week or month after (or
before) it. Pure: no I/O; memory.sqlite.recall (and Postgres's) run the two searches.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import timedelta

SPANS = {
    "day": timedelta(days=1),
    "week": timedelta(days=7),
    "month": timedelta(days=31),
    "hari": timedelta(days=1),
    "minggu": timedelta(days=7),
    "pekan": timedelta(days=7),
    "bulan": timedelta(days=31),
}
SLACK = timedelta(days=1)  # a week after Monday's event still holds next Monday's chat
_EN = re.compile(
    r"\b(?:the\s+|a\s+)?(day|week|month)\s+(after|before)\s+(.{3,200}?)\s*[?.!]*\s*$",
    re.IGNORECASE,
)
_ID = re.compile(
    r"\b(?:se)?(hari|minggu|pekan|bulan)\s+(setelah|sesudah|sebelum|habis)\s+"
    r"(.{3,200}?)\s*[?.!]*\s*$",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Anchor:
    """The event a question's time hangs on, and where its span lies from that event."""

    event: str  # the words naming the event ("the dentist visit")
    rest: str  # the question without them ("What did I do")
    start: timedelta  # the span, from the event's time
    end: timedelta


def anchored(query: str) -> Anchor | None:
    """The event and span of a question timed by another event, or None."""
    text = query[:400]
    found = _EN.search(text) or _ID.search(text)
    if found is None:
        return None
    unit, side, event = found.group(1).lower(), found.group(2).lower(), found.group(3)
    span = SPANS[unit]
    rest = text[: found.start()].strip()
    if side == "before" or side == "sebelum":
        return Anchor(event, rest, -span - SLACK, -timedelta(hours=12))
    return Anchor(event, rest, timedelta(hours=12), span + SLACK)
