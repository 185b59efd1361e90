"""Accessibility, the phone and the keyboard (issue 25, item 10), at 390 and 1440 px:
axe-core finds no serious or critical violation on the Chat, Settings and Memories
views; the composer has an accessible name and a readable placeholder; on a phone every
icon under a message and the sidebar's toggle are 44 px touch targets, the toggle fully
on screen; Esc stops a running answer and Ctrl+Shift+O starts a new chat; LaTeX renders
between $$…$$ and \\(…\\), and a price in dollars stays text."""

from __future__ import annotations

from typing import Any

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import expect

from app.live_tabs import SHOWN_JS, shown_mark
from tests.e2e.harness import SETTLED, bot_messages, send

TIMEOUT_MS = 20_000
VIEWS = ("Chat", "Settings", "Memories")
SEVERE = ("serious", "critical")
TOUCH_PX = 44
# Rules and the exact elements of Gradio's own components they are waived for, each with
# why it cannot be fixed from our side. None so far.
WAIVED: dict[str, tuple[str, ...]] = {}


@pytest.fixture
def page(sized_page: Any) -> Any:
    """The app at a phone's and a desktop's size, in a new, empty chat (conftest)."""
    return sized_page


def answered(page: Any, text: str) -> None:
    send(page, text)
    expect(bot_messages(page).last).to_contain_text(f"You said: {text}", timeout=TIMEOUT_MS)


def severe(results: dict[str, Any]) -> list[str]:
    """The serious and critical violations, one line per element, less the waived ones."""
    found = []
    for violation in results["violations"]:
        if violation["impact"] not in SEVERE:
            continue
        for node in violation["nodes"]:
            target = " ".join(str(part) for part in node["target"])
            if target not in WAIVED.get(violation["id"], ()):
                found.append(f"{violation['id']} at {target}: {node.get('failureSummary')}")
    return found


def test_axe_finds_nothing_serious_on_chat_settings_and_memories(page: Any) -> None:
    answered(page, "hello, axe")
    axe = Axe()
    for view in VIEWS:
        page.get_by_role("tab", name=view).click()
        expect(page.get_by_role("tab", name=view)).to_have_attribute("aria-selected", "true")
        page.wait_for_timeout(500)
        page.wait_for_function(SETTLED, timeout=TIMEOUT_MS)
        assert severe(axe.run(page).response) == [], view


def contrast(foreground: str, background: str) -> float:
    """WCAG contrast ratio of two CSS rgb() colours."""

    def luminance(color: str) -> float:
        parts = [int(p) / 255 for p in color[color.index("(") + 1 : -1].split(",")[:3]]
        linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in parts]
        return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]

    light, dark = sorted((luminance(foreground), luminance(background)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def test_the_composer_is_named_and_its_placeholder_readable(page: Any) -> None:
    box = page.get_by_role("textbox", name="Message", exact=True)
    expect(box).to_have_attribute(
        "placeholder", "Message (attach an image, a text or PDF file, or paste an image URL)"
    )
    placeholder = box.evaluate("e => getComputedStyle(e, '::placeholder').color")
    behind = page.evaluate(
        """() => { let e = document.querySelector('#chat-input textarea');
          while (e) { const c = getComputedStyle(e).backgroundColor;
            if (c && !c.endsWith(', 0)') && c !== 'transparent') return c; e = e.parentElement; }
          return 'rgb(255, 255, 255)'; }"""
    )
    assert contrast(placeholder, behind) >= 4.5, (placeholder, behind)


@pytest.mark.parametrize("sized_page", ["phone"], indirect=True)
def test_touch_targets_on_a_phone(sized_page: Any) -> None:
    page = sized_page
    answered(page, "hello, thumbs")
    bot_messages(page).last.hover()
    icons = page.locator("#chatbot .icon-button:visible")  # copy, edit, retry, 👍/👎
    expect(page.locator("#chatbot button[aria-label='Retry']")).to_be_visible()
    sizes = {icon.get_attribute("aria-label"): icon.bounding_box() for icon in icons.all()}
    assert {"Copy message", "Edit", "Retry"} <= set(sizes)
    small = {
        name: box for name, box in sizes.items() if min(box["width"], box["height"]) < TOUCH_PX
    }
    assert small == {}
    toggle = page.locator(".sidebar .toggle-button").bounding_box()
    assert toggle["width"] >= TOUCH_PX and toggle["height"] >= TOUCH_PX
    assert toggle["x"] >= 0 and toggle["x"] + toggle["width"] <= page.viewport_size["width"]


def test_esc_stops_a_running_answer(page: Any) -> None:
    send(page, "tell me a story very slowly")  # still running when Esc lands, under load
    expect(bot_messages(page).last).to_contain_text("word2", timeout=TIMEOUT_MS)
    page.locator("#chat-input textarea").press("Escape")
    expect(bot_messages(page).last).to_contain_text("⏹ Stopped.", timeout=TIMEOUT_MS)
    expect(bot_messages(page).last).not_to_contain_text("the end.")
    expect(page.locator("#stop-turn")).to_be_hidden()


def test_ctrl_shift_o_starts_a_new_chat(page: Any) -> None:
    answered(page, "hello, shortcut")
    page.keyboard.press("Control+Shift+O")
    expect(page.locator("#chatbot .message-row")).to_have_count(0, timeout=TIMEOUT_MS)
    answered(page, "a fresh start")
    expect(page.locator("#chatbot [data-testid='user']")).to_have_text(["a fresh start"])
    # The page's mark of the chat on screen is the server's of the stored chat (a page
    # whose mark differs is shown the stored chat again: app.live_tabs). Read once the
    # answer has streamed to its end (CI, under load: read mid-stream, once).
    answer = "Hello! You said: a fresh start. Nice to hear from you today."
    expect(bot_messages(page).last).to_have_text(answer, timeout=TIMEOUT_MS)
    _, mark = page.evaluate(f"({SHOWN_JS})('a-chat')")
    assert mark == shown_mark(["a fresh start"], answer)


def test_latex_renders_and_a_price_stays_text(page: Any) -> None:
    send(page, "area $$x^2+1$$ and \\(a+b\\) for $5 or $10")
    answer = bot_messages(page).last
    expect(answer).to_contain_text("for $5 or $10. Nice to hear", timeout=TIMEOUT_MS)
    expect(answer.locator(".katex")).to_have_count(2)  # $$…$$ and \\(…\\), not the prices
