"""The Chat tab's event graph as Gradio's page receives it (the Blocks config).

Showing another chat (switch, New chat, a click in the list or a search result, delete)
cancels the page's following of the chat in view, in a listener of its own: a listener's
cancels run only once that listener's handler is done, so cancels on the handler's own
listener cancelled a message sent while the new chat opened (it stayed in the composer).
The cancel listener is wired before the handler (the page runs one trigger's listeners in
order); a second one, wired after every switch, stops what a switch before is following.
The cancel listener also brings the Chat tab forward in the page, with the click.

The Settings tab's Verify lets go the check of the endpoint in effect (the page's load's,
the tab's opening's), in a listener of its own wired first: landing late, it hid Verify's
answer.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from app.chat_tab import SHOW_CHAT_TAB
from app.ui import build_app
from graph.setup import ContextFactory, People
from tests.e2e.harness import policy
from tests.support.chat_model import ScriptedChatModel


def dependencies(home: Path) -> list[dict[str, Any]]:
    model = ScriptedChatModel(script=policy, name_="scripted-chat")
    flags = {"home": home, "provider": "openai-compatible", "base_url": "http://127.0.0.1:9/v1"}
    demo = build_app(People.single(ContextFactory(flags, env={}, chat_model=model)))
    return list(demo.get_config_file()["dependencies"])


def test_a_shown_chat_cancels_the_followers_in_a_listener_of_its_own(tmp_path: Path) -> None:
    deps = dependencies(tmp_path / "home")
    sends = {d["id"] for d in deps if d.get("api_name") == "send_streamed"}
    cancelling = [d for d in deps if sends & set(d.get("cancels") or [])]
    shows = {"switch_session", "new_session", "delete_session"}
    assert {d.get("api_name") for d in deps} >= shows
    # switch, New chat, a row opened, a search result opened, delete in a row, delete
    assert len(cancelling) == 6
    for cancel in cancelling:
        # A listener's cancels run once its handler is done: on a handler's own listener
        # they would cancel a message sent while the new chat opened.
        assert not cancel["backend_fn"], cancel
        trigger = cancel["targets"][0]
        handlers = [
            d for d in deps if trigger in d["targets"] and d["backend_fn"] and d is not cancel
        ]
        assert handlers, f"nothing is shown on {trigger}"
        assert all(not sends & set(d.get("cancels") or []) for d in handlers), handlers
        assert all(cancel["id"] < d["id"] for d in handlers), (cancel, handlers)
        # The Chat tab comes forward in the page, with the click (not with the answer).
        assert [d for d in deps if trigger in d["targets"] and d["js"] == SHOW_CHAT_TAB]


def test_verify_lets_the_endpoint_check_in_effect_go_first(tmp_path: Path) -> None:
    deps = dependencies(tmp_path / "home")
    checked = {d["id"] for d in deps if d.get("api_name") == "endpoint_status"}
    (verify,) = [d for d in deps if d.get("api_name") == "verify"]
    (cancel,) = [d for d in deps if checked & set(d.get("cancels") or [])]
    assert not cancel["backend_fn"] and cancel["targets"] == verify["targets"]
    assert cancel["id"] < verify["id"]
