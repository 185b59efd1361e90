"""Who said it: which speaker a question asks about, and which neighbours a turn needs.

"what did I say about…", "my cat", the user's own name: the user's turns; "what did
you recommend", "your advice": the companion's. Both or neither: no preference. It is a
boost in ranking (memory.rules.fusion), never a filter. A turn's neighbour is shown when
it makes the turn readable: a short reply ("yes, the blue one") with what it answered,
a question with its answer; an acknowledgement beside a statement is left out (it would
only spend the budget). Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from memory.rules.text import WORD, word_set

Speaker = Literal["user", "assistant"]

FIRST_PERSON = word_set("i me my mine myself im aku saya gue gw")
SECOND_PERSON = word_set("you your yours yourself kamu anda kau lu lo")
REPLY_WORDS = 5  # a turn of this few words reads as a reply: it needs the turn it answers
REPLY_OPENERS = word_set(
    "yes yeah yep yup no nope nah ok okay sure right exactly that this it the both neither "
    "ya iya iyaa yoi nggak gak enggak tidak bukan betul benar oke sip boleh itu yang"
)


def preferred_speaker(query: str, names: Iterable[str] = ()) -> Speaker | None:
    """The speaker the question names ("I"/"my"/the user's name: user; "you": assistant)."""
    words = {word.lower() for word in WORD.findall(query)}
    named = {part.lower() for name in names for part in WORD.findall(name)}
    user = bool(words & FIRST_PERSON or words & named)
    assistant = bool(words & SECOND_PERSON)
    if user == assistant:
        return None
    return "user" if user else "assistant"


def is_reply(text: str) -> bool:
    """A turn that means little alone: a few words, or a short line opening as an answer
    does ("yes, the blue one", "iya yang merah")."""
    words = WORD.findall(text.lower())
    return len(words) <= REPLY_WORDS or (
        len(words) <= 2 * REPLY_WORDS and words[0] in REPLY_OPENERS
    )


def wants_before(hit: str, before: str) -> bool:
    """Show ``before``, the turn before ``hit``: the hit is a reply, which needs what it
    answers (and ``before`` says something)."""
    return is_reply(hit) and bool(before.strip())


def wants_after(hit: str, after: str) -> bool:
    """Show ``after``, the turn after ``hit``: the hit is a question, whose answer is the
    point (and ``after`` says something)."""
    return hit.rstrip().endswith("?") and bool(after.strip())
