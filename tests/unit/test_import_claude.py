"""Claude's export: chat_messages in order, human/assistant text with their times; tool
blocks, thinking and attachments left out and counted; a second import adds nothing."""

from __future__ import annotations

import json
from pathlib import Path

from app.imports import import_export
from app.imports.common import TITLE_CHARS
from memory.sqlite.async_store import AsyncSqliteStore
from tests.support.exports import CLAUDE, imported_once, transcript


async def test_each_conversation_becomes_a_chat_with_its_title_and_times(
    async_store: AsyncSqliteStore,
) -> None:
    first, found = await imported_once(async_store, CLAUDE)
    assert (first.source, first.conversations, first.chats, first.messages) == ("Claude", 3, 2, 6)
    assert sorted(found) == [
        "Choosing a rescue dog",
        "Remind me: my passport expires in March 2027.",
    ]
    session, messages = found["Choosing a rescue dog"]
    assert session.created_at == "2024-07-02 18:04:11"
    assert transcript(messages) == [
        "user at 2024-07-02 18:04:12: "
        "We adopted a greyhound called Pixel from the shelter in Leeds.",
        "assistant at 2024-07-02 18:04:30: "
        "Congratulations on adopting Pixel! Greyhounds are gentle.",
        "user at 2024-07-02 18:10:00: What vet is open on Sundays near Headingley?",
        "assistant at 2024-07-02 18:10:20: Headingley Vets opens on Sundays from 10 to 4.",
    ]
    untitled = [m.content for m in found["Remind me: my passport expires in March 2027."][1]]
    assert untitled[0] == "Remind me: my passport expires in March 2027."  # text, no blocks


async def test_tool_blocks_thinking_and_attachments_are_counted_not_kept(
    async_store: AsyncSqliteStore,
) -> None:
    report, _ = await imported_once(async_store, CLAUDE)
    assert report.skipped == {
        "attachment or file": 1,
        "thinking block": 1,
        "tool_use block": 1,
        "tool_result block": 1,
        "conversation with nothing to keep": 1,
    }


async def test_an_untitled_chat_is_named_by_its_first_line_clipped(
    tmp_path: Path, async_store: AsyncSqliteStore
) -> None:
    said = "I want to plan a three-week trip through Japan in April with my parents\nDetails"
    message = {"sender": "human", "created_at": "2024-03-01T10:00:00Z", "text": said}
    export = tmp_path / "conversations.json"
    export.write_text(json.dumps([{"uuid": "u1", "name": "", "chat_messages": [message]}]))
    await import_export(async_store, export)
    [session] = await async_store.list_sessions()
    assert session.title == "I want to plan a three-week trip through Japan in April…"
    assert len(session.title) <= TITLE_CHARS
    assert session.created_at == "2024-03-01 10:00:00"  # no time of its own: its first message's
