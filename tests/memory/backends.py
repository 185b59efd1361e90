"""Helpers of the store's contract tests: a ticking clock, fresh people, and segments cut
the same way on both backends (through ``AsyncStore.refresh_segments``)."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta

from memory import AsyncStore, Memory, Message, Segment
from tests.conftest import FIXED_NOW

_people = itertools.count()


def ticking() -> Callable[[], datetime]:
    """A clock a second further on at every reading, from FIXED_NOW."""
    ticks = itertools.count()
    return lambda: FIXED_NOW + timedelta(seconds=next(ticks))


def new_person() -> str:
    return f"person-{next(_people)}"


async def summarise(messages: list[Message]) -> str:
    """A scripted summariser: the span's words in order."""
    return " / ".join(message.content for message in messages)


async def cut_segments(store: AsyncStore, session_id: str) -> None:
    """Cut the session's unsegmented messages into segments summarised by ``summarise``
    (a forced refresh: the open span too)."""
    await store.refresh_segments(session_id, summarise, force=True, tz="UTC")


async def one_segment(store: AsyncStore, session_id: str, summary: str) -> Segment:
    """Cut the session's unsegmented messages (one span) into a segment saying ``summary``."""

    async def summarize(_: list[Message]) -> str:
        return summary

    await store.refresh_segments(session_id, summarize, force=True, tz="UTC")
    return (await store.recent_segments(1))[0]


def spans(segments: list[Segment]) -> list[tuple[str, str, str, str]]:
    """What a segment says, without its id (each backend numbers its own)."""
    return [(s.session_id, s.start_at, s.end_at, s.summary) for s in segments]


def without_id(memories: list[Memory]) -> list[Memory]:
    return [replace(memory, id="") for memory in memories]
