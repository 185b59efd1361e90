"""Chats brought from other apps (``AsyncStore.import_chat``): kept with their own title
and times, once per source and conversation id, and out of memory_sql's reach."""

from __future__ import annotations

from datetime import UTC, datetime

from app.imports import import_export
from memory import AsyncStore, ImportedChat, ImportedMessage, format_time
from tests.conftest import FIXED_NOW
from tests.support.exports import CHATGPT

SENT = datetime(2023, 5, 1, 9, 30, 15, tzinfo=UTC)
ANSWERED = datetime(2023, 5, 1, 9, 30, 40, tzinfo=UTC)


def _chat(source_id: str = "conv-1") -> ImportedChat:
    return ImportedChat(
        source="chatgpt",
        source_id=source_id,
        title="Sourdough starter",
        created_at=datetime(2023, 5, 1, 9, 30, 0, 500_000, tzinfo=UTC),
        messages=(
            ImportedMessage("user", "My starter is called Clint.", SENT),
            ImportedMessage("assistant", "A fine name for a starter.", ANSWERED),
        ),
    )


async def test_an_imported_chat_keeps_its_title_times_and_messages(store: AsyncStore) -> None:
    session = await store.import_chat(_chat())
    assert session is not None
    assert session.title == "Sourdough starter"
    assert session.created_at == "2023-05-01 09:30:00"
    assert await store.get_session(session.id) == session
    messages = await store.messages(session.id)
    assert [(m.role, m.content, m.created_at) for m in messages] == [
        ("user", "My starter is called Clint.", format_time(SENT)),
        ("assistant", "A fine name for a starter.", format_time(ANSWERED)),
    ]
    assert all(m.meta == {"imported": "chatgpt"} for m in messages)
    assert [s.active_at for s in await store.list_sessions()] == [format_time(ANSWERED)]


async def test_the_same_conversation_is_imported_once(store: AsyncStore) -> None:
    first = await store.import_chat(_chat())
    assert first is not None
    assert await store.import_chat(_chat()) is None
    assert await store.count_messages() == 2
    other = await store.import_chat(_chat("conv-2"))
    assert other is not None and other.id != first.id
    claude = ImportedChat("claude", "conv-1", "Same id, other app", FIXED_NOW, ())
    assert await store.import_chat(claude) is not None
    assert len(await store.list_sessions()) == 3


async def test_a_deleted_imported_chat_can_be_imported_again(store: AsyncStore) -> None:
    first = await store.import_chat(_chat())
    assert first is not None
    await store.delete_session(first.id)
    again = await store.import_chat(_chat())
    assert again is not None and await store.count_messages() == 2


async def test_memory_sql_cannot_read_the_import_keys(store: AsyncStore) -> None:
    await store.import_chat(_chat())
    result = await store.run_sql("SELECT source_id FROM chat_imports", now=FIXED_NOW)
    assert "error" in result and "conv-1" not in str(result)


async def test_an_export_imports_alike_on_both_backends(store: AsyncStore) -> None:
    report = await import_export(store, CHATGPT)
    again = await import_export(store, CHATGPT)
    assert (report.chats, report.messages, again.chats, again.already) == (2, 9, 0, 2)
    sessions = {s.title: s for s in await store.list_sessions()}
    assert sessions["Sourdough starter"].created_at == "2024-05-01 09:30:00"
    said = await store.messages(sessions["Lisbon trip"].id)
    assert [(m.role, m.created_at) for m in said] == [
        ("user", "2024-06-01 10:00:05"),
        ("assistant", "2024-06-01 10:00:20"),
    ]
    assert said[1].content.startswith("Go to Pastéis de Belém")


async def test_an_imported_chat_sorts_among_the_old_ones_by_its_time(store: AsyncStore) -> None:
    today = await store.create_session("Today")
    await store.add_message(today.id, "user", "what's for dinner?")  # now, the store's clock
    imported = await store.import_chat(_chat())  # stored after, but said in 2023
    assert imported is not None
    assert [s.title for s in await store.list_sessions()] == ["Today", "Sourdough starter"]
