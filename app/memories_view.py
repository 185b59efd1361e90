"""The Memories tab: what the companion knows, by category, with add, edit and delete.

Rows come from the store's ranked memories (``AsyncStore.ranked_memories``), with when
each was added and last recalled (on the person's clock) and how well it is remembered
(its FSRS retrievability, in words and %). A memory added by hand, an edit or a deletion
is written to the store at once, so the next turn's system message ("Your current
memories") has it. Deleting asks for a confirmation first and clears the form. "Undo last
SQL edit" puts back what the newest memory_sql UPDATE replaced (its journal),
unless those rows changed since. Under them, "Your data" (``app.data_view``): import a
history from another app.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import gradio as gr

from app import data_view
from app.chat_handlers import ChatComponents
from app.chat_view import local_time
from graph.setup import ContextFactory, People
from memory import EditConflict, Memory, MemoryExists, MemoryRecordError, Segment
from memory.rules.memories import CATEGORIES

COLUMNS = ["category", "key", "value", "added", "last recalled", "remembered"]
# How well a memory is remembered, by its retrievability: the first floor it reaches.
STRENGTH_WORDS = ((0.9, "strong"), (0.7, "good"), (0.5, "fading"), (0.0, "faint"))
SEGMENT_COLUMNS = ["from", "to", "session", "summary", "summary by"]
SUMMARY_KINDS = {"model": "the chat model", "extractive": "extractive fallback (no model)"}
EMPTY = "_No memories yet: they are made when you ask the companion to remember something._"


def strength_words(retrievability: float) -> str:
    """How well a memory is remembered, for people: "strong (97%)"."""
    word = next(word for floor, word in STRENGTH_WORDS if retrievability >= floor)
    return f"{word} ({round(retrievability * 100)}%)"


def memory_rows(memories: list[Memory], now: datetime, tz: str) -> list[list[Any]]:
    """Table rows of ranked memories, grouped by category (in the fixed category order),
    most retrievable first within each; times on the person's clock."""
    grouped = sorted(memories, key=lambda memory: CATEGORIES.index(memory.category))
    return [
        [
            memory.category,
            memory.key,
            memory.value,
            local_time(memory.created_at, tz),
            local_time(memory.last_recalled_at, tz) if memory.last_recalled_at else "never",
            strength_words(memory.retrievability(now)),
        ]
        for memory in grouped
    ]


def segment_rows(segments: list[Segment]) -> list[list[str]]:
    """Episodic memory, newest first, each summary labelled with how it was written."""
    return [
        [
            segment.start_at[:16],
            segment.end_at[:16],
            segment.session_id,
            segment.summary,
            SUMMARY_KINDS.get(segment.summary_kind, segment.summary_kind),
        ]
        for segment in segments
    ]


NOT_DELETED = "Not deleted."
PICK_FIRST = "Select a memory in the table first."
NOTHING_TO_UNDO = "Nothing to undo: no memory_sql edit is left."


def cleared() -> tuple[str, None, str, str]:
    """The form emptied (id, category, key, value): the next save adds a new memory."""
    return "", None, "", ""


def ask(memory: str) -> tuple[Any, Any, str]:
    """Delete pressed: show "Yes, delete it" and Cancel, or ask for a row first."""
    if not memory:
        return gr.skip(), gr.skip(), PICK_FIRST
    return gr.update(visible=True), gr.update(visible=True), "Delete this memory?"


def keep_memory() -> tuple[Any, Any, str]:
    """Cancel: the confirmation goes, the memory stays."""
    return gr.update(visible=False), gr.update(visible=False), NOT_DELETED


class MemoriesHandlers:
    """The tab's handlers, each on the logged-in person's store (``people.factory``)."""

    def __init__(self, people: People) -> None:
        self.people = people

    async def table_rows(self, make_context: ContextFactory) -> list[list[Any]]:
        store = make_context.store
        now = store.clock()
        tz = (await make_context()).settings.timezone
        return memory_rows(await store.ranked_memories(now), now, tz)

    async def rows(self, request: gr.Request) -> tuple[list[list[Any]], str]:
        """The memories table, and the empty table's words."""
        found = await self.table_rows(self.people.factory(request.username))
        return found, "" if found else EMPTY

    async def segments_now(self, request: gr.Request) -> list[list[str]]:
        store = self.people.factory(request.username).store
        return segment_rows(await store.recent_segments())

    async def on_select(
        self, request: gr.Request, event: gr.SelectData
    ) -> tuple[str, str, str, str]:
        """A row selected: the form holds that memory (id, category, key, value)."""
        row = event.row_value or [""] * len(COLUMNS)
        # (category, key) names one memory: the row is found again whatever its position.
        store = self.people.factory(request.username).store
        memories = await store.ranked_memories(store.clock())
        found = next((m for m in memories if (m.category, m.key) == (row[0], row[1])), None)
        if found is None:
            return "", row[0], row[1], row[2]
        return found.id, found.category, found.key, found.value

    async def on_save(
        self, memory: str, cat: str, name: str, text: str, request: gr.Request
    ) -> tuple[Any, str, str]:
        """Save the form: edit the selected memory, or add one (the table, the status,
        the memory's id)."""
        make_context = self.people.factory(request.username)
        store = make_context.store
        try:
            if memory:
                await store.update_memory(memory, text, key=name, category=cat)
            else:
                memory = (await store.create_memory(cat or "", name, text)).id
        except MemoryExists:
            taken = f"❌ Not added: `{cat} / {name}` exists already; select it to edit it."
            return gr.skip(), taken, memory
        except MemoryRecordError as exc:
            return gr.skip(), f"❌ Not saved: {exc}", memory
        return await self.table_rows(make_context), f"✅ Saved `{cat} / {name}`.", memory

    async def on_delete(self, memory: str, request: gr.Request) -> tuple[Any, ...]:
        """The deletion confirmed: the memory goes and the form is cleared."""
        make_context = self.people.factory(request.username)
        hidden = gr.update(visible=False)
        try:
            await make_context.store.delete_memory(memory)
        except MemoryRecordError as exc:
            return gr.skip(), hidden, hidden, f"❌ {exc}", *(gr.skip(),) * 4
        return await self.table_rows(make_context), hidden, hidden, "🗑️ Deleted.", *cleared()

    async def on_undo_sql(self, request: gr.Request) -> tuple[Any, str]:
        """Put back what the newest memory_sql edit replaced, unless it changed since."""
        make_context = self.people.factory(request.username)
        try:
            batch = await make_context.store.undo_last_sql_edit()
        except EditConflict as exc:
            return gr.skip(), f"❌ Not undone: {exc}"
        if batch is None:
            return gr.skip(), NOTHING_TO_UNDO
        restored = ", ".join(edit.label for edit in batch.edits)
        return (
            await self.table_rows(make_context),
            f"↩️ Undid the SQL edit of {batch.created_at} UTC ({restored}).",
        )


def listing(headers: list[str], label: str, elem_id: str) -> gr.Dataframe:
    """A read-only table (a click selects a row)."""
    return gr.Dataframe(headers=headers, interactive=False, wrap=True, label=label, elem_id=elem_id)


def build(people: People, refresh: list[Any], chat: ChatComponents, upload_limit: int) -> None:
    """Lay out the tab inside the current Blocks and wire it to ``MemoriesHandlers``;
    ``refresh`` triggers reload the table. Under it, "Your data" (``app.data_view``: its
    imports fill ``chat``'s sidebar; ``upload_limit`` is the app's, in bytes)."""
    handlers = MemoriesHandlers(people)
    table = listing(
        COLUMNS,
        "Memories (select a row to edit it, or fill in the form to add one)",
        "memories-table",
    )
    with gr.Row():
        # The selected memory's id: empty when the form adds a new memory.
        memory_id = gr.Textbox(visible=False, elem_id="memory-id")
        category = gr.Dropdown(
            list(CATEGORIES), value=None, label="Category", elem_id="memory-category"
        )
        key = gr.Textbox(label="Key", elem_id="memory-key")
    value = gr.Textbox(label="Value", lines=2, elem_id="memory-value")
    with gr.Row():
        save = gr.Button("Save memory", variant="primary", elem_id="save-memory")
        new = gr.Button("New memory", elem_id="new-memory")
        delete = gr.Button("Delete memory", variant="stop", elem_id="delete-memory")
        confirm = gr.Button(
            "Yes, delete it", variant="stop", visible=False, elem_id="confirm-delete-memory"
        )
        cancel = gr.Button("Cancel", visible=False, elem_id="cancel-delete-memory")
        undo_sql = gr.Button("Undo last SQL edit", elem_id="undo-sql-edit")
    status = gr.Markdown(elem_id="memories-status")
    segments = listing(
        SEGMENT_COLUMNS, "Past conversations (each stretch of a chat, summarised)", "segments-table"
    )
    # Refreshed quietly when the tab is chosen (the status line says what is shown).
    gr.on(
        refresh, handlers.rows, None, [table, status], api_name="memories", show_progress="hidden"
    )
    gr.on(
        refresh, handlers.segments_now, None, segments, api_name="segments", show_progress="hidden"
    )
    form = [memory_id, category, key, value]
    table.select(handlers.on_select, None, form, api_visibility="private")
    save.click(handlers.on_save, form, [table, status, memory_id], api_name="update_memory")
    new.click(cleared, None, form, api_visibility="private")
    delete.click(ask, memory_id, [confirm, cancel, status], api_visibility="private")
    confirm.click(
        handlers.on_delete,
        memory_id,
        [table, confirm, cancel, status, *form],
        api_name="delete_memory",
    )
    undo_sql.click(handlers.on_undo_sql, None, [table, status], api_name="undo_sql_edit")
    cancel.click(keep_memory, None, [confirm, cancel, status], api_visibility="private")
    for changed in data_view.build(people, chat, refresh, upload_limit):
        changed.then(handlers.rows, None, [table, status], api_visibility="private")
        changed.then(handlers.segments_now, None, segments, api_visibility="private")
