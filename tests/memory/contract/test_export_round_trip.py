"""Companion's export, read back (``companion export`` then ``companion import``) into an
empty Companion on the same backend: the same chats (titles, starts, every message of the
person and the assistant with its time) and the same memories (ids, times, strength);
a second import adds nothing; no secret is in the zip."""

from __future__ import annotations

import zipfile
from pathlib import Path

from app.exports import export_person
from app.imports import import_export
from memory import AsyncStore, Memory
from memory.postgres.store import PgStore
from memory.sqlite.async_store import AsyncSqliteStore
from memory.sqlite.store import SqliteStore
from tests.conftest import FIXED_NOW
from tests.memory.backends import new_person, ticking
from tests.support.person_data import fill
from tests.support.postgres import PostgresServer

SECRET = "sk-Secret-Marker-4711"
Chat = tuple[str, str, list[tuple[str, str, str]]]  # title, start, (role, text, time)


async def _empty(store: AsyncStore, tmp_path: Path, postgres: PostgresServer) -> AsyncStore:
    """An empty Companion on the same backend as ``store``."""
    if isinstance(store, PgStore):
        return await PgStore.open(
            postgres.url, new_person(), clock=ticking(), media_dir=tmp_path / "media"
        )
    return AsyncSqliteStore(SqliteStore.open_home(tmp_path / "empty", clock=ticking()))


async def _chats(store: AsyncStore) -> list[Chat]:
    """Each chat's title, start and its person's and assistant's messages, in order."""
    chats = []
    for session in await store.list_sessions():
        said = [
            (m.role, m.content, m.created_at)
            for m in await store.messages(session.id)
            if m.role in ("user", "assistant")
        ]
        chats.append((session.title, session.created_at, said))
    return sorted(chats)


async def _memories(store: AsyncStore) -> list[Memory]:
    return sorted(await store.ranked_memories(FIXED_NOW), key=lambda m: m.id)


async def test_an_export_imports_back_exactly(
    store: AsyncStore, tmp_path: Path, postgres: PostgresServer
) -> None:
    media = tmp_path / "person-media"
    if isinstance(store, PgStore):
        store = PgStore.for_person(store.pool, store.person, clock=ticking(), media_dir=media)
    await fill(store, "Quokkaberry")
    await store.set_profile({"api_key": SECRET, "base_url": "http://ann:pw@models.test/v1"})
    out = tmp_path / "export.zip"
    report = await export_person(store, store.media_dir, await store.profile(), out)
    assert (report.chats, report.messages, report.memories, report.images) == (2, 16, 2, 1)
    with zipfile.ZipFile(out) as archive:
        unpacked = b"".join(archive.read(name) for name in archive.namelist())
    assert SECRET.encode() not in unpacked and b"pw@" not in unpacked

    empty = await _empty(store, tmp_path, postgres)
    try:
        first = await import_export(empty, out)
        assert (first.chats, first.messages, first.memories) == (2, 15, 2)
        assert first.skipped == {"tool result": 1, "link to an image": 1}
        assert await _chats(empty) == await _chats(store)
        assert await _memories(empty) == await _memories(store)
        again = await import_export(empty, out)
        assert (again.chats, again.already, again.memories) == (0, 2, 0)
        assert await empty.count_messages() == 15
    finally:
        await empty.close()


async def test_an_export_read_back_where_it_came_from_adds_nothing(
    store: AsyncStore, tmp_path: Path
) -> None:
    await fill(store, "Quokkaberry", image=False)
    out = tmp_path / "export.zip"
    await export_person(store, tmp_path, {}, out)
    before = (await _chats(store), await _memories(store))
    report = await import_export(store, out)
    assert (report.chats, report.already, report.memories) == (0, 2, 0)
    assert (await _chats(store), await _memories(store)) == before
