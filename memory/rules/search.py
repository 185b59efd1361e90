"""Search."""

from __future__ import annotations

from memory.rules.text import content_words, stem

TOP = 20
MAX_QUERY_TERMS = 16
SEARCH_ROLES = ("user", "assistant")
MAX_ID = 2**62


def query_terms(text: str) -> list[tuple[str, bool]]:
    """The search terms of free text: (stemmed root, match it as a prefix), at most 16.

    Roots are word characters only, so a quote or an operator can never appear inside
    one; roots of four letters or more match as prefixes ("cooked" -> cook* meets
    "cooking"). Both backends build their query from these.
    """
    terms: list[tuple[str, bool]] = []
    for word in content_words(text):
        root = stem(word)
        term = (root, len(root) >= 4)
        if term not in terms:
            terms.append(term)
    return terms[:MAX_QUERY_TERMS]


SEMANTIC_LIMIT = 5
SEGMENT_LIMIT = 3
