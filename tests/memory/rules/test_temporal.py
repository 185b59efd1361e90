"""Temporal cues (English and Indonesian) into UTC windows, on a fixed clock."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory.rules.temporal import clock_text, parse_temporal, zone_of

# Wednesday 25 November 2026, 10:00 UTC = 17:00 in Jakarta (UTC+7).
NOW = datetime(2026, 11, 25, 10, 0, tzinfo=UTC)
TZ = "Asia/Jakarta"


def local_days(text: str, tz: str = TZ) -> tuple[str, str]:
    """The cue's window as local dates, first and last day inclusive."""
    cue = parse_temporal(text, NOW, tz)
    assert cue is not None and cue.start is not None and cue.end is not None, text
    from zoneinfo import ZoneInfo

    zone = ZoneInfo(tz)
    first = cue.start.astimezone(zone)
    last = (cue.end - timedelta(seconds=1)).astimezone(zone)
    return first.strftime("%Y-%m-%d"), last.strftime("%Y-%m-%d")


@pytest.mark.parametrize(
    ("text", "first", "last"),
    [
        ("What did I cook last Thursday?", "2026-11-19", "2026-11-19"),
        ("what happened yesterday", "2026-11-24", "2026-11-24"),
        ("the day before yesterday", "2026-11-23", "2026-11-23"),
        ("anything today?", "2026-11-25", "2026-11-25"),
        ("last week", "2026-11-16", "2026-11-22"),
        ("last month", "2026-10-01", "2026-10-31"),
        ("3 days ago", "2026-11-22", "2026-11-22"),
        ("two weeks ago", "2026-11-09", "2026-11-15"),
        ("last Wednesday", "2026-11-18", "2026-11-18"),
        ("on 20 November", "2026-11-20", "2026-11-20"),
        ("on 2026-11-03", "2026-11-03", "2026-11-03"),
        ("hari ini", "2026-11-25", "2026-11-25"),
        ("aku masak apa kemarin?", "2026-11-24", "2026-11-24"),
        ("kemarin lusa", "2026-11-23", "2026-11-23"),
        ("minggu lalu", "2026-11-16", "2026-11-22"),
        ("pekan lalu", "2026-11-16", "2026-11-22"),
        ("hari minggu lalu", "2026-11-22", "2026-11-22"),
        ("bulan lalu", "2026-10-01", "2026-10-31"),
        ("kamis lalu", "2026-11-19", "2026-11-19"),
        ("senin lalu", "2026-11-23", "2026-11-23"),
        ("jumat kemarin", "2026-11-20", "2026-11-20"),
        ("hari sabtu", "2026-11-21", "2026-11-21"),
        ("2 hari yang lalu", "2026-11-23", "2026-11-23"),
        ("dua minggu yang lalu", "2026-11-09", "2026-11-15"),
        ("seminggu yang lalu", "2026-11-16", "2026-11-22"),
    ],
)
def test_cues_become_local_day_windows(text: str, first: str, last: str) -> None:
    assert local_days(text) == (first, last)


def test_windows_are_utc_and_half_open() -> None:
    cue = parse_temporal("yesterday", NOW, TZ)
    assert cue is not None
    assert cue.start == datetime(2026, 11, 23, 17, 0, tzinfo=UTC)
    assert cue.end == datetime(2026, 11, 24, 17, 0, tzinfo=UTC)
    assert not cue.recent and "Tue 24 Nov 2026" in cue.label


def test_same_cue_in_utc() -> None:
    cue = parse_temporal("yesterday", NOW)
    assert cue is not None
    assert (cue.start, cue.end) == (
        datetime(2026, 11, 24, tzinfo=UTC),
        datetime(2026, 11, 25, tzinfo=UTC),
    )


def test_last_weekday_on_that_weekday_means_a_week_ago() -> None:
    assert local_days("last Wednesday") == ("2026-11-18", "2026-11-18")
    assert local_days("rabu lalu") == ("2026-11-18", "2026-11-18")


@pytest.mark.parametrize("text", ["this morning", "tadi pagi", "pagi ini"])
def test_this_morning_is_today_before_noon(text: str) -> None:
    cue = parse_temporal(text, NOW, TZ)
    assert cue is not None
    assert cue.start == datetime(2026, 11, 24, 17, 0, tzinfo=UTC)  # 00:00 local
    assert cue.end == datetime(2026, 11, 25, 5, 0, tzinfo=UTC)  # 12:00 local


def test_part_of_day_narrows_only_when_it_follows_the_cue() -> None:
    evening = parse_temporal("kemarin malam", NOW, TZ)
    assert evening is not None and evening.label.endswith("night")
    assert evening.start == datetime(2026, 11, 24, 9, 0, tzinfo=UTC)  # 16:00 local
    greeting = parse_temporal("selamat pagi! kemarin aku ngapain?", NOW, TZ)
    assert greeting is not None and greeting.end is not None and greeting.start is not None
    assert greeting.end - greeting.start == timedelta(days=1)


@pytest.mark.parametrize(
    "text",
    [
        "last time we talked",
        "the other day",
        "waktu itu",
        "terakhir kali aku ke sana",
        "pas aku sakit",
        "recently",
        "dulu aku suka apa",
    ],
)
def test_dateless_cues_are_recent(text: str) -> None:
    cue = parse_temporal(text, NOW, TZ)
    assert cue is not None and cue.recent and cue.start is None and cue.end is None


@pytest.mark.parametrize(
    "text",
    [
        "what is 2+2?",
        "we went out",
        "may I ask something",
        "hello",
        "",
        "   ",
        "USD to JPY rate",
        "99999 days ago",
    ],
)
def test_no_cue(text: str) -> None:
    assert parse_temporal(text, NOW, TZ) is None


@pytest.mark.parametrize("tz", ["Not/AZone", "Mars/Olympus", "../etc", "Asia"])
def test_an_unknown_timezone_is_an_error_never_utc(tz: str) -> None:
    with pytest.raises(ValueError, match="unknown time zone"):
        parse_temporal("yesterday", NOW, tz)
    with pytest.raises(ValueError, match="unknown time zone"):
        zone_of(tz)


# 23:30 UTC on Tuesday 24 November is already 08:30 on Wednesday 25 November in Tokyo.
LATE = datetime(2026, 11, 24, 23, 30, tzinfo=UTC)


def test_this_morning_and_yesterday_are_the_persons_morning_and_yesterday() -> None:
    morning = parse_temporal("what did I have this morning?", LATE, "Asia/Tokyo")
    assert morning is not None
    assert morning.start == datetime(2026, 11, 24, 15, 0, tzinfo=UTC)  # Wed 00:00 in Tokyo
    assert morning.end == datetime(2026, 11, 25, 3, 0, tzinfo=UTC)  # Wed 12:00 in Tokyo
    assert "Wed 25 Nov 2026" in morning.label
    yesterday = parse_temporal("and yesterday?", LATE, "Asia/Tokyo")
    assert yesterday is not None and "Tue 24 Nov 2026" in yesterday.label
    assert (yesterday.start, yesterday.end) == (
        datetime(2026, 11, 23, 15, 0, tzinfo=UTC),
        datetime(2026, 11, 24, 15, 0, tzinfo=UTC),
    )
    # The same moment in UTC is still Tuesday: "yesterday" is Monday there.
    in_utc = parse_temporal("and yesterday?", LATE, "UTC")
    assert in_utc is not None and "Mon 23 Nov 2026" in in_utc.label


@pytest.mark.parametrize(
    ("tz", "shown"),
    [
        ("Asia/Tokyo", "Wednesday 25 November 2026, 19:00 (Asia/Tokyo, UTC+09:00)"),
        ("UTC", "Wednesday 25 November 2026, 10:00 (UTC)"),
        ("America/St_Johns", "Wednesday 25 November 2026, 06:30 (America/St_Johns, UTC-03:30)"),
        ("Pacific/Kiritimati", "Thursday 26 November 2026, 00:00 (Pacific/Kiritimati, UTC+14:00)"),
    ],
)
def test_the_clock_the_model_is_told_is_the_persons(tz: str, shown: str) -> None:
    assert clock_text(NOW, tz) == shown


def test_naive_now_is_taken_as_utc() -> None:
    assert parse_temporal("yesterday", NOW.replace(tzinfo=None)) == parse_temporal("yesterday", NOW)


CUE_WORDS = [
    "last",
    "thursday",
    "kemarin",
    "lusa",
    "minggu",
    "lalu",
    "hari",
    "ago",
    "3",
    "days",
    "week",
    "bulan",
    "tadi",
    "pagi",
    "malam",
    "yang",
    "20",
    "november",
    "2026-02-30",
    "0",
    "99999999",
    "time",
    "waktu",
    "itu",
    "jum'at",
    "-",
    ".",
    ",",
]


@settings(max_examples=300, deadline=None)
@given(
    text=st.one_of(
        st.text(max_size=80),
        st.lists(st.sampled_from(CUE_WORDS), max_size=8).map(" ".join),
    ),
    now=st.datetimes(
        min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31), timezones=st.just(UTC)
    ),
    tz=st.sampled_from(["UTC", "Asia/Jakarta", "America/New_York", "Pacific/Kiritimati", ""]),
)
def test_never_raises(text: str, now: datetime, tz: str) -> None:
    cue = parse_temporal(text, now, tz)
    if cue is not None and cue.start is not None and cue.end is not None:
        assert cue.start < cue.end
