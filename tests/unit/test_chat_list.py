"""The chats sidebar's list (app.chat_list): relative times on the person's clock, pinned
chats first, rows and results as escaped HTML of real buttons, where a found message
sits in the chat."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest

from app import chat_list
from app.chat_list import bubble_at, list_html, relative_time, results_html, session_rows
from memory import ChatHit, Message, Session

NOW = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)  # a Thursday
HOSTILE = '<img src=x onerror="alert(1)"> & “Trip”'


@pytest.mark.parametrize(
    ("stamp", "tz", "shown"),
    [
        ("2026-11-26 11:59:30", "UTC", "now"),
        ("2026-11-26 12:00:10", "UTC", "now"),  # a clock a little ahead
        ("2026-11-26 11:55:00", "UTC", "5 min"),
        ("2026-11-26 11:00:01", "UTC", "59 min"),
        ("2026-11-26 10:00:00", "UTC", "2 h"),
        ("2026-11-25 12:00:01", "UTC", "23 h"),
        ("2026-11-24 09:00:00", "UTC", "Tue"),
        ("2026-11-20 09:00:00", "UTC", "Fri"),  # six days back: still its weekday
        ("2026-11-19 09:00:00", "UTC", "19 Nov"),
        ("2026-01-02 09:00:00", "UTC", "2 Jan"),
        ("2025-11-12 09:00:00", "UTC", "12 Nov 2025"),
        # 19 Nov 20:00 UTC is already 20 Nov in Jakarta (UTC+7): six days back, a Friday.
        ("2026-11-19 20:00:00", "Asia/Jakarta", "Fri"),
        ("2025-12-31 20:00:00", "Asia/Jakarta", "1 Jan"),
        ("2026-01-01 02:00:00", "America/New_York", "31 Dec 2025"),
    ],
)
def test_relative_time_on_the_persons_clock(stamp: str, tz: str, shown: str) -> None:
    assert relative_time(stamp, NOW, tz) == shown


def session(sid: str, title: str, active: str, *, pinned: bool = False) -> Session:
    return Session(sid, title, None, "2026-01-01 00:00:00", active_at=active, pinned=pinned)


def test_rows_put_pinned_chats_first_and_keep_the_order_of_activity() -> None:
    sessions = [
        session("a", "newest", "2026-11-26 11:58:00"),
        session("b", "pinned, older", "2026-11-20 09:00:00", pinned=True),
        session("c", "older", "2026-11-19 09:00:00"),
        session("d", "pinned, oldest", "2025-11-12 09:00:00", pinned=True),
    ]
    rows = session_rows(sessions, "Asia/Jakarta", NOW)
    assert [row["id"] for row in rows] == ["b", "d", "a", "c"]
    assert [row["when"] for row in rows] == ["Fri", "12 Nov 2025", "2 min", "19 Nov"]
    assert rows[2]["at"] == "2026-11-26 18:58"  # the exact time, on the person's clock
    assert [row["pinned"] for row in rows] == [True, True, False, False]


def rows_of(*titles: str, pinned: int = 0) -> list[dict[str, object]]:
    return [
        {"id": f"id{n}", "title": t, "when": "2 h", "at": "x", "pinned": n < pinned}
        for n, t in enumerate(titles)
    ]


def buttons(page: str) -> list[str]:
    return re.findall(r"<button [^>]*>", page)


def test_each_row_is_a_button_with_its_title_time_and_a_named_menu() -> None:
    page = list_html(rows_of("Trip to Bandung", "Tea"), "id1")
    opens = [b for b in buttons(page) if 'data-action="open"' in b]
    assert len(opens) == 2 and 'aria-current="true"' in opens[1]
    assert 'aria-current="true"' not in opens[0]
    assert '<span class="chat-title">Trip to Bandung</span>' in page
    assert '<span class="chat-when" title="x">2 h</span>' in page
    assert 'aria-label="Options for “Trip to Bandung”"' in page
    actions = re.findall(r'data-action="(\w+)" data-id="id0"', page)
    assert actions == ["open", "rename", "pin", "delete"]
    assert "<table" not in page and "Pinned" not in page and "Recent" not in page


def test_pinned_chats_come_first_under_their_heading_and_unpin() -> None:
    page = list_html(rows_of("Pinned one", "Other", pinned=1), None)
    assert page.index(">Pinned</h3>") < page.index("Pinned one") < page.index(">Recent</h3>")
    assert page.index(">Recent</h3>") < page.index("Other")
    assert re.findall(r'data-action="(\w+)" data-id="id0"', page)[2] == "unpin"


def test_titles_and_lines_are_escaped() -> None:
    page = list_html(rows_of(HOSTILE), None)
    assert "<img" not in page and "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in page
    assert 'aria-label="Options for “&lt;img src=x onerror=&quot;' in page
    hit = {"id": 'x"><b>', "title": HOSTILE, "message": 3, "line": "<script>x</script>"}
    found = results_html("<i>", [hit], None)
    assert "<img" not in found and "<script" not in found and "<b>" not in found
    assert "&lt;script&gt;x&lt;/script&gt;" in found
    assert "No chat mentions" not in found
    assert results_html("<i>tea</i>", [], None).count("&lt;i&gt;tea&lt;/i&gt;") == 1


def test_results_show_the_title_and_the_matching_line() -> None:
    hits = chat_list.hit_rows(
        [
            ChatHit("s1", "Trip to Bandung", None, None, "Trip to Bandung", "t"),
            ChatHit("s2", "Weekend", 7, "user", "we could take the train to Bandung", "t"),
        ]
    )
    page = results_html("bandung", hits, "s2")
    title_only, message = [b for b in buttons(page) if 'data-action="hit"' in b]
    assert 'data-id="s1"' in title_only and "data-message" not in title_only
    assert 'data-id="s2" data-message="7" aria-current="true"' in message
    assert '<span class="chat-line">we could take the train to Bandung</span>' in page
    assert page.count('class="chat-line"') == 1  # a title's own match shows no line
    none = results_html("  ferry ", [], None)
    assert "No chat mentions “ferry”." in none and 'role="status"' in none


def test_the_list_shows_results_only_while_there_is_a_query() -> None:
    rows = rows_of("Tea")
    assert chat_list.shown_html(rows, None, None) == list_html(rows, None)
    found = {"query": "x", "hits": []}
    assert chat_list.shown_html(rows, None, found) == results_html("x", [], None)
    assert "No chats yet" in list_html([], None)


def message(mid: int, role: str, content: str = "", tool: str | None = None) -> Message:
    return Message(mid, "s", role, content, "2026-11-26 10:00:00", tool_name=tool)


def test_a_found_message_is_found_among_the_chats_bubbles() -> None:
    messages = [
        message(1, "user", "weather?"),
        message(2, "weather_tool", tool="weather"),
        message(3, "assistant", "14 °C"),
        message(4, "user", "thanks"),
        message(5, "assistant", "any time"),
    ]
    # bubbles: weather? | the weather step | 14 °C | thanks | any time
    assert [bubble_at(messages, mid) for mid in (1, 3, 4, 5)] == [0, 2, 3, 4]
    assert bubble_at(messages, 99) == -1 and bubble_at(messages, None) == -1


def test_a_page_that_chose_another_chat_stops_following_the_old_one() -> None:
    opened = chat_list.OpenedChats(kept=2)
    assert opened.still("page-1", "a")  # nothing chosen yet: follow
    opened.choose("page-1", "a")
    assert opened.still("page-1", "a") and not opened.still("page-1", "b")
    opened.choose("page-1", None)  # "New chat"
    assert not opened.still("page-1", "a")
    opened.choose("page-2", "b")
    opened.choose("page-3", "c")  # two pages kept: page-1 is forgotten
    assert opened.still("page-1", "a") and not opened.still("page-2", "a")
    opened.choose(None, "x")
    assert opened.still(None, "y")
