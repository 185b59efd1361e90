"""The app launched on a free port around a scripted model, driven with gradio_client."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from gradio_client import Client, handle_file

from evals.fixtures import ImageFixture, cat_image
from memory.sqlite.memories import create_memory
from memory.sqlite.segments import list_segments
from prompts.templates import persona_text
from tests.integration.conftest import settings_form


def send(
    client: Client,
    text: str,
    files: list[str] | None = None,
    *,
    note: str = "",
    keep: bool = False,
) -> tuple[Any, ...]:
    """The outputs of the turn's last update (chat, composer, model line, trace, then the
    style-note components) after sending ``text`` with an optional style note."""
    message = {"text": text, "files": [handle_file(f) for f in files or []]}
    return tuple(client.predict(message, note, keep, api_name="/send_streamed"))


def text_of(message: dict[str, Any]) -> str:
    return " ".join(p["text"] for p in message["content"] if p.get("type") == "text")


def test_a_message_gets_its_answer_and_the_model_line(launch) -> None:
    app = launch()
    chat, _, line, trace, *_ = send(app.client(), "hello there")
    assert [(m["role"], text_of(m)) for m in chat] == [
        ("user", "hello there"),
        ("assistant", "You said: hello there"),
    ]
    assert line == "model: scripted-chat"
    assert "build_context → call_model" in trace


def test_a_tool_step_is_its_own_collapsed_message(launch) -> None:
    chat, *_ = send(launch().client(), "How's the weather?")
    step = chat[1]
    assert step["metadata"]["title"] == (
        "Weather: needs your location → [set it in Settings](#set-location)"
    )
    assert step["metadata"]["status"] == "done" and step["metadata"]["log"].endswith(" s")
    assert "location_not_set" in text_of(step)
    assert "TOOL RESULT" not in text_of(chat[2])


def test_sessions_persist_after_rebuilding_the_app(launch) -> None:
    first = launch()
    client = first.client()
    send(client, "remember this conversation")
    session_id = first.store.list_sessions()[0].id
    client.predict(session_id, "Trip plans", api_name="/rename_session")
    assert first.store.get_session(session_id).title == "Trip plans"

    again = launch().client()
    chat, line, _ = again.predict(api_name="/load")
    assert [text_of(m) for m in chat] == [
        "remember this conversation",
        "You said: remember this conversation",
    ]
    assert line == "model: scripted-chat"


def test_new_switch_and_delete_sessions(launch) -> None:
    app = launch()
    client = app.client()
    send(client, "first chat")
    first_id = app.store.list_sessions()[0].id
    client.predict(api_name="/new_session")
    send(client, "second chat")
    second_id = app.store.list_sessions()[0].id
    assert second_id != first_id
    chat = client.predict(first_id, api_name="/switch_session")
    assert text_of(chat[0]) == "first chat"
    chat = client.predict(first_id, api_name="/delete_session")
    assert [s.id for s in app.store.list_sessions()] == [second_id]
    assert text_of(chat[0]) == "second chat"


def test_new_chat_stores_nothing_until_the_first_message(launch) -> None:
    app = launch()
    client = app.client()
    send(client, "first chat")
    client.predict(api_name="/new_session")
    client.predict(api_name="/new_session")
    assert len(app.store.list_sessions()) == 1  # no empty chats
    send(client, "second chat")
    assert [s.title for s in app.store.list_sessions()] == ["second chat", "first chat"]


def test_retry_answers_the_last_message_again_in_place_of_its_answer(launch) -> None:
    app = launch()
    client = app.client()
    send(client, "hello there")
    session_id = app.store.list_sessions()[0].id
    before = app.store.messages(session_id)
    chat, *_ = client.predict(api_name="/retry")
    after = app.store.messages(session_id)
    assert after[0].id == before[0].id  # the same question
    assert after[1].id != before[1].id and after[1].content == before[1].content
    assert len(after) == 2 and app.store.get_message(before[1].id) is None
    assert [text_of(m) for m in chat] == ["hello there", "You said: hello there"]


def test_leaving_a_chat_turns_it_into_an_episode(launch) -> None:
    app = launch()
    client = app.client()
    send(client, "Tonight I cooked nasi goreng")
    first_id = app.store.list_sessions()[0].id
    assert list_segments(app.store, first_id) == []  # open: the chat is still going on
    client.predict(api_name="/new_session")
    deadline = time.monotonic() + 10
    while not list_segments(app.store, first_id) and time.monotonic() < deadline:
        time.sleep(0.05)
    (segment,) = list_segments(app.store, first_id)
    assert "nasi goreng" in segment.summary


def test_two_clients_keep_their_own_sessions(launch) -> None:
    app = launch()
    one, two = app.client(), app.client()
    send(one, "from one")
    two.predict(api_name="/new_session")
    chat, *_ = send(two, "from two")
    assert [text_of(m) for m in chat] == ["from two", "You said: from two"]
    chat, *_ = send(one, "again from one")
    assert text_of(chat[0]) == "from one"


def test_invalid_settings_are_refused_and_valid_ones_change_the_next_turn(launch) -> None:
    app = launch()
    client = app.client()
    status, _ = client.predict(*settings_form(latitude=123), "", api_name="/save_settings")
    assert status.startswith("❌ Not saved: latitude must be between -90 and 90")
    status, _ = client.predict(*settings_form(chat_model="  "), "", api_name="/save_settings")
    assert "chat model cannot be empty" in status
    chat, *_ = send(client, "weather please")
    assert "location_not_set" in text_of(chat[-1])

    status, identity = client.predict(
        *settings_form(latitude=35.68, longitude=139.69, persona="assistant"),
        "",
        api_name="/save_settings",
    )
    assert status.startswith("✅ Saved") and "(35.68, 139.69)" in status
    assert app.store.profile()["latitude"] == "35.68"
    assert identity  # the assistant persona's own identity block
    chat, *_ = send(client, "weather please")
    assert text_of(chat[-1]).startswith("Tool says: 35.68, 139.7: 14.2 °C, overcast")


def test_edited_identity_is_saved_as_the_identity(launch) -> None:
    app = launch()
    client = app.client()
    client.predict(*settings_form(), "You are Captain Hook.", api_name="/save_settings")
    assert app.store.profile()["identity"] == "You are Captain Hook."
    send(client, "ahoy")
    assert app.system_message().startswith("You are Captain Hook.")


def test_style_note_for_one_message_or_kept_for_the_chat(launch) -> None:
    app = launch()
    client = app.client()
    yuzuki = persona_text("yuzuki")
    send(client, "one", note="Talk like a pirate.")
    (session,) = app.store.list_sessions()
    assert app.store.style_note(session.id) is None  # for one message: nothing is kept
    assert app.system_message().startswith(f"{yuzuki}\n\nFor this reply: Talk like a pirate.")
    send(client, "two")
    assert app.system_message().startswith(yuzuki)
    assert "Talk like a pirate" not in app.system_message()

    send(client, "three", note="Answer in haiku.", keep=True)
    assert app.store.style_note(session.id) == "Answer in haiku."
    send(client, "four")
    for call in (-2, -1):
        assert app.system_message(call).startswith(f"{yuzuki}\n\nFor this reply: Answer in haiku.")
    assert "identity" not in app.store.profile()  # the persona is never overwritten
    client.predict(api_name="/remove_style_note")
    send(client, "five")
    assert "For this reply" not in app.system_message()


def test_edited_memory_reaches_the_next_system_message(launch) -> None:
    app = launch()
    memory = create_memory(app.store, "identity", "name", "Budi")
    client = app.client()
    table, _ = client.predict(api_name="/memories")
    assert table["data"][0][:3] == ["identity", "name", "Budi"]
    table, status, _ = client.predict(
        memory.id, "identity", "name", "Rina", api_name="/update_memory"
    )
    assert status.startswith("✅") and table["data"][0][2] == "Rina"
    send(client, "who am I?")
    assert "- name: Rina" in app.system_message()
    assert "Budi" not in app.system_message()

    client.predict(memory.id, api_name="/delete_memory")
    send(client, "and now?")
    assert "Rina" not in app.system_message()


def test_uploaded_image_and_its_text_are_one_bubble(launch, tmp_path: Path) -> None:
    app = launch()
    upload = tmp_path / "photo.png"
    upload.write_bytes(cat_image("black"))
    chat, *_ = send(app.client(), "what is this?", [str(upload)])
    kinds = [part["type"] for part in chat[0]["content"]]
    assert chat[0]["role"] == "user" and kinds == ["file", "text"]
    downloaded = Path(chat[0]["content"][0]["file"])  # the client fetched it from the app
    assert downloaded.read_bytes() == upload.read_bytes()
    stored = app.store.messages(app.store.list_sessions()[0].id)[0]
    assert stored.image_path and Path(stored.image_path).parent == app.home / "media"


def test_a_non_image_upload_blocks_the_send_and_the_text_stays(launch, tmp_path: Path) -> None:
    app = launch()
    upload = tmp_path / "notes.png"
    upload.write_text("not an image")
    chat, box, *_, notice = send(app.client(), "look", [str(upload)])
    said = notice["value"]
    assert said.startswith("⚠️ “notes.png” is not an image Companion can read. Only images")
    assert notice["visible"] is True and "Error" not in said  # words, never a class name
    assert chat == {"__type__": "update"}  # the chat is left as it is
    assert box == {"text": "look", "files": []} and app.store.list_sessions() == []


def test_a_pasted_image_url_is_downloaded_like_an_upload(launch) -> None:
    with ImageFixture() as images:
        app = launch(allow_private_urls="true")
        url = f"{images.url}/images/black-cat.png"
        chat, *_ = send(app.client(), f"look at this {url}")
    assert [part["type"] for part in chat[0]["content"]] == ["file", "text"]
    stored = app.store.messages(app.store.list_sessions()[0].id)[0]
    assert stored.image_path and Path(stored.image_path).parent == app.home / "media"


def test_a_generated_image_is_in_the_answer_bubble(launch) -> None:
    with ImageFixture() as images:
        app = launch(**images.settings_overrides())
        chat, *_ = send(app.client(), "draw me a cat")
    step, answer = chat[1], chat[2]
    assert step["metadata"]["title"] == "Drew an image: a black cat"
    assert [part["type"] for part in answer["content"]] == ["file", "text"]
    assert Path(answer["content"][0]["file"]).read_bytes().startswith(b"\x89PNG")
    assert text_of(answer).startswith("Tool says:")


def test_provider_failure_is_readable_and_the_app_keeps_working(launch) -> None:
    app = launch()
    client = app.client()
    chat, *_ = send(client, "please fail")
    assert text_of(chat[-1]).startswith("⚠️ Sorry — I couldn't reach the language model")
    chat, *_ = send(client, "and now?")
    assert text_of(chat[-1]) == "You said: and now?"


def test_password_protects_the_app(launch) -> None:
    app = launch(password="s3cret")
    with pytest.raises(ValueError):
        app.client()
    chat, *_ = send(app.client(auth=("companion", "s3cret")), "hi")
    assert text_of(chat[-1]) == "You said: hi"


def test_a_too_long_message_stays_in_the_composer_and_nothing_is_stored(launch) -> None:
    app = launch(max_message_chars=50)
    client = app.client()
    chat, box, *_, notice = send(client, "x" * 51)
    assert notice["value"] == (
        "⚠️ That message is 51 characters long; the limit is 50 (COMPANION_MAX_MESSAGE_CHARS). "
        "Shorten it, send it in parts, or attach it as a .txt file (its first 20,000 "
        "characters go to Companion)."
    )
    assert chat == {"__type__": "update"}  # no answer bubble, so no Retry to press
    assert box["text"] == "x" * 51
    assert app.store.list_sessions() == [] and app.model.calls == []
    chat, *_ = send(client, "x" * 50)
    assert text_of(chat[-1]) == f"You said: {'x' * 50}"


@pytest.mark.parametrize(
    ("pragma", "error"),
    [
        ("PRAGMA query_only = ON", "attempt to write a readonly database"),
        ("PRAGMA max_page_count = {pages}", "database or disk is full"),
    ],
)
def test_a_database_that_cannot_write_says_so_and_keeps_the_message(
    launch, pragma: str, error: str
) -> None:
    app = launch()
    client = app.client()
    send(client, "first")
    pages = app.store.conn.execute("PRAGMA page_count").fetchone()[0]
    # Every connection the app's store opened (one per thread, and the event loop's own)
    # refuses writes from now on: read-only, or no room for one more page, as a full disk
    # would.
    for conn in [*app.store._connections, *app.graph_store._inline._connections]:
        conn.execute(pragma.format(pages=pages))
    text = "second " * 3000  # needs new pages, so even the "full" database refuses it
    chat, box, *_ = send(client, text)
    assert text_of(chat[-1]) == (
        f"⚠️ Companion can't write to its database (disk full or read-only): {error}"
    )
    assert box["text"] == text  # given back to the composer
    stored = app.store.messages(app.store.list_sessions()[0].id)
    assert [m.content for m in stored] == ["first", "You said: first"]
