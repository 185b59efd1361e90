"""Who said it: which speaker a question asks about, and which neighbours a turn needs.

"what did I say about…", "my cat", the user's own name: the user's turns; "what did
you recommend", "your advice": the companion's. Both or neither: no preference. It is a
boost in ranking (memory.rules.fusion), never a filter. A turn's neighbour is shown when
it makes the turn readable: a short reply ("yes, the blue one") with what it answered,
a question with its short answer. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from memory.rules.text import WORD, word_set

Speaker = Literal["user", "assistant"]

FIRST_PERSON = word_set("i me my mine myself im aku saya gue gw")
SECOND_PERSON = word_set("you your yours yourself kamu anda kau lu lo")
REPLY_CHARS = 80  # a turn this short reads as a reply: it needs the turn it answers


def preferred_speaker(query: str, names: Iterable[str] = ()) -> Speaker | None:
    """The speaker the question names ("I"/"my"/the user's name: user; "you": assistant)."""
    words = {word.lower() for word in WORD.findall(query)}
    named = {part.lower() for name in names for part in WORD.findall(name)}
    user = bool(words & FIRST_PERSON or words & named)
    assistant = bool(words & SECOND_PERSON)
    if user == assistant:
        return None
    return "user" if user else "assistant"


def wants_before(hit: str, before: str) -> bool:
    """Show the turn before ``hit``: the hit is a short reply, or the turn is short."""
    return len(hit.strip()) <= REPLY_CHARS or len(before.strip()) <= REPLY_CHARS


def wants_after(hit: str, after: str) -> bool:
    """Show the turn after ``hit``: the hit is a question, or the turn is a short reply."""
    return hit.rstrip().endswith("?") or len(after.strip()) <= REPLY_CHARS
