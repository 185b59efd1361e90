"""The app's API for scripts (app.api) through gradio_client against a launched app: the
README's example runs as written, a chat goes on by its id, bad input is an error that
stores nothing, a page's chat and a script's share one store, and with accounts each
script acts for the person it logged in as."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from gradio_client.exceptions import AppError

ROOT = Path(__file__).resolve().parents[2]


def readme_example() -> str:
    """The Python block of the README's "Use it from code" section."""
    section = (ROOT / "README.md").read_text().split("### Use it from code", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match, "the README's Use it from code section has a python example"
    return match.group(1)


def test_the_readme_example_runs_as_written(launch, capsys) -> None:
    app = launch()
    code = readme_example().replace('"http://127.0.0.1:7860/"', repr(app.url))
    scope: dict[str, Any] = {}
    exec(compile(code, "README.md", "exec"), scope)
    assert scope["answer"] == "You said: What is 2+2?"
    assert scope["again"] == "You said: And times 3?"
    assert [c["title"] for c in scope["chats"]] == ["What is 2+2?"]
    assert [(m["role"], m["text"]) for m in scope["said"]] == [
        ("user", "What is 2+2?"),
        ("assistant", "You said: What is 2+2?"),
        ("user", "And times 3?"),
        ("assistant", "You said: And times 3?"),
    ]
    assert "You said: What is 2+2? You said: And times 3?" in capsys.readouterr().out


def test_new_chat_then_send_into_it_and_the_store_has_it(launch) -> None:
    app = launch()
    client = app.client()
    chat = client.predict("Trip plans", api_name="/new_chat")
    answer, same = client.predict("Pack the tent", chat, "answer in one word", api_name="/send")
    assert same == chat and answer == "You said: Pack the tent"
    assert app.store.get_session(chat).title == "Trip plans"
    assert "answer in one word" in app.system_message()  # the note reached this reply


@pytest.mark.parametrize("inputs", [("hello", "no-such-chat"), ("   ",), ("x" * 200_001,)])
def test_bad_input_is_an_error_and_nothing_is_stored(launch, inputs) -> None:
    app = launch()
    with pytest.raises(AppError):
        app.client().predict(*inputs, api_name="/send")
    assert app.store.list_sessions() == []


def test_with_accounts_each_script_acts_for_its_person(with_accounts) -> None:
    app = with_accounts()
    ann, bob = app.client("ann"), app.client("bob")
    _, chat = ann.predict("ann's secret plan", api_name="/send")
    assert [c["id"] for c in ann.predict(api_name="/list_chats")] == [chat]
    assert bob.predict(api_name="/list_chats") == []
    with pytest.raises(AppError):
        bob.predict(chat, api_name="/history")  # ann's chat is no chat of bob's
