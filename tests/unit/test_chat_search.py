"""The rules of the search across chats: which titles match and the line shown."""

from __future__ import annotations

import pytest

from memory import StoreError
from memory.rules.chat_search import SNIPPET, checked_rating, snippet, title_matches


@pytest.mark.parametrize(
    ("title", "query", "matches"),
    [
        ("Trip to Bandung", "band", True),
        ("Trip to Bandung", "bandung TRIP", True),
        ("Trip to Bandung", "bali", False),
        ("Trip to Bandung", "andung", False),  # a word's start, not any substring
        ("Café crème", "cafe creme", True),
        ("Anything", "  ", False),
    ],
)
def test_a_title_matches_when_every_word_starts_one_of_its_words(
    title: str, query: str, matches: bool
) -> None:
    assert title_matches(title, query) is matches


def test_the_line_shown_is_around_the_match_and_never_longer_than_the_limit() -> None:
    text = "Filler words here. " * 30 + "Mochi hides whenever I vacuum.\n\n" + "Later. " * 40
    line = snippet(text, "vacuum")
    assert "vacuum" in line and len(line) <= SNIPPET
    assert line.startswith("…") and line.endswith("…") and "\n" not in line
    assert snippet("short  text\nhere", "text") == "short text here"
    start = snippet("vacuum " + "x " * 200, "vacuum")
    assert start.startswith("vacuum") and start.endswith("…") and len(start) <= SNIPPET


def test_a_rating_is_one_or_minus_one_with_a_trimmed_comment() -> None:
    assert checked_rating(-1, "  wrong tool  ") == (-1, "wrong tool")
    assert checked_rating(None, "") == (None, "")
    assert len(checked_rating(1, "x" * 5000)[1]) == 2000
    with pytest.raises(StoreError, match="1 or -1"):
        checked_rating(0, "")
