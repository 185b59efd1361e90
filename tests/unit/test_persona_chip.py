"""The active persona in the chat (issue 22, item 7): a chip above the chat with the
persona's initial in a circle and its name (HTML), filled on the page load and whenever a tab
is chosen, so a persona saved in Settings shows on coming back to the chat; and next to
the identity block in Settings, the sentence on how a style note combines with it."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import gradio as gr

from app import chat_tab, settings_view
from app.chat_handlers import ChatHandlers, Chats
from app.chat_tab import layout, sidebar
from app.chat_view import EDITED_IDENTITY, persona_chip
from app.settings_view import NOTE_OPENING, WITH_A_STYLE_NOTE, SettingsHandlers, form_values
from config.settings import Settings
from prompts.templates import persona_text, style_paragraph
from tests.support.app_fakes import OnePerson, person, request


def chip_parts(chip: str) -> tuple[str, str]:
    """(the avatar's letter, the rest of the chip's text) of ``persona_chip``'s HTML."""
    match = re.fullmatch(
        r'<div class="persona-chip"><span style="[^"]*">([^<]+)</span>(.*)</div>', chip
    )
    assert match, chip
    return match[1], match[2]


def test_the_chip_is_the_persona_initial_in_a_circle_and_its_name() -> None:
    assert chip_parts(persona_chip(Settings())) == ("Y", "<strong>Yuzuki</strong>")
    journal = persona_chip(Settings(persona="journal"))
    assert chip_parts(journal) == ("J", "<strong>Journal</strong>")
    assert "border-radius:50%" in persona_chip(Settings())
    edited = persona_chip(Settings(persona="journal", identity="You are Ada, terse."))
    assert chip_parts(edited) == ("J", f"<strong>Journal</strong> · {EDITED_IDENTITY}")
    tag = persona_chip(Settings(persona="<b>"))  # made inert, whatever a name holds
    assert chip_parts(tag) == ("&lt;", "<strong>&lt;b&gt;</strong>")


async def test_the_chip_follows_a_persona_saved_in_settings(tmp_path: Path) -> None:
    people: Any = OnePerson(person(tmp_path))
    with gr.Blocks():
        ui = layout(gr.Markdown(), sidebar()).ui
    chat = ChatHandlers(Chats(people, gr.Markdown()), ui)
    assert chip_parts(await chat.persona(request())) == ("Y", "<strong>Yuzuki</strong>")

    shown = form_values((await people.one()).settings)
    form = [{**shown, "persona": "journal"}[key] for key in settings_view.FORM_KEYS]
    message, _, saved = await SettingsHandlers(people).on_save(
        request(), *form, persona_text("journal")
    )
    assert saved, message
    assert chip_parts(await chat.persona(request())) == ("J", "<strong>Journal</strong>")


def test_the_chip_is_filled_on_load_and_when_a_tab_is_chosen(tmp_path: Path) -> None:
    people: Any = OnePerson(person(tmp_path))
    with gr.Blocks() as demo:
        trace = gr.Markdown(render=False)
        side = sidebar()
        with gr.Tabs() as tabs, gr.Tab("Chat"):
            chat_tab.build(people, trace, demo.load, side, tabs)
    config = demo.get_config_file()
    chip = next(
        c["id"] for c in config["components"] if c["props"].get("elem_id") == "persona-chip"
    )
    filling = [d for d in config["dependencies"] if d["outputs"] == [chip]]
    assert len(filling) == 1
    assert set(filling[0]["targets"]) == {(demo._id, "load"), (tabs._id, "select")}


def test_settings_says_how_a_style_note_combines_with_the_persona(tmp_path: Path) -> None:
    note = style_paragraph(["answer in bullet points"])
    assert note is not None and note.startswith(f"{NOTE_OPENING} answer in bullet points")
    assert f"“{NOTE_OPENING} …” after this identity block" in WITH_A_STYLE_NOTE
    assert "for one message" in WITH_A_STYLE_NOTE and "the persona stays" in WITH_A_STYLE_NOTE
    with gr.Blocks() as demo:
        settings_view.build(OnePerson(person(tmp_path)), demo.load, demo.load)  # type: ignore[arg-type]
    shown = [
        (c["props"].get("elem_id"), c["props"].get("value")) for c in demo.config["components"]
    ]
    identity = [name for name, _ in shown].index("set-identity")
    assert shown[identity + 1] == ("persona-style-note", WITH_A_STYLE_NOTE)
