"""Temporal cues in a person's words ("last Thursday", "kemarin"), as time windows.

``parse_temporal`` finds a cue with our own English and Indonesian patterns and returns a
UTC window (start inclusive, end exclusive) in the person's IANA zone relative to an
injected ``now``, or a *recent* cue (no window, newest first). ``zone_of`` refuses an
unknown zone; ``clock_text`` is the wall clock the model is told. The conventions (weeks,
parts of the day): docs/storage.md.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

MAX_DAYS_BACK = 3660


@dataclass(frozen=True)
class TemporalCue:
    """A time reference found in text: a UTC window [start, end), or "recent" (no window)."""

    start: datetime | None
    end: datetime | None
    label: str
    recent: bool = False

    @property
    def has_window(self) -> bool:
        """True when the cue names a concrete span of time."""
        return self.start is not None and self.end is not None


EN_DAYS = {
    "monday": 0,
    "tuesday": 1,
    "wednesday": 2,
    "thursday": 3,
    "friday": 4,
    "saturday": 5,
    "sunday": 6,
}
ID_DAYS = {
    "senin": 0,
    "selasa": 1,
    "rabu": 2,
    "kamis": 3,
    "jumat": 4,
    "jum'at": 4,
    "jumaat": 4,
    "sabtu": 5,
    "minggu": 6,
    "ahad": 6,
}
NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "satu": 1,
    "dua": 2,
    "tiga": 3,
    "empat": 4,
    "lima": 5,
    "enam": 6,
    "tujuh": 7,
    "delapan": 8,
    "sembilan": 9,
    "sepuluh": 10,
}
UNITS = {
    "day": "day",
    "days": "day",
    "hari": "day",
    "week": "week",
    "weeks": "week",
    "minggu": "week",
    "pekan": "week",
    "month": "month",
    "months": "month",
    "bulan": "month",
    "year": "year",
    "years": "year",
    "tahun": "year",
}
SE_UNITS = {
    "sehari": "day",
    "seminggu": "week",
    "sepekan": "week",
    "sebulan": "month",
    "setahun": "year",
}
MONTHS = {
    "jan": 1,
    "january": 1,
    "januari": 1,
    "feb": 2,
    "february": 2,
    "februari": 2,
    "mar": 3,
    "march": 3,
    "maret": 3,
    "apr": 4,
    "april": 4,
    "may": 5,
    "mei": 5,
    "jun": 6,
    "june": 6,
    "juni": 6,
    "jul": 7,
    "july": 7,
    "juli": 7,
    "aug": 8,
    "august": 8,
    "agu": 8,
    "agt": 8,
    "agustus": 8,
    "sep": 9,
    "sept": 9,
    "september": 9,
    "oct": 10,
    "october": 10,
    "okt": 10,
    "oktober": 10,
    "nov": 11,
    "november": 11,
    "nop": 11,
    "nopember": 11,
    "dec": 12,
    "december": 12,
    "des": 12,
    "desember": 12,
}
PARTS = {"morning": (0, 12), "afternoon": (11, 18), "evening": (16, 24), "night": (16, 24)}
PART_WORDS = {
    "morning": "morning",
    "pagi": "morning",
    "afternoon": "afternoon",
    "siang": "afternoon",
    "sore": "afternoon",
    "evening": "evening",
    "night": "night",
    "malam": "night",
}

_MONTH_ALT = "|".join(sorted(MONTHS, key=len, reverse=True))
_EN_DAY_ALT = "|".join(EN_DAYS)
_ID_DAY_ALT = "senin|selasa|rabu|kamis|jum'?at|jumaat|sabtu|ahad"
_NUM_ALT = r"\d{1,4}|" + "|".join(sorted(NUMBERS, key=len, reverse=True))
_AGO = r"(?:ago|back)"
_LALU = r"(?:yang\s+)?(?:lalu|kemarin|kemaren|sebelumnya)"


def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE | re.UNICODE)


ISO_DATE = _rx(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b")
DAY_MONTH = _rx(rf"\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:{_MONTH_ALT})\.?(?:,?\s+\d{{4}})?\b")
MONTH_DAY = _rx(rf"\b(?:{_MONTH_ALT})\.?\s+\d{{1,2}}(?:st|nd|rd|th)?\b(?:,?\s+\d{{4}}\b)?")
N_AGO_EN = _rx(rf"\b({_NUM_ALT})\s+(days?|weeks?|months?|years?)\s+{_AGO}\b")
N_AGO_ID = _rx(rf"\b({_NUM_ALT})\s+(hari|minggu|pekan|bulan|tahun)\s+{_LALU}\b")
SE_AGO_ID = _rx(rf"\b(sehari|seminggu|sepekan|sebulan|setahun)\s+{_LALU}\b")
FEW_DAYS = _rx(rf"\b(?:a\s+few|several|couple\s+of|beberapa)\s+(?:days?\s+{_AGO}|hari\s+{_LALU})")
WEEKDAY_EN = _rx(rf"\b(?:(?:last|this\s+past|past|on)\s+)?({_EN_DAY_ALT})\b")
_DAY_SUFFIX = r"(?:\s+(?:yang\s+)?(?:lalu|kemarin|kemaren))?"
SUNDAY_ID = _rx(rf"\bhari\s+minggu{_DAY_SUFFIX}\b")
WEEKDAY_ID = _rx(rf"\b(?:hari\s+)?({_ID_DAY_ALT}){_DAY_SUFFIX}\b")
LAST_WEEK = _rx(
    r"\b(?:last|previous|the\s+past)\s+week\b|\b(?:minggu|pekan)\s+"
    r"(?:yang\s+)?(?:lalu|kemarin|kemaren|sebelumnya)\b"
)
THIS_WEEK = _rx(r"\bthis\s+week\b|\b(?:minggu|pekan)\s+ini\b")
LAST_MONTH = _rx(
    r"\b(?:last|previous|the\s+past)\s+month\b|\bbulan\s+"
    r"(?:yang\s+)?(?:lalu|kemarin|kemaren|sebelumnya)\b"
)
THIS_MONTH = _rx(r"\bthis\s+month\b|\bbulan\s+ini\b")
LAST_YEAR = _rx(r"\b(?:last|previous)\s+year\b|\btahun\s+(?:yang\s+)?(?:lalu|kemarin)\b")
THIS_MORNING = _rx(r"\bthis\s+morning\b|\btadi\s+pagi\b|\bpagi\s+(?:ini|tadi)\b")
THIS_AFTERNOON = _rx(
    r"\bthis\s+afternoon\b|\btadi\s+(?:siang|sore)\b|"
    r"\b(?:siang|sore)\s+(?:ini|tadi)\b"
)
THIS_EVENING = _rx(r"\bthis\s+evening\b|\btonight\b|\bmalam\s+ini\b")
LAST_NIGHT = _rx(r"\blast\s+night\b|\btadi\s+malam\b|\bsemalam\b")
DAY_BEFORE_YESTERDAY = _rx(
    r"\b(?:the\s+)?day\s+before\s+yesterday\b|\bkemarin\s+lusa\b|"
    r"\bkemaren\s+lusa\b"
)
YESTERDAY = _rx(r"\byesterday\b|\bkemarin\b|\bkemaren\b")
TODAY = _rx(r"\btoday\b|\bhari\s+ini\b|\btadi\b")
IN_MONTH = _rx(rf"\b(?:in|during|last|bulan|pada|waktu)\s+({_MONTH_ALT})\b")
RECENT = _rx(
    r"\blast\s+time\b|\bthe\s+other\s+day\b|\brecently\b|\blately\b|\bthat\s+time\b|"
    r"\bback\s+then\b|\bearlier\b|\bpreviously\b|\bremember\s+when\b|\bwhen\s+(?:i|we)\b|"
    r"\bwaktu\s+itu\b|\bsaat\s+itu\b|\bterakhir\b|\bpas\s+(?:aku|kita|kamu|saya|gue|gua)\b|"
    r"\bwaktu\s+(?:aku|kita|saya)\b|\bdulu\b|\btempo\s+hari\b|\bbaru-baru\s+ini\b|"
    r"\bbelakangan\s+ini\b|\bakhir-akhir\s+ini\b|\bsebelumnya\b|\bkemarin-kemarin\b"
)
PART_OF_DAY = _rx(
    r"\s*(?:in\s+the\s+|at\s+|on\s+the\s+)?"
    r"(morning|afternoon|evening|night|pagi|siang|sore|malam)\b"
)


def zone_of(tz: str | None) -> tzinfo:
    """The named IANA time zone; UTC when no name is given.

    An unknown name raises ValueError: settings refuse one (``config.settings``), and
    nothing here quietly takes UTC in its place.
    """
    if not tz:
        return UTC
    try:
        return ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError, OSError) as exc:
        raise ValueError(f"unknown time zone {tz!r}") from exc


def clock_text(now: datetime, tz: str | None) -> str:
    """``now`` as the person's wall clock, e.g. "Wednesday 25 November 2026, 18:30
    (Asia/Tokyo, UTC+09:00)": what the model is told the time is."""
    aware = now if now.tzinfo is not None else now.replace(tzinfo=UTC)
    local = aware.astimezone(zone_of(tz))
    offset = local.strftime("%z")
    zone = tz or "UTC"
    if zone != "UTC":
        zone += f", UTC{offset[:3]}:{offset[3:5]}"
    return f"{local:%A} {local.day} {local:%B %Y, %H:%M} ({zone})"


class _Clock:
    """Local calendar arithmetic around ``now`` in one timezone."""

    def __init__(self, now: datetime, zone: tzinfo) -> None:
        self.zone = zone
        aware = now if now.tzinfo is not None else now.replace(tzinfo=UTC)
        self.now = aware.astimezone(zone)
        self.today = self.now.date()

    def at(self, day: date, hour: int = 0) -> datetime:
        """Local wall time on ``day`` (hour 24 = next midnight), as aware UTC."""
        extra, hour = divmod(hour, 24)
        local = datetime.combine(day + timedelta(days=extra), time(hour), tzinfo=self.zone)
        return local.astimezone(UTC)

    def days(self, first: date, last: date, label: str) -> TemporalCue:
        """The whole local days ``first``..``last`` inclusive."""
        return TemporalCue(self.at(first), self.at(last + timedelta(days=1)), label)

    def day(self, day: date, phrase: str) -> TemporalCue:
        return self.days(day, day, f"{phrase} ({day:%a %d %b %Y})")

    def span(self, first: date, last: date, phrase: str) -> TemporalCue:
        return self.days(first, last, f"{phrase} ({first:%a %d %b} – {last:%a %d %b %Y})")

    def week_of(self, day: date, phrase: str) -> TemporalCue:
        monday = day - timedelta(days=day.weekday())
        return self.span(monday, monday + timedelta(days=6), phrase)

    def month_of(self, year: int, month: int, phrase: str) -> TemporalCue:
        first = date(year, month, 1)
        following = date(year + month // 12, month % 12 + 1, 1)
        return self.days(first, following - timedelta(days=1), f"{phrase} ({first:%B %Y})")

    def months_back(self, count: int) -> tuple[int, int]:
        index = self.today.year * 12 + self.today.month - 1 - count
        return index // 12, index % 12 + 1

    def before_today(self, weekday: int) -> date:
        """The most recent ``weekday`` strictly before today."""
        back = (self.today.weekday() - weekday - 1) % 7 + 1
        return self.today - timedelta(days=back)


def _number(word: str) -> int | None:
    word = word.lower()
    if word.isdigit():
        return int(word)
    return NUMBERS.get(word)


def _ago(clock: _Clock, count: int, unit: str, phrase: str) -> TemporalCue | None:
    if count < 1 or count * {"day": 1, "week": 7, "month": 31, "year": 366}[unit] > MAX_DAYS_BACK:
        return None
    if unit == "day":
        return clock.day(clock.today - timedelta(days=count), phrase)
    if unit == "week":
        return clock.week_of(clock.today - timedelta(days=7 * count), phrase)
    if unit == "month":
        year, month = clock.months_back(count)
        return clock.month_of(year, month, phrase)
    year = clock.today.year - count
    return clock.days(date(year, 1, 1), date(year, 12, 31), f"{phrase} ({year})")


# A rule's hit: the cue and where its phrase ends in the text (for part-of-day words).
Hit = tuple[TemporalCue, int]


def _explicit_date(clock: _Clock, text: str) -> Hit | None:
    """Dates written out; our patterns find them, dateparser reads them."""
    iso = ISO_DATE.search(text)
    if iso:
        try:
            day = date(int(iso[1]), int(iso[2]), int(iso[3]))
        except ValueError:
            return None
        return clock.day(day, iso[0]), iso.end()
    found = DAY_MONTH.search(text) or MONTH_DAY.search(text)
    if not found:
        return None
    import dateparser  # slow first import (~90 ms): only when a written date is present

    try:
        parsed = dateparser.parse(
            found[0],
            languages=["en", "id"],
            settings={
                "RELATIVE_BASE": clock.now.replace(tzinfo=None),
                "PREFER_DATES_FROM": "past",
                "RETURN_AS_TIMEZONE_AWARE": False,
            },
        )
    except Exception:  # dateparser has raised on odd inputs; an unread date is no cue
        return None
    if parsed is None:
        return None
    return clock.day(parsed.date(), found[0]), found.end()


def _n_ago(clock: _Clock, text: str) -> Hit | None:
    for pattern in (N_AGO_EN, N_AGO_ID):
        found = pattern.search(text)
        if found:
            cue = _ago(clock, _number(found[1]) or 0, UNITS[found[2].lower()], found[0])
            return (cue, found.end()) if cue else None
    found = SE_AGO_ID.search(text)
    if found:
        cue = _ago(clock, 1, SE_UNITS[found[1].lower()], found[0])
        return (cue, found.end()) if cue else None
    found = FEW_DAYS.search(text)
    if found:
        first, last = clock.today - timedelta(days=6), clock.today - timedelta(days=2)
        return clock.span(first, last, found[0]), found.end()
    return None


def _weekday(clock: _Clock, text: str) -> Hit | None:
    found = WEEKDAY_EN.search(text)
    if found:
        return clock.day(clock.before_today(EN_DAYS[found[1].lower()]), found[0]), found.end()
    found = SUNDAY_ID.search(text)
    if found:
        return clock.day(clock.before_today(6), found[0]), found.end()
    found = WEEKDAY_ID.search(text)
    if found:
        return clock.day(clock.before_today(ID_DAYS[found[1].lower()]), found[0]), found.end()
    return None


def _periods(clock: _Clock, text: str) -> Hit | None:
    today = clock.today
    if found := LAST_WEEK.search(text):
        return clock.week_of(today - timedelta(days=7), found[0]), found.end()
    if found := THIS_WEEK.search(text):
        monday = today - timedelta(days=today.weekday())
        return clock.span(monday, today, found[0]), found.end()
    if found := LAST_MONTH.search(text):
        return clock.month_of(*clock.months_back(1), found[0]), found.end()
    if found := THIS_MONTH.search(text):
        label = f"{found[0]} ({today:%B %Y})"
        return clock.days(today.replace(day=1), today, label), found.end()
    if found := LAST_YEAR.search(text):
        year = today.year - 1
        label = f"{found[0]} ({year})"
        return clock.days(date(year, 1, 1), date(year, 12, 31), label), found.end()
    return None


def _today_parts(clock: _Clock, text: str) -> Hit | None:
    today = clock.today
    for pattern, (start, end) in (
        (THIS_MORNING, PARTS["morning"]),
        (THIS_AFTERNOON, PARTS["afternoon"]),
        (THIS_EVENING, PARTS["evening"]),
    ):
        if found := pattern.search(text):
            label = f"{found[0]} ({today:%a %d %b %Y})"
            return TemporalCue(clock.at(today, start), clock.at(today, end), label), found.end()
    if found := LAST_NIGHT.search(text):
        yesterday = today - timedelta(days=1)
        label = f"{found[0]} ({yesterday:%a %d %b %Y}, night)"
        return TemporalCue(clock.at(yesterday, 16), clock.at(today, 6), label), found.end()
    return None


def _days(clock: _Clock, text: str) -> Hit | None:
    if found := DAY_BEFORE_YESTERDAY.search(text):
        return clock.day(clock.today - timedelta(days=2), found[0]), found.end()
    if found := YESTERDAY.search(text):
        return clock.day(clock.today - timedelta(days=1), found[0]), found.end()
    if found := TODAY.search(text):
        return clock.day(clock.today, found[0]), found.end()
    return None


def _in_month(clock: _Clock, text: str) -> Hit | None:
    found = IN_MONTH.search(text)
    if not found:
        return None
    month = MONTHS[found[1].lower()]
    year = clock.today.year if month <= clock.today.month else clock.today.year - 1
    return clock.month_of(year, month, found[0]), found.end()


def _narrow(clock: _Clock, cue: TemporalCue, rest: str) -> TemporalCue:
    """Narrow a one-day window to a part of the day named right after the cue
    ("kemarin malam", "last Thursday evening"); a greeting elsewhere does not count."""
    if cue.start is None or cue.end is None or cue.end - cue.start > timedelta(hours=25):
        return cue
    found = PART_OF_DAY.match(rest)
    if not found:
        return cue
    part = PART_WORDS[found[1].lower()]
    start, end = PARTS[part]
    day = cue.start.astimezone(clock.zone).date()
    return TemporalCue(clock.at(day, start), clock.at(day, end), f"{cue.label}, {part}")


# Most specific first: "2 minggu lalu" before "minggu lalu", "kamis kemarin" and
# "minggu kemarin" before "kemarin", "hari minggu lalu" (a Sunday) before "minggu lalu".
_RULES: tuple[Callable[[_Clock, str], Hit | None], ...] = (
    _explicit_date,
    _n_ago,
    _weekday,
    _periods,
    _today_parts,
    _days,
    _in_month,
)
_DAY_RULES = (_explicit_date, _n_ago, _weekday, _days)


def parse_temporal(text: str, now: datetime, tz: str = "UTC") -> TemporalCue | None:
    """The first time cue in ``text`` as a UTC window relative to ``now`` in ``tz``;
    a recent cue for dateless references ("last time", "waktu itu"); None when there is
    no cue. Never raises on any text or moment; an unknown ``tz`` is a ValueError."""
    zone = zone_of(tz)
    if not isinstance(text, str) or not isinstance(now, datetime) or not text.strip():
        return None
    try:
        clock = _Clock(now, zone)
        lowered = text.lower()
        for rule in _RULES:
            hit = rule(clock, lowered)
            if hit is not None:
                cue, end = hit
                return _narrow(clock, cue, lowered[end:]) if rule in _DAY_RULES else cue
        found = RECENT.search(lowered)
        if found:
            return TemporalCue(None, None, found[0], recent=True)
    except (ValueError, OverflowError, ArithmeticError):
        # Dates near the edges of the calendar (year 1 or 9999) cannot be shifted;
        # such a "cue" is no cue, and search goes on without a window.
        return None
    return None
