"""A reply caught in a loop: the bundled small model can say the same sentence, line or
word over and over until its token cap (512 tokens, about 12 s on two cores, in most short
chats). ``call_model`` ends such a stream as soon as it loops and keeps the reply up to
where the repeating began (``loop_start``):

- a sentence or a whole line said a second time (``TIMES``) word for word: a small model
  that says it again is not saying anything new. A line counts because a line of short
  sentences ("I'm sorry. It's not a word.") comes back as a line. Only those of at least
  ``MIN_LETTERS`` letters count (a short "Yes." or a list's "-" may well come back),
  compared without case, spacing or punctuation;
- one to ``RUN_WORDS`` words said ``RUN_TIMES`` times on end ("no no no …", "* * * …"),
  with no end mark in sight.
"""

from __future__ import annotations

import re

TIMES = 2  # the second time a sentence is said ends the stream
MIN_LETTERS = 12
# A sentence: text up to its end mark or the end of its line (a list item is one). A line.
SENTENCE = re.compile(r"[^.!?\n]+[.!?\n]+")
LINE = re.compile(r"[^\n]+\n")
ENDS = frozenset(".!?\n")
# Words in a row: a run of 1 to RUN_WORDS words said RUN_TIMES times on end, looked for
# in the reply's last TAIL characters (a run is found as it reaches RUN_TIMES).
WORD = re.compile(r"\S+")  # a word, or a mark standing alone ("* * * *")
RUN_WORDS = 4
RUN_TIMES = 8
TAIL = 400


def loop_start(text: str, delta: str) -> int | None:
    """Where ``text`` (the reply so far, ``delta`` its newest piece) began to loop, if it
    does: words said over and over, or a sentence or a line said again."""
    found = run_from(text)
    if found is None and may_end_sentence(delta):
        found = repeated_from(text)
    return found


def repeated_from(text: str) -> int | None:
    """Where ``text`` begins to repeat itself, when a sentence in it has been said
    ``TIMES`` times: the start of the second time the earliest repeated sentence was said
    (a loop of several sentences is cut after its first round). None otherwise."""
    seen: dict[tuple[str, str], list[int]] = {}
    looping = False
    for unit in (SENTENCE, LINE):
        for found in unit.finditer(text):
            key = _key(found.group())
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


def run_from(text: str) -> int | None:
    """Where a run of the same one to ``RUN_WORDS`` words, said ``RUN_TIMES`` times on end,
    ends the reply: the start of its second time (the reply keeps the first). None when
    the reply's last complete words are not such a run."""
    complete = text[: max(text.rfind(" "), text.rfind("\n")) + 1]  # a word may be half out
    found = WORD.finditer(complete, len(complete) - TAIL)
    words = [(m.start(), _key(m.group()) or m.group()) for m in found]
    if len(complete) > TAIL:
        words = words[1:]  # the first may be cut by the window
    for size in range(1, RUN_WORDS + 1):
        need = size * RUN_TIMES
        if len(words) < need:
            break
        tail = words[-need:]
        if all(tail[n][1] == tail[n - size][1] for n in range(size, need)):
            first = len(words) - need
            while first > 0 and words[first - 1][1] == words[first - 1 + size][1]:
                first -= 1
            return words[first + size][0]
    return None


def _key(text: str) -> str:
    """``text`` as compared: its letters and digits, lower case."""
    return "".join(c for c in text.lower() if c.isalnum())
