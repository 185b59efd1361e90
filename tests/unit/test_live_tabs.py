"""Live tabs (app.live_tabs): the token a page polls, and a page following a turn left
alone by the refresh, over a real store in a temporary home."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import gradio as gr

from app.live_tabs import Pages
from tests.unit.test_chat_handlers import Page, contents


def test_a_page_counts_as_following_until_its_last_stream_ends() -> None:
    pages = Pages()
    with pages.following("a"):
        with pages.following("a"):
            assert pages.busy("a") and not pages.busy("b")
        assert pages.busy("a")
    assert not pages.busy("a")
    try:
        with pages.following("a"):
            raise RuntimeError("a cancelled stream")
    except RuntimeError:
        pass
    assert not pages.busy("a")


async def test_a_change_elsewhere_moves_the_token_and_shows_the_stored_chat(
    tmp_path: Path,
) -> None:
    page = Page(tmp_path)
    h, store = page.handlers, page.store
    session = (await store.create_session("Kept")).id
    me = SimpleNamespace(username=None, session_hash="other-page")
    before = await h.on_watch(session, me)  # type: ignore[arg-type]
    assert await h.on_watch(session, me) == before  # type: ignore[arg-type]
    await page.chat(session, "said in another tab")
    assert await h.on_watch(session, me) != before  # type: ignore[arg-type]

    shown = [update async for update in h.on_changed(session, [], me)]  # type: ignore[arg-type]
    ui = page.ui
    assert contents(shown[0][ui.chatbot]) == [
        "said in another tab",
        "answer to said in another tab",
    ]
    assert "Kept" in str(shown[0][ui.listing])
    assert shown[-1] == {ui.stop: gr.update(visible="hidden")}  # no turn runs: nothing to follow
    with h.pages.following("other-page"):  # its own stream shows the turn
        assert await h.on_watch(session, me) == gr.skip()  # type: ignore[arg-type]
        unchanged = [u async for u in h.on_changed(session, [], me)]  # type: ignore[arg-type]
        assert unchanged == [{ui.told: gr.skip()}]
    h.opened.choose("other-page", "another-chat")  # the page chose another chat meanwhile
    stale = [u async for u in h.on_changed(session, [], me)]  # type: ignore[arg-type]
    assert stale == [{ui.told: gr.skip()}]  # the old chat is not put back
    h.opened.choose("other-page", None)
    fresh = [u async for u in h.on_changed(None, [], me)]  # type: ignore[arg-type]
    assert list(fresh[0]) == [ui.listing]  # a new, empty chat: only the list is shown again
