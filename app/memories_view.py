"""The Memories tab: what the companion knows, by category, with edit and delete.

Rows come from ``memory.memories.list_memories``; an edit or a deletion is written to
the store at once, so the next turn's system message ("Your current memories") has it.
Deleting asks for a confirmation first. "Undo last SQL edit" puts back what the newest
memory_sql UPDATE replaced (memory.sql_journal), unless those rows changed since.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

import gradio as gr

from graph.context import Context
from memory.memories import (
    CATEGORIES,
    MemoryRecordError,
    delete_memory_by_id,
    list_memories,
    update_memory_by_id,
)
from memory.segments import recent_segments
from memory.sql_journal import EditConflict, undo_last_edit
from memory.store import Store

COLUMNS = ["category", "key", "value", "last recalled", "retrievability", "id"]
EPISODE_COLUMNS = ["from", "to", "session", "summary", "summary by"]
SUMMARY_KINDS = {"model": "the chat model", "extractive": "extractive fallback (no model)"}
EMPTY = "_No memories yet: they are made when you ask the companion to remember something._"


def memory_rows(store: Store, now: datetime) -> list[list[Any]]:
    """Table rows grouped by category (in the fixed category order), most retrievable first."""
    rows = list_memories(store, now)
    rows.sort(key=lambda row: CATEGORIES.index(row["category"]))
    return [
        [
            row["category"],
            row["key"],
            row["value"],
            row["last_recalled_at"] or "never",
            row["retrievability"],
            row["id"],
        ]
        for row in rows
    ]


def episode_rows(store: Store, limit: int = 50) -> list[list[str]]:
    """Episodic memory, newest first, each summary labelled with how it was written."""
    return [
        [
            segment.start_at[:16],
            segment.end_at[:16],
            segment.session_id,
            segment.summary,
            SUMMARY_KINDS.get(segment.summary_kind, segment.summary_kind),
        ]
        for segment in recent_segments(store, limit)
    ]


def build(make_context: Callable[[], Context], refresh: list[Any]) -> None:
    """Lay out the tab inside the current Blocks; ``refresh`` triggers reload the table."""
    ctx = make_context()
    store, clock = ctx.store, ctx.clock or ctx.store.clock
    table = gr.Dataframe(
        headers=COLUMNS,
        interactive=False,
        wrap=True,
        label="Memories (select a row to edit it)",
        elem_id="memories-table",
    )
    with gr.Row():
        memory_id = gr.Textbox(label="Memory id", interactive=False, elem_id="memory-id")
        category = gr.Dropdown(
            list(CATEGORIES), value=None, label="Category", elem_id="memory-category"
        )
        key = gr.Textbox(label="Key", elem_id="memory-key")
    value = gr.Textbox(label="Value", lines=2, elem_id="memory-value")
    with gr.Row():
        save = gr.Button("Save memory", variant="primary", elem_id="save-memory")
        delete = gr.Button("Delete memory", variant="stop", elem_id="delete-memory")
        confirm = gr.Button(
            "Yes, delete it", variant="stop", visible=False, elem_id="confirm-delete-memory"
        )
        cancel = gr.Button("Cancel", visible=False, elem_id="cancel-delete-memory")
        undo_sql = gr.Button("Undo last SQL edit", elem_id="undo-sql-edit")
    status = gr.Markdown(elem_id="memories-status")
    episodes = gr.Dataframe(
        headers=EPISODE_COLUMNS,
        interactive=False,
        wrap=True,
        label="Episodes (conversation spans and their summaries)",
        elem_id="episodes-table",
    )

    def rows() -> tuple[list[list[Any]], str]:
        found = memory_rows(store, clock())
        return found, "" if found else EMPTY

    def on_select(event: gr.SelectData) -> tuple[str, str, str, str]:
        row = event.row_value or [""] * len(COLUMNS)
        return row[5], row[0], row[1], row[2]

    def on_save(memory: str, cat: str, name: str, text: str) -> tuple[Any, str]:
        if not memory:
            return gr.skip(), "Select a memory in the table first."
        try:
            update_memory_by_id(store, memory, text, key=name, category=cat)
        except MemoryRecordError as exc:
            return gr.skip(), f"❌ Not saved: {exc}"
        return memory_rows(store, clock()), f"✅ Saved `{cat} / {name}`."

    def ask(memory: str) -> tuple[Any, Any, str]:
        if not memory:
            return gr.skip(), gr.skip(), "Select a memory in the table first."
        return gr.update(visible=True), gr.update(visible=True), "Delete this memory?"

    def on_delete(memory: str) -> tuple[Any, ...]:
        hidden = gr.update(visible=False)
        try:
            delete_memory_by_id(store, memory)
        except MemoryRecordError as exc:
            return gr.skip(), hidden, hidden, f"❌ {exc}", memory
        return memory_rows(store, clock()), hidden, hidden, "🗑️ Deleted.", ""

    def on_undo_sql() -> tuple[Any, str]:
        try:
            batch = undo_last_edit(store)
        except EditConflict as exc:
            return gr.skip(), f"❌ Not undone: {exc}"
        if batch is None:
            return gr.skip(), "Nothing to undo: no memory_sql edit is left."
        restored = ", ".join(edit.label for edit in batch.edits)
        return (
            memory_rows(store, clock()),
            f"↩️ Undid the SQL edit of {batch.created_at} UTC ({restored}).",
        )

    gr.on(refresh, rows, None, [table, status], api_name="memories")
    gr.on(refresh, lambda: episode_rows(store), None, episodes, api_name="episodes")
    table.select(on_select, None, [memory_id, category, key, value], api_visibility="private")
    save.click(
        on_save, [memory_id, category, key, value], [table, status], api_name="update_memory"
    )
    delete.click(ask, memory_id, [confirm, cancel, status], api_visibility="private")
    confirm.click(
        on_delete, memory_id, [table, confirm, cancel, status, memory_id], api_name="delete_memory"
    )
    undo_sql.click(on_undo_sql, None, [table, status], api_name="undo_sql_edit")
    cancel.click(
        lambda: (gr.update(visible=False), gr.update(visible=False), "Not deleted."),
        None,
        [confirm, cancel, status],
        api_visibility="private",
    )
