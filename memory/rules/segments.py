"""Segments."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from memory.rules.temporal import zone_of
from memory.rules.text import content_words
from memory.types import Message, Summarizer, parse_time

log = logging.getLogger("companion.segments")

GAP = timedelta(minutes=30)
MAX_MESSAGES = 40
SUMMARY_CHARS = 400
SUMMARY_LINES = 3
LINE_CHARS = 140
SPEAKER_ROLES = ("user", "assistant")
CATCH_UP_BUDGET = 20  # segments per catch_up_segments call (each may be a model call)


def part_of_day(hour: int) -> str:
    """The words a person would use for an hour of the day."""
    if 5 <= hour < 12:
        return "morning"
    if 12 <= hour < 17:
        return "afternoon"
    if 17 <= hour < 21:
        return "evening"
    return "night"


def heading(moment: str, tz: str = "UTC") -> str:
    """ "Thu 20 Nov, evening" for a stored timestamp, in the user's timezone."""
    local = parse_time(moment).astimezone(zone_of(tz))
    return f"{local:%a} {local.day} {local:%b}, {part_of_day(local.hour)}"


def extractive_summary(messages: list[Message], tz: str = "UTC") -> str:
    """A deterministic summary: heading + the most informative user lines, in order."""
    if not messages:
        return ""
    speakers = [m for m in messages if m.role in SPEAKER_ROLES and m.content.strip()]
    lines = [m for m in speakers if m.role == "user"] or speakers
    # Informative = many distinct content words; ties go to the earlier line.
    ranked = sorted(
        range(len(lines)),
        key=lambda i: (-len(content_words(lines[i].content, drop_time_words=False)), i),
    )
    chosen = sorted(ranked[:SUMMARY_LINES])
    parts = []
    for index in chosen:
        text = " ".join(lines[index].content.split())
        parts.append(text if len(text) <= LINE_CHARS else text[: LINE_CHARS - 1] + "…")
    summary = f"{heading(messages[0].created_at, tz)}: " + " · ".join(parts)
    return summary if len(summary) <= SUMMARY_CHARS else summary[: SUMMARY_CHARS - 1] + "…"


def split_segments(messages: list[Message]) -> list[list[Message]]:
    """Cut consecutive messages into segments at gaps over 30 minutes or at 40 messages."""
    segments: list[list[Message]] = []
    for message in messages:
        current = segments[-1] if segments else None
        if (
            current is None
            or len(current) >= MAX_MESSAGES
            or parse_time(message.created_at) - parse_time(current[-1].created_at) > GAP
        ):
            segments.append([message])
        else:
            current.append(message)
    return segments


def read_cap(limit: int | None) -> int | None:
    """How many unsegmented messages to read for at most ``limit`` segments (None: all)."""
    return None if limit is None else limit * MAX_MESSAGES + 1


def closed_segments(
    messages: list[Message], force: bool, limit: int | None, now: datetime
) -> list[list[Message]]:
    """Of a session's unsegmented messages (oldest first, at most ``read_cap(limit)``),
    the closed segments (all of them with ``force``) at ``now``, at most ``limit``."""
    segments = split_segments(messages)
    cap = read_cap(limit)
    if cap is not None and len(messages) == cap:
        segments.pop()  # cut short by the read cap: the messages after it may continue it
    elif segments and not force:
        last = segments[-1]
        quiet = now - parse_time(last[-1].created_at) > GAP
        if len(last) < MAX_MESSAGES and not quiet:
            segments.pop()
    return segments if limit is None else segments[:limit]


async def summarise_segments(
    segments: list[list[Message]], session_id: str, summarize: Summarizer | None, tz: str
) -> list[tuple[list[Message], str, str]]:
    """Each segment with its summary and summary_kind: ``summarize``'s over the segment's
    speakers, or the extractive one without it or when it fails (logged)."""
    summaries: list[tuple[list[Message], str, str]] = []
    for segment in segments:
        speakers = [m for m in segment if m.role in SPEAKER_ROLES]
        summary, kind = "", "extractive"
        if summarize is not None and speakers:
            try:
                summary, kind = (await summarize(speakers)).strip(), "model"
            except Exception:  # a failing model must not lose the segment: fall back
                log.exception("summarising a segment of %s failed; extractive fallback", session_id)
                summary = ""
        if not summary:
            summary, kind = extractive_summary(segment, tz) or "(no conversation)", "extractive"
        summaries.append((segment, summary, kind))
    return summaries
