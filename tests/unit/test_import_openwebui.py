"""Open WebUI's chat export: the path to history.currentId, epoch-second times, system
messages left out; a second import adds nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.imports import import_export
from app.imports.common import epoch
from memory.sqlite.async_store import AsyncSqliteStore
from tests.support.exports import OPENWEBUI, imported_once, transcript


async def test_each_chat_keeps_the_branch_to_current_id_with_its_times(
    async_store: AsyncSqliteStore,
) -> None:
    first, found = await imported_once(async_store, OPENWEBUI)
    assert (first.source, first.chats, first.messages) == ("Open WebUI", 2, 6)
    assert first.skipped == {"system message": 1}
    session, messages = found["Marathon plan"]
    assert session.created_at == "2024-09-01 09:00:00"
    assert transcript(messages) == [
        "user at 2024-09-01 09:00:10: I'm training for the Berlin marathon on 29 September.",
        "assistant at 2024-09-01 09:00:30: Great goal! Taper in the last two weeks before Berlin.",
        "user at 2024-09-01 09:01:00: My long run pace is 5:45 per km.",
        "assistant at 2024-09-01 09:01:15: That pace suits a sub-4-hour finish.",
    ]
    family = found["Family"][1]
    assert [m.role for m in family] == ["user", "assistant"]  # the system prompt is not kept


@pytest.mark.parametrize(
    "stamp", [1725181210, 1725181210.0, 1725181210_000, 1725181210_000_000_000]
)
def test_epoch_times_in_seconds_or_finer_units_are_the_same_moment(stamp: float) -> None:
    moment = epoch(stamp)
    assert moment is not None and moment.isoformat() == "2024-09-01T09:00:10+00:00"


async def test_without_current_id_the_branch_chat_messages_shows_is_kept(
    tmp_path: Path, async_store: AsyncSqliteStore
) -> None:
    chats = json.loads(OPENWEBUI.read_text(encoding="utf-8"))
    del chats[0]["chat"]["history"]["currentId"]
    export = tmp_path / "chats.json"
    export.write_text(json.dumps(chats), encoding="utf-8")
    report = await import_export(async_store, export)
    assert (report.chats, report.messages) == (2, 6)
    marathon = [s for s in await async_store.list_sessions() if s.title == "Marathon plan"]
    said = [m.content for m in await async_store.messages(marathon[0].id)]
    assert "A first answer the person regenerated." not in said and len(said) == 4
