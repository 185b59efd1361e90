"""Exports of other apps for the import tests (tests/fixtures/imports, written from each
app's public export format: see app/imports), and a store to import them into."""

from __future__ import annotations

from pathlib import Path

from app.imports import Report, import_export
from memory import Message, Session
from memory.sqlite.async_store import AsyncSqliteStore

EXPORTS = Path(__file__).resolve().parent.parent / "fixtures" / "imports"
CHATGPT = EXPORTS / "chatgpt_conversations.json"
CLAUDE = EXPORTS / "claude_conversations.json"
OPENWEBUI = EXPORTS / "openwebui_chats.json"


async def chats(store: AsyncSqliteStore) -> dict[str, tuple[Session, list[Message]]]:
    """Every session by title, with its messages."""
    return {s.title: (s, await store.messages(s.id)) for s in await store.list_sessions()}


def transcript(messages: list[Message]) -> list[str]:
    """Each message as ``role at time: text``."""
    return [f"{m.role} at {m.created_at}: {m.content}" for m in messages]


async def import_twice(store: AsyncSqliteStore, export: Path) -> tuple[Report, Report]:
    """The reports of importing ``export``, then importing it again."""
    return await import_export(store, export), await import_export(store, export)


async def imported_once(
    store: AsyncSqliteStore, export: Path
) -> tuple[Report, dict[str, tuple[Session, list[Message]]]]:
    """Import ``export`` twice: the first report and the chats by title, checked that the
    second import added nothing."""
    first, second = await import_twice(store, export)
    assert (second.chats, second.messages, second.already) == (0, 0, first.chats)
    return first, await chats(store)
