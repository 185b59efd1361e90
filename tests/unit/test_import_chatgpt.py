"""ChatGPT's export: the path to current_node of each conversation, with its times; no
system, hidden or tool nodes; code and multimodal text kept; a second import adds nothing."""

from __future__ import annotations

from memory.sqlite.async_store import AsyncSqliteStore
from tests.support.exports import CHATGPT, imported_once


async def test_each_conversation_becomes_a_chat_with_its_title_and_times(
    async_store: AsyncSqliteStore,
) -> None:
    first, found = await imported_once(async_store, CHATGPT)
    assert (first.source, first.chats, first.messages, first.already) == ("ChatGPT", 2, 9, 0)
    assert sorted(found) == ["Lisbon trip", "Sourdough starter"]
    session, messages = found["Sourdough starter"]
    assert session.created_at == "2024-05-01 09:30:00"
    assert [(m.role, m.created_at) for m in messages] == [
        ("user", "2024-05-01 09:30:15"),
        ("assistant", "2024-05-01 09:30:40"),
        ("user", "2024-05-01 09:32:00"),
        ("assistant", "2024-05-01 09:32:10"),
        ("assistant", "2024-05-01 09:32:20"),
        ("user", "2024-05-01 09:33:20"),
        ("assistant", "2024-05-01 09:33:30"),
    ]


async def test_only_the_branch_the_person_last_saw_is_kept(async_store: AsyncSqliteStore) -> None:
    _, found = await imported_once(async_store, CHATGPT)
    _, messages = found["Sourdough starter"]
    said = [m.content for m in messages]
    assert said[0].startswith("My sourdough starter is called Clint Yeastwood.")
    assert said[1].startswith("Feed Clint twice a day")  # the regenerated answer
    assert said[2] == "Can you write a Python feeding reminder?"  # the edited question
    assert not any("hourly" in text or "timer?" in text or "abandoned" in text for text in said)


async def test_code_and_multimodal_text_are_kept_tool_and_hidden_nodes_are_not(
    async_store: AsyncSqliteStore,
) -> None:
    report, found = await imported_once(async_store, CHATGPT)
    sourdough = [m.content for m in found["Sourdough starter"][1]]
    assert sourdough[3].startswith("```python\nimport time\n") and sourdough[3].endswith("\n```")
    assert sourdough[5] == "Here is a photo of Clint after feeding."
    lisbon = [m.content for m in found["Lisbon trip"][1]]
    assert lisbon == [
        "Where should I eat pastel de nata in Belém next week?",
        "Go to Pastéis de Belém on Rua de Belém: they have baked them since 1837.",
    ]
    every = [m for _, messages in found.values() for m in messages]
    assert {m.role for m in every} == {"user", "assistant"}
    assert all(m.meta == {"imported": "chatgpt"} and m.tool_name is None for m in every)
    assert not any(m.content == "Feed Clint!" or "search(" in m.content for m in every)
    assert report.skipped == {
        "system message": 1,
        "hidden message": 1,
        "tool output": 3,
        "message to a tool": 1,
        "content type thoughts": 1,
        "image or file": 1,
    }
