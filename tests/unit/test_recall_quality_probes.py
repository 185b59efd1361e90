"""bench.recall_quality's store-search probes fit their history: every expected line is
seeded, keys are unique, and each language has enough probes to mean something."""

from __future__ import annotations

from bench.recall_quality import HISTORY, NOW, PROBES, line_keys


def test_every_expected_line_is_in_the_history() -> None:
    keys = line_keys()
    missing = [(p.query, key) for p in PROBES for key in p.expected if key not in keys]
    assert missing == []


def test_each_language_has_at_least_twenty_probes() -> None:
    for language in ("en", "id"):
        assert sum(p.language == language for p in PROBES) >= 20


def test_the_history_is_in_the_past_and_queries_are_unique() -> None:
    assert all(chat.start < NOW for chat in HISTORY)
    assert len({p.query for p in PROBES}) == len(PROBES)
