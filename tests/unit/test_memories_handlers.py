"""The Memories tab's handlers (app.memories_view.MemoriesHandlers and its form helpers),
called as Gradio would call them, on a store in a temporary home: no browser."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gradio as gr
import pytest

from app import memories_view
from app.memories_view import (
    EMPTY,
    NOT_DELETED,
    NOTHING_TO_UNDO,
    PICK_FIRST,
    MemoriesHandlers,
    ask,
    cleared,
    keep_memory,
)
from tests.support.app_fakes import OnePerson, person, request


@pytest.fixture
def tab(tmp_path: Path) -> MemoriesHandlers:
    return MemoriesHandlers(OnePerson(person(tmp_path)))  # type: ignore[arg-type]


def store_of(tab: MemoriesHandlers) -> Any:
    return tab.people.factory(None).store


def values(table: list[list[Any]]) -> list[tuple[str, str, str]]:
    return [(row[0], row[1], row[2]) for row in table]


async def test_the_table_and_the_empty_table(tab: MemoriesHandlers) -> None:
    assert await tab.rows(request()) == ([], EMPTY)
    await store_of(tab).create_memory("signals", "drink", "kopi")
    table, words = await tab.rows(request())
    assert values(table) == [("signals", "drink", "kopi")] and words == ""
    assert await tab.segments_now(request()) == []


async def test_save_adds_then_edits_the_selected_memory(tab: MemoriesHandlers) -> None:
    table, status, memory = await tab.on_save("", "signals", "drink", "kopi", request())
    assert values(table) == [("signals", "drink", "kopi")] and status.startswith("✅ Saved")
    table, status, same = await tab.on_save(memory, "signals", "drink", "teh", request())
    assert same == memory and values(table) == [("signals", "drink", "teh")]


async def test_save_refuses_a_duplicate_and_a_bad_memory(tab: MemoriesHandlers) -> None:
    await tab.on_save("", "signals", "drink", "kopi", request())
    table, status, memory = await tab.on_save("", "signals", "drink", "teh", request())
    assert table == gr.skip() and "exists already" in status and memory == ""
    table, status, memory = await tab.on_save("", "", "drink", "teh", request())
    assert table == gr.skip() and status.startswith("❌ Not saved")
    assert values((await tab.rows(request()))[0]) == [("signals", "drink", "kopi")]


async def test_selecting_a_row_fills_the_form(tab: MemoriesHandlers) -> None:
    made = await store_of(tab).create_memory("identity", "name", "Budi")
    picked = gr.SelectData(
        None, {"index": [0, 2], "value": "Budi", "row_value": ["identity", "name", "Budi"]}
    )
    assert await tab.on_select(request(), picked) == (made.id, "identity", "name", "Budi")
    gone = gr.SelectData(None, {"index": [0, 2], "value": "x", "row_value": ["focus", "x", "y"]})
    assert await tab.on_select(request(), gone) == ("", "focus", "x", "y")


async def test_delete_asks_first_then_deletes_and_clears_the_form(tab: MemoriesHandlers) -> None:
    made = await store_of(tab).create_memory("identity", "name", "Budi")
    assert ask("") == (gr.skip(), gr.skip(), PICK_FIRST)
    confirm, cancel, words = ask(made.id)
    assert confirm["visible"] and cancel["visible"] and words == "Delete this memory?"
    assert keep_memory()[2] == NOT_DELETED
    table, confirm, cancel, status, *form = await tab.on_delete(made.id, request())
    assert table == [] and status == "🗑️ Deleted." and tuple(form) == cleared()
    assert not confirm["visible"] and not cancel["visible"]


async def test_deleting_a_memory_that_is_gone_says_so(tab: MemoriesHandlers) -> None:
    table, _, _, status, *form = await tab.on_delete("no-such-id", request())
    assert table == gr.skip() and status.startswith("❌") and form == [gr.skip()] * 4


async def test_undo_puts_back_the_last_sql_edit(tab: MemoriesHandlers) -> None:
    store = store_of(tab)
    assert await tab.on_undo_sql(request()) == (gr.skip(), NOTHING_TO_UNDO)
    await store.create_memory("identity", "name", "Budi")
    await store.run_sql("UPDATE memories SET value = 'Rina'", now=store.clock())
    table, status = await tab.on_undo_sql(request())
    assert status.startswith("↩️ Undid the SQL edit") and values(table)[0][2] == "Budi"


async def test_undo_refused_when_the_rows_changed_since(
    tab: MemoriesHandlers, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def conflict() -> Any:
        raise memories_view.EditConflict("memories 1 changed since")

    monkeypatch.setattr(store_of(tab), "undo_last_sql_edit", conflict)
    table, status = await tab.on_undo_sql(request())
    assert table == gr.skip() and status == "❌ Not undone: memories 1 changed since"
