"""The Memories tab's "Undo last SQL edit", driven with gradio_client against the launched app."""

from __future__ import annotations

from memory.sqlite.memories import create_memory
from memory.sqlite.sql_guard import run_sql


def test_undo_last_sql_edit_from_the_memories_tab(launch) -> None:
    app = launch()
    create_memory(app.store, "identity", "name", "Budi")
    assert run_sql(app.store.path, "UPDATE memories SET value = 'Rina'") == {"updated": 1}
    client = app.client()
    table, _ = client.predict(api_name="/memories")
    assert table["data"][0][2] == "Rina"

    table, status = client.predict(api_name="/undo_sql_edit")
    assert status.startswith("↩️ Undid the SQL edit") and table["data"][0][2] == "Budi"
    _, status = client.predict(api_name="/undo_sql_edit")
    assert status.startswith("Nothing to undo")


def test_undo_refuses_when_the_row_changed_since(launch) -> None:
    app = launch()
    memory = create_memory(app.store, "identity", "name", "Budi")
    run_sql(app.store.path, "UPDATE memories SET value = 'Rina'")
    client = app.client()
    client.predict(memory.id, "identity", "name", "Sari", api_name="/update_memory")

    _, status = client.predict(api_name="/undo_sql_edit")
    assert status.startswith("❌ Not undone") and f"memories {memory.id}" in status
    table, _ = client.predict(api_name="/memories")
    assert table["data"][0][2] == "Sari"
