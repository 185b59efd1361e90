"""The app's pure helpers: settings form → profile, trace rendering, pasted image URLs."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from app.attachments import AttachmentError, image_url_in, save_upload
from app.chat_handlers import DRAW_EXAMPLE, EXAMPLES, welcome
from app.graph_view import NO_TRACE, describe, path, trace_markdown
from app.settings_view import form_values, profile_update
from config.settings import LOCAL_MODEL_NAME, ConfigError, Settings
from evals.fixtures import cat_image
from prompts.templates import persona_greeting, persona_text

REMOTE = Settings(provider="openai-compatible", chat_model="gpt-x", tool_mode="native")
LOCAL = Settings()


def form(settings: Settings, **changes: object) -> dict[str, object]:
    return {**form_values(settings), **changes}


def test_only_changed_fields_are_saved() -> None:
    update = profile_update(form(LOCAL, latitude=35.68), persona_text("yuzuki"), LOCAL)
    assert update == {"latitude": 35.68}
    assert LOCAL.chat_model == LOCAL_MODEL_NAME  # the local defaults stay out of the profile


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"chat_model": "  "}, "chat model cannot be empty"),
        ({"latitude": 123}, "latitude must be between -90 and 90"),
        ({"longitude": -200}, "longitude must be between -180 and 180"),
        ({"tool_mode": "telepathy"}, "tool_mode must be one of"),
    ],
)
def test_invalid_values_are_refused(changes: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        profile_update(form(REMOTE, **changes), persona_text("yuzuki"), REMOTE)


def test_edited_identity_is_saved_as_identity_and_the_persona_text_clears_it() -> None:
    update = profile_update(form(REMOTE), "You are a pirate.", REMOTE)
    assert update == {"identity": "You are a pirate."}
    edited = Settings(provider="openai-compatible", identity="You are a pirate.")
    assert profile_update(form(edited), persona_text("yuzuki"), edited) == {"identity": None}
    switched = profile_update(form(REMOTE, persona="journal"), persona_text("journal"), REMOTE)
    assert switched == {"persona": "journal", "identity": None}


def test_image_backend_none_removes_it() -> None:
    configured = Settings(provider="openai-compatible", image_backend="openai")
    update = profile_update(form(configured, image_backend="none"), "", configured)
    assert update["image_backend"] is None


def test_trace_shows_the_path_and_each_step() -> None:
    trace = [
        {"kind": "node", "name": "build_context", "ms": 1.0, "detail": {"messages": 2}},
        {
            "kind": "model",
            "name": "call_model",
            "ms": 10.0,
            "detail": {"model": "m1", "calls": [{"name": "weather", "args": {"location": "Oslo"}}]},
        },
        {"kind": "tool", "name": "weather", "ms": 5.0, "detail": {"args": {}, "ok": True}},
        {"kind": "tool", "name": "web_search", "ms": 7.0, "detail": {"args": {}, "ok": False}},
        {"kind": "node", "name": "execute_tool", "detail": {"loop": 1, "calls": 3, "ran": 2}},
        {"kind": "guard", "name": "tools_off", "detail": {"reason": "cap | reached"}},
        {"kind": "node", "name": "build_context", "ms": 1.0, "detail": {}},
        {"kind": "model", "name": "call_model", "ms": 3.0, "detail": {"model": "m2", "text": "ok"}},
    ]
    assert path(trace) == [
        "build_context",
        "call_model",
        "execute_tool",
        "build_context",
        "call_model",
    ]
    text = trace_markdown(trace)
    assert describe(trace[1]) == 'model m1 (chat); calls weather({"location": "Oslo"})'
    assert describe(trace[4]) == "tool loop 1: 2 of 3 calls ran"
    assert "model m1 \\(chat\\)\\; calls weather" in text and "m2" in text
    assert "cap \\| reached" in text  # pipes cannot break the table
    assert "**Time in nodes:** 0.027 s" in text and "| 0.01 s |" in text  # one format
    assert trace_markdown([]) == NO_TRACE


def test_the_graph_tab_shows_model_and_tool_text_as_plain_text() -> None:
    image = "![](http://127.0.0.1:9/?pin=4321)"
    trace = [
        {"kind": "model", "name": "call_model", "ms": 1.0, "detail": {"text": image}},
        {"kind": "tool", "name": "web_search", "detail": {"args": {"q": f"<img src=x>{image}"}}},
        {"kind": "tool", "name": f"[evil]({image})", "detail": {"ok": True, "result": "`a|b`"}},
    ]
    # Rendered by a CommonMark renderer with raw HTML and tables on, as gr.Markdown does.
    html = MarkdownIt("commonmark", {"html": True}).enable("table").render(trace_markdown(trace))
    assert "<img" not in html and "<a " not in html and "<code>" not in html
    assert "replied: ![](http://127.0.0.1:9/?pin=4321)" in html
    assert "&lt;img src=x&gt;" in html and "`a|b`" in html
    assert html.count("<tr>") == 4  # the header and three steps: no cell broke the table


@pytest.mark.parametrize(
    ("text", "url"),
    [
        ("look https://example.com/cat.PNG please", "https://example.com/cat.PNG"),
        ("(http://x.org/a/b.jpeg?size=2)", "http://x.org/a/b.jpeg?size=2"),
        ("https://example.com/page.html", None),
        ("no link here", None),
    ],
)
def test_pasted_image_urls_are_found(text: str, url: str | None) -> None:
    assert image_url_in(text) == url


def test_uploads_are_checked_by_their_bytes(tmp_path: Path) -> None:
    media = tmp_path / "media"
    good = tmp_path / "anything.bin"
    good.write_bytes(cat_image("black"))
    saved = Path(save_upload(good, media))
    assert saved.parent == media and saved.suffix == ".png"
    bad = tmp_path / "fake.png"
    bad.write_text("<html>")
    with pytest.raises(AttachmentError, match=r"^“fake\.png” is not an image Companion can read\."):
        save_upload(bad, media)


async def test_episodes_are_listed_with_how_their_summary_was_written(tmp_path: Path) -> None:
    from datetime import UTC, datetime, timedelta

    from app.memories_view import segment_rows
    from memory.sqlite.segments import recent_segments, refresh_segments
    from memory.sqlite.store import SqliteStore

    start = datetime(2026, 11, 20, 19, 0, tzinfo=UTC)
    now = [start + timedelta(hours=14, minutes=5)]
    store = SqliteStore.open_home(tmp_path, clock=lambda: now[0])
    store.add_message("s1", "user", "I cooked nasi goreng tonight", created_at=start)
    store.add_message("s1", "assistant", "Yum!", created_at=start + timedelta(minutes=1))
    store.add_message("s1", "user", "Morning!", created_at=start + timedelta(hours=14))
    await refresh_segments(store, "s1")

    async def summarize(messages: list) -> str:
        return "Talked about the morning."

    now[0] = start + timedelta(hours=20, minutes=5)
    store.add_message("s1", "user", "Later", created_at=start + timedelta(hours=20))
    await refresh_segments(store, "s1", summarize)
    rows = segment_rows(recent_segments(store))
    assert [row[4] for row in rows] == ["the chat model", "extractive fallback (no model)"]
    assert "nasi goreng" in rows[1][3]
    assert rows[1][0] == "2026-11-20 19:00"


def test_memory_rows_go_by_category_most_retrievable_first(store) -> None:
    from datetime import timedelta
    from zoneinfo import ZoneInfo

    from app.memories_view import memory_rows
    from memory.sqlite.memories import create_memory, mark_recalled, ranked
    from tests.conftest import FIXED_NOW

    create_memory(store, "signals", "drink", "kopi", now=FIXED_NOW - timedelta(days=1))
    create_memory(store, "identity", "city", "Bandung", now=FIXED_NOW - timedelta(days=90))
    name = create_memory(store, "identity", "name", "Budi", now=FIXED_NOW - timedelta(days=2))
    mark_recalled(store, [name.id], FIXED_NOW - timedelta(hours=1))
    rows = memory_rows(ranked(store, FIXED_NOW), FIXED_NOW, "Asia/Tokyo")
    assert [row[:3] for row in rows] == [
        ["identity", "name", "Budi"],
        ["identity", "city", "Bandung"],
        ["signals", "drink", "kopi"],
    ]
    tokyo = ZoneInfo("Asia/Tokyo")
    added = (FIXED_NOW - timedelta(days=2)).astimezone(tokyo)
    recalled = (FIXED_NOW - timedelta(hours=1)).astimezone(tokyo)
    assert rows[0][3:5] == [f"{added:%Y-%m-%d %H:%M}", f"{recalled:%Y-%m-%d %H:%M}"]
    assert rows[1][4] == "never"
    assert [row[5] for row in rows] == ["strong (100%)", "faint (39%)", "strong (97%)"]
    assert not any(name.id in map(str, row) for row in rows)  # no ids in the table


@pytest.mark.parametrize(
    ("retrievability", "words"),
    [
        (1.0, "strong (100%)"),
        (0.9, "strong (90%)"),
        (0.75, "good (75%)"),
        (0.5, "fading (50%)"),
        (0.2, "faint (20%)"),
    ],
)
def test_how_well_a_memory_is_remembered_in_words(retrievability: float, words: str) -> None:
    from app.memories_view import strength_words

    assert strength_words(retrievability) == words


def test_the_no_vision_notice_is_told_once_per_session() -> None:
    from app.chat_handlers import vision_notice
    from graph.routing import NO_VISION_NOTICE

    guard = {"kind": "guard", "name": "no_vision_model", "detail": {"notice": NO_VISION_NOTICE}}
    model = {"kind": "model", "name": "call_model", "detail": {}}
    assert vision_notice([model, guard, model], "s1", []) == NO_VISION_NOTICE
    assert vision_notice([model, guard, model], "s1", ["s1"]) is None
    assert vision_notice([model], "s2", []) is None


def test_an_empty_chat_greets_as_the_persona_with_examples() -> None:
    shown = welcome(REMOTE)
    assert shown["placeholder"] == f"### Yuzuki\n\n{persona_greeting('yuzuki')}"
    assert [e["text"] for e in shown["examples"]] == list(EXAMPLES)
    journal = welcome(dataclasses.replace(REMOTE, persona="journal", image_backend="openai"))
    assert journal["placeholder"].startswith("### Journal\n\n")
    assert persona_greeting("journal") in journal["placeholder"]
    assert [e["text"] for e in journal["examples"]] == [*EXAMPLES, DRAW_EXAMPLE]
