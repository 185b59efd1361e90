"""An MCP tool's step in the chat reads as people talk: the server, then the tool."""

from __future__ import annotations

from app.chat_view import step_title

DONE = {"content": "Note about milk"}
FAILED = {"error": "notes__search_notes timed out after 2 s"}


def test_an_mcp_step_names_its_server_and_tool_and_what_it_was_about() -> None:
    args = {"query": "milk"}
    assert step_title("notes__search_notes", args) == "Asking notes — search notes · milk"
    assert step_title("notes__search_notes", args, DONE) == "Asked notes — search notes · milk"
    failed = step_title("notes__search_notes", args, FAILED)
    assert failed == "Couldn't ask notes — search notes · milk"


def test_no_mcp_title_shows_the_internal_name() -> None:
    for result in (None, DONE, FAILED):
        assert "__" not in step_title("home-lights__turn_on", {"room": "kitchen"}, result)
