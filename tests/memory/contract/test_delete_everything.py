"""Forgetting a person (``AsyncStore.delete_everything``): every row of theirs goes, no
trace of their words is left in the database (the file and its log on SQLite, any table
on Postgres), and another person's data is untouched."""

from __future__ import annotations

from pathlib import Path

from memory import AsyncStore, ImportedChat
from memory.postgres.store import PgStore
from memory.sqlite.async_store import AsyncSqliteStore
from memory.sqlite.store import SqliteStore
from tests.conftest import FIXED_NOW
from tests.memory.backends import new_person, ticking
from tests.support.person_data import VECTOR_MODEL, files_holding, fill, rows_holding
from tests.support.postgres import PostgresServer


async def _other(store: AsyncStore, tmp_path: Path, postgres: PostgresServer) -> AsyncStore:
    """Another person's store on the same backend (their own home, or their rows)."""
    if isinstance(store, PgStore):
        return await PgStore.open(postgres.url, new_person(), clock=ticking())
    return AsyncSqliteStore(SqliteStore.open_home(tmp_path / "other", clock=ticking()))


async def _holdings(store: AsyncStore) -> tuple[int, int, int, int, dict[str, str]]:
    """How much a person has: chats, messages, memories, segments, and their settings."""
    return (
        len(await store.list_sessions()),
        await store.count_messages(),
        len(await store.ranked_memories(FIXED_NOW)),
        len(await store.recent_segments(1000)),
        await store.profile(),
    )


async def test_nothing_of_the_person_is_left(
    store: AsyncStore, tmp_path: Path, postgres: PostgresServer
) -> None:
    await fill(store, "Quokkaberry", image=False)
    deleted = await store.delete_everything()
    assert (deleted["sessions"], deleted["messages"], deleted["memories"]) == (2, 15, 2)
    assert deleted["segments"] >= 1 and deleted["chat_imports"] == 1
    assert await _holdings(store) == (0, 0, 0, 0, {})
    assert await store.running_turns() == []
    assert await store.vector_status(VECTOR_MODEL) == (0, 0)
    assert await store.undo_last_sql_edit() is None
    if isinstance(store, PgStore):
        assert rows_holding(postgres.admin_url, "Quokkaberry", store.person) == {}
    else:
        assert isinstance(store, AsyncSqliteStore)
        assert files_holding(store.blocking.path.parent, "Quokkaberry") == []
    chat = ImportedChat("chatgpt", "conv-Quokkaberry", "Back again", FIXED_NOW, ())
    assert await store.import_chat(chat) is not None  # its import key went too


async def test_another_person_keeps_everything(
    store: AsyncStore, tmp_path: Path, postgres: PostgresServer
) -> None:
    other = await _other(store, tmp_path, postgres)
    try:
        await fill(store, "Quokkaberry", image=False)
        await fill(other, "Wombatpear", image=False)
        before = await _holdings(other)
        await store.delete_everything()
        assert await _holdings(other) == before
        assert before[:4] == (2, 15, 2, before[3]) and before[3] >= 1
        assert await other.vector_status(VECTOR_MODEL) == (14, 14)
        if isinstance(other, PgStore):
            assert set(rows_holding(postgres.admin_url, "Wombatpear", other.person)) >= {
                "sessions",
                "messages",
                "memories",
                "segments",
                "profile",
                "message_vectors",
                "sql_edits",
                "chat_imports",
            }
    finally:
        await other.close()
