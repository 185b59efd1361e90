"""memory.rules.anchors: a question timed by another event, in English and Indonesian."""

from __future__ import annotations

from datetime import timedelta

import pytest

from memory.rules.anchors import SLACK, anchored

WEEK = timedelta(days=7)


@pytest.mark.parametrize(
    ("query", "event", "rest", "span"),
    [
        (
            "What did I do the week after the dentist visit?",
            "the dentist visit",
            "What did I do",
            (timedelta(hours=12), WEEK + SLACK),
        ),
        (
            "Aku ngapain seminggu setelah jual mobil?",
            "jual mobil",
            "Aku ngapain",
            (timedelta(hours=12), WEEK + SLACK),
        ),
        (
            "what did I eat the day before my birthday",
            "my birthday",
            "what did I eat",
            (-timedelta(days=1) - SLACK, -timedelta(hours=12)),
        ),
    ],
)
def test_the_event_and_the_span_around_it(
    query: str, event: str, rest: str, span: tuple[timedelta, timedelta]
) -> None:
    found = anchored(query)
    assert found is not None
    assert (found.event, found.rest, (found.start, found.end)) == (event, rest, span)


@pytest.mark.parametrize("query", ["what did I do last week", "hello", "after", "x" * 10_000])
def test_other_questions_have_no_anchor(query: str) -> None:
    assert anchored(query) is None
