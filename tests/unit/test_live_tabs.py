"""Live tabs (app.live_tabs): the token a page polls, and a page following a turn left
alone by the refresh, over a real store in a temporary home."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import gradio as gr

from app.live_tabs import STALE, UNFOLLOWED, Pages, redraws, shown_mark
from tests.support.app_fakes import request
from tests.unit.test_chat_handlers import Page, contents, drain


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
    before = await h.on_watch(session, "", me)  # type: ignore[arg-type]
    assert await h.on_watch(session, "", me) == before  # type: ignore[arg-type]
    await page.chat(session, "said in another tab")
    assert await h.on_watch(session, "", me) != before  # type: ignore[arg-type]

    shown = [update async for update in h.on_changed(session, [], None, me)]  # type: ignore[arg-type]
    ui = page.ui
    assert contents(shown[0][ui.chatbot]) == [
        "said in another tab",
        "answer to said in another tab",
    ]
    assert "Kept" in str(shown[0][ui.listing])
    assert shown[-1] == {ui.stop: gr.update(visible="hidden")}  # no turn runs: nothing to follow
    with h.pages.following("other-page"):  # its own stream shows the turn
        assert await h.on_watch(session, "", me) == gr.skip()  # type: ignore[arg-type]
        unchanged = [u async for u in h.on_changed(session, [], None, me)]  # type: ignore[arg-type]
        assert unchanged == [{ui.told: gr.skip()}]
    h.opened.choose("other-page", "another-chat")  # the page chose another chat meanwhile
    stale = [u async for u in h.on_changed(session, [], None, me)]  # type: ignore[arg-type]
    assert stale == [{ui.told: gr.skip()}]  # the old chat is not put back
    h.opened.choose("other-page", None)
    fresh = [u async for u in h.on_changed(None, [], None, me)]  # type: ignore[arg-type]
    assert fresh[0][ui.chatbot] == []  # a new, empty chat, and the list again


async def test_a_token_the_page_was_shown_already_shows_nothing_again(tmp_path: Path) -> None:
    """The first tick after a load, and after the page's own answer, finds the token the
    page was shown: no second copy of the chat and the list (it could land on a click)."""
    page = Page(tmp_path)
    h, ui, me = page.handlers, page.ui, request()
    session = (await page.store.create_session("Mine")).id
    await page.chat(session, "an old question")
    await h.on_load(me)
    loaded = await h.on_watch(session, "", me)
    assert await drain(h.on_changed(session, [], loaded, me)) == [{ui.told: gr.skip()}]

    await page.send("asked here", session)  # this page's own turn, followed to its end
    answered = await h.on_watch(session, "", me)
    assert answered != loaded
    assert await drain(h.on_changed(session, [], answered, me)) == [{ui.told: gr.skip()}]

    await page.chat(session, "said in another tab")
    moved = await h.on_watch(session, "", me)
    shown = await drain(h.on_changed(session, [], moved, me))
    assert contents(shown[0][ui.chatbot])[-2:] == [
        "said in another tab",
        "answer to said in another tab",
    ]
    assert await drain(h.on_changed(session, [], moved, me)) == [{ui.told: gr.skip()}]
    other = SimpleNamespace(username=None, session_hash="another-page")  # never shown it
    assert ui.chatbot in (await drain(h.on_changed(session, [], moved, other)))[0]


def test_a_mark_is_the_persons_messages_the_first_ones_letters_and_the_last_bubbles() -> None:
    assert shown_mark([], "") == "0::"
    marked = shown_mark(["**Hello**, Wörld! 🌸 #1", "again"], "The answer, *at last*: 42.")
    assert marked == "2:hellowörld1:theansweratlast42"
    assert shown_mark(["x" * 100], "a" + "y" * 100) == "1:" + "x" * 24 + ":" + "y" * 24


async def test_a_page_showing_another_chat_than_its_own_moves_the_token(tmp_path: Path) -> None:
    page = Page(tmp_path)
    h, store = page.handlers, page.store
    session = (await store.create_session("Kept")).id
    await page.chat(session, "the first words here")
    me = SimpleNamespace(username=None, session_hash="a-page")
    own = "1:thefirstwordshere:nswertothefirstwordshere"  # the last 24 letters
    version = await h.on_watch(session, own, me)  # type: ignore[arg-type]
    assert STALE not in version
    # The old chat's last chunk landed after New chat: the page's empty chat shows it.
    late = await h.on_watch(None, own, me)  # type: ignore[arg-type]
    assert STALE in late and late != await h.on_watch(None, "0::", me)  # type: ignore[arg-type]
    # The answer cut short on screen: a late chunk of a follow cancelled meanwhile.
    cut = await h.on_watch(session, "1:thefirstwordshere:answertothe", me)  # type: ignore[arg-type]
    assert STALE in cut
    # Another chat on screen (a click in the list overtaken by an older one's update).
    other = await h.on_watch(session, "3:somethingelse", me)  # type: ignore[arg-type]
    assert STALE in other and other != late
    # The same wrong chat seen twice is one change (one re-show), not one per tick.
    assert await h.on_watch(session, "3:somethingelse", me) == other  # type: ignore[arg-type]
    assert await h.on_watch(session, own, me) == version  # type: ignore[arg-type]
    # A page's mark is its own input: a long one is cut before it is used or sent back.
    long = await h.on_watch(session, "9:" + "x" * 100_000, me)  # type: ignore[arg-type]
    assert STALE in long and len(long) < len(version) + 100


async def test_a_turn_the_page_does_not_follow_moves_the_token(tmp_path: Path) -> None:
    page = Page(tmp_path)
    h, store = page.handlers, page.store
    session = (await store.create_session("Busy")).id
    me = SimpleNamespace(username=None, session_hash="a-page")
    idle = await h.on_watch(session, "", me)  # type: ignore[arg-type]
    page.turns.hold = True
    page.turns.start(await page.tab.make_context(), session, "a long story")
    # The page's follow was cancelled by a quick switch: the tick makes it follow again.
    unfollowed = await h.on_watch(session, "", me)  # type: ignore[arg-type]
    assert UNFOLLOWED in unfollowed and unfollowed != idle
    with h.pages.following("a-page"):  # following it: left alone
        assert await h.on_watch(session, "", me) == gr.skip()  # type: ignore[arg-type]
    page.turns.release()


async def test_a_change_in_another_chat_sends_the_list_and_not_the_chat_on_screen(
    tmp_path: Path,
) -> None:
    """The token moves for any chat; the chat on screen is sent again only if it differs
    from what the page was shown (a redraw loses a click made then: Edit's Submit, CI),
    or if the page shows another chat than its own."""
    page = Page(tmp_path)
    h, ui, me = page.handlers, page.ui, request()
    mine = (await page.store.create_session("Mine")).id
    await page.chat(mine, "my own words")
    elsewhere = (await page.store.create_session("Elsewhere")).id
    await h.on_load(me)
    switched, *_ = await h.on_switch(mine, None, me)
    assert switched == mine

    await page.chat(elsewhere, "said in the other chat")
    moved = await h.on_watch(mine, "", me)
    shown = await drain(h.on_changed(mine, [], moved, me))
    assert ui.listing in shown[0] and ui.chatbot not in shown[0]

    await page.store.rename_session(elsewhere, "Renamed there")
    renamed = await h.on_watch(mine, "", me)
    assert "Renamed there" in str((await drain(h.on_changed(mine, [], renamed, me)))[0])

    await page.chat(mine, "added in another tab")
    grown = await h.on_watch(mine, "", me)
    shown = await drain(h.on_changed(mine, [], grown, me))
    assert contents(shown[0][ui.chatbot])[-1] == "answer to added in another tab"

    # The page shows another chat than its own (a late update): the chat is sent again.
    wrong = f"{grown} {STALE} 9:somethingelse"
    assert ui.chatbot in (await drain(h.on_changed(mine, [], wrong, me)))[0]


def test_only_the_tokens_second_word_asks_for_a_redraw() -> None:
    assert redraws(f"3.3.ab {STALE} 2:first:last") and redraws(f"3.3.ab {UNFOLLOWED}")
    assert not redraws("3.3.ab") and not redraws(None) and not redraws("")
    assert not redraws(f"3.3.ab 2:first:{STALE}")  # a mark's letters are not the word
    assert not redraws("3.3.ab " + "x" * 1_000_000)  # the page's input: read to its 2nd word
