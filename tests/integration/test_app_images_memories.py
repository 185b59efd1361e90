"""The Memories tab's add/delete form and the chat's image fidelity, through gradio_client."""

from __future__ import annotations

from pathlib import Path

from app.graph_view import plain
from evals.fixtures import ImageFixture
from graph.routing import NO_VISION_NOTICE
from memory.sqlite.memories import all_memories
from tests.integration.test_app_client import send, text_of


def test_a_memory_added_by_hand_is_in_the_table_and_the_next_turn(launch) -> None:
    app = launch(timezone="Asia/Tokyo")
    client = app.client()
    table, status, memory_id = client.predict(
        "", "identity", "name", "Budi", api_name="/update_memory"
    )
    assert status == "✅ Saved `identity / name`."
    (memory,) = all_memories(app.store)
    assert memory_id == memory.id and memory.value == "Budi"
    (row,) = table["data"]
    assert row[:3] == ["identity", "name", "Budi"]
    assert row[4:] == ["never", "strong (100%)"] and memory.id not in row
    assert row[3].startswith("2026-") and len(row[3]) == 16  # on the person's clock
    send(client, "who am I?")
    assert "- name: Budi" in app.system_message()

    _, status, _ = client.predict("", "identity", "Name", "Rina", api_name="/update_memory")
    assert status.startswith("❌ Not added") and all_memories(app.store)[0].value == "Budi"


def test_an_invalid_memory_is_not_added(launch) -> None:
    app = launch()
    _, status, memory_id = app.client().predict(
        "", "identity", "name", "", api_name="/update_memory"
    )
    assert status.startswith("❌ Not saved") and memory_id == ""
    assert all_memories(app.store) == []


def test_deleting_a_memory_clears_the_form(launch) -> None:
    app = launch()
    client = app.client()
    _, _, memory_id = client.predict("", "focus", "project", "thesis", api_name="/update_memory")
    table, status, memory_id, category, key, value = client.predict(
        memory_id, api_name="/delete_memory"
    )
    assert status == "🗑️ Deleted." and table["data"] in ([], [["", "", "", "", "", ""]])
    assert (memory_id, category, key, value) == ("", None, "", "")
    assert all_memories(app.store) == []


def test_a_text_file_goes_to_the_model_as_text(launch, tmp_path: Path) -> None:
    app = launch()
    upload = tmp_path / "notes.txt"
    upload.write_text("shopping list: jasmine tea, rice")
    chat, *_ = send(app.client(), "look at my notes", [str(upload)])
    assert text_of(chat[0]) == "📎 **notes\\.txt** · text look at my notes"
    asked = app.model.calls[-1]["messages"][-1].content
    assert asked.startswith("look at my notes\n\n[Attached file “notes.txt”: its text follows")
    assert "shopping list: jasmine tea, rice" in asked
    [stored, _] = app.store.messages(app.store.list_sessions()[0].id)
    assert stored.content == "look at my notes" and stored.meta["attachment"]["kind"] == "text"


def test_an_image_url_without_an_extension_is_attached(launch) -> None:
    with ImageFixture() as images:
        app = launch(allow_private_urls="true")
        client = app.client()
        chat, *_ = send(client, f"what is this? {images.url}/prompt/a-black-cat.")
        missing, *_ = send(client, f"and this page {images.url}/nothing-here")
    assert [part["type"] for part in chat[0]["content"]] == ["file", "text"]
    first, _, second, _ = app.store.messages(app.store.list_sessions()[0].id)
    assert first.image_path and Path(first.image_path).parent == app.home / "media"
    assert Path(first.image_path).suffix == ".jpg"
    assert second.role == "user" and second.image_path is None
    assert [part["type"] for part in missing[2]["content"]] == ["text"]


def test_without_a_vision_model_the_chat_says_so_once(launch) -> None:
    with ImageFixture() as images:
        app = launch(**images.settings_overrides())
        client = app.client()
        chat, _, _, trace, *_ = send(client, "draw me a cat")
        again, *_ = send(client, "draw me a cat")
    assert text_of(chat[-1]) == f"ℹ️ {NO_VISION_NOTICE}"
    assert plain("no_vision_model") in trace
    assert f"ℹ️ {NO_VISION_NOTICE}" not in [text_of(m) for m in again]  # told once already
