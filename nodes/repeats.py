"""A reply caught in a loop: the bundled small model can say the same sentence over and
over until its token cap (512 tokens, about 10 s on two cores, in about half of short
chats). ``call_model`` ends such a stream once a sentence has been said ``TIMES`` times
and keeps the reply up to where the repeating began.

What repeats is a sentence or a whole line (a line of short sentences, "I'm sorry. It's
not a word.", comes back as a line). Only those of at least ``MIN_LETTERS`` letters count
(a short "Yes." or a list's "-" may well come back), compared without case, spacing or
punctuation.
"""

from __future__ import annotations

import re

TIMES = 3  # the third time a sentence is said ends the stream
MIN_LETTERS = 12
# A sentence: text up to its end mark or the end of its line (a list item is one). A line.
SENTENCE = re.compile(r"[^.!?\n]+[.!?\n]+")
LINE = re.compile(r"[^\n]+\n")
ENDS = frozenset(".!?\n")


def repeated_from(text: str) -> int | None:
    """Where ``text`` begins to repeat itself, when a sentence in it has been said
    ``TIMES`` times: the start of the second time the earliest repeated sentence was said
    (a loop of several sentences is cut after its first round). None otherwise."""
    seen: dict[tuple[str, str], list[int]] = {}
    looping = False
    for unit in (SENTENCE, LINE):
        for found in unit.finditer(text):
            key = "".join(c for c in found.group().lower() if c.isalnum())
            if len(key) < MIN_LETTERS:
                continue
            starts = seen.setdefault((unit.pattern, key), [])
            starts.append(found.start() + len(found.group()) - len(found.group().lstrip()))
            looping = looping or len(starts) >= TIMES
    if not looping:
        return None
    return min(starts[1] for starts in seen.values() if len(starts) > 1)


def may_end_sentence(delta: str) -> bool:
    """Whether a streamed piece of text may have ended a sentence (only then is the whole
    reply looked at again)."""
    return any(c in ENDS for c in delta)
