"""Word-level text helpers shared by memory search, message search and segment summaries.

Queries arrive as chat sentences ("What did I cook last Thursday?", "aku masak apa
kemarin?"); only their content words should reach keyword matching. Stop words (English
and Indonesian) and time words are dropped here, because time is handled by
memory.rules.temporal as a window rather than as a keyword.
"""

from __future__ import annotations

import re

WORD = re.compile(r"\w+", re.UNICODE)


def word_set(text: str) -> frozenset[str]:
    """A set of whitespace-separated words (keeps long word lists readable)."""
    return frozenset(text.split())


STOP_WORDS = word_set(
    """
    a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing done down during each few
    for from further had has have having he her here hers herself him himself his how i if
    in into is it its itself just me more most my myself no nor not now of off on once only
    or other our ours ourselves out over own same she should so some such than that the
    their theirs them themselves then there these they this those through to too under
    until up very was we were what when where which while who whom why will with would you
    your yours yourself yourselves tell remember recall know said say says told talk talked
    ask asked please thing things something anything ever again also still really let lets
    s t d ll m re ve okay ok hey hi hello

    aku saya kamu anda dia kita kami mereka ini itu yang dan atau di ke dari pada untuk
    dengan adalah apa apakah siapa kapan mana dimana bagaimana gimana kenapa mengapa berapa
    tidak tak nggak gak enggak ga bukan sudah udah belum akan bisa boleh mau ingin jadi juga
    saja aja lagi sih dong deh kok kah lah pun nya ada ya yah oh kan tuh nih sama tentang
    soal karena kalau kalo jika bahwa seperti tolong ingat inget ingatkan bilang cerita
    ngomong bicara tanya
    """
)

# Words that only carry time; memory.rules.temporal turns them into a window.
TIME_WORDS = word_set(
    """
    today yesterday tomorrow tonight morning afternoon evening night day days week weeks
    month months year years ago last past previous earlier recently lately before time
    times monday tuesday wednesday thursday friday saturday sunday this that the other
    back then when

    hari ini kemarin kemarinnya lusa besok tadi pagi siang sore malam semalam minggu pekan
    bulan tahun lalu yang kemarin terakhir waktu pas saat dulu baru senin selasa rabu kamis
    jumat jum sabtu ahad beberapa sebelumnya
    """
)

NUMBER_WORDS = word_set(
    "one two three four five six seven eight nine ten satu dua tiga empat lima enam "
    "tujuh delapan sembilan sepuluh"
)


def words(text: str) -> list[str]:
    """Lower-cased word tokens (letters, digits, underscore; any script)."""
    return WORD.findall(text.lower())


def content_words(text: str, *, drop_time_words: bool = True) -> list[str]:
    """The words of ``text`` worth matching on, in order, without duplicates."""
    dropped = STOP_WORDS | TIME_WORDS | NUMBER_WORDS if drop_time_words else STOP_WORDS
    seen: dict[str, None] = {}
    for word in words(text):
        if word in dropped or (len(word) < 2 and not word.isdigit()):
            continue
        seen.setdefault(word, None)
    return list(seen)


def stem(word: str) -> str:
    """A light English suffix strip, so "cooked"/"cooking" meet "cook" in prefix matches."""
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) - len(suffix) >= 4 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word
