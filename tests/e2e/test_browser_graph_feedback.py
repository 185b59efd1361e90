"""The Graph tab remembers, and feedback becomes evals (issue 25, items 6 and 7), in a real
headless chromium at 390 and 1440 px: after a reload the Graph tab lists the chat's turns
and shows an older turn's prompt as sent; a 👎 with a comment is stored, shows again after
a reload and in the Graph tab; the rated answers export as cases that the harness runs."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from memory import Feedback
from memory.sqlite import chats
from memory.sqlite.store import SqliteStore
from tests.e2e.harness import RunningApp, loaded, send

TIMEOUT_MS = 15_000
ROOT = Path(__file__).resolve().parents[2]
WIDTHS = {"phone": {"width": 390, "height": 844}, "desktop": {"width": 1440, "height": 900}}


def hello(text: str) -> str:
    return f"Hello! You said: {text}. Nice to hear from you today."


def open_at(browser: Any, app: RunningApp, viewport: dict[str, int]) -> Any:
    """A page at ``viewport`` on the app, in a new chat."""
    page = browser.new_context(viewport=viewport).new_page()
    page.goto(app.url)
    loaded(page)
    # Clicked from script: on a phone the sidebar that holds it starts closed.
    page.locator("#new-session").dispatch_event("click")
    expect(page.locator("#chatbot [data-testid='bot']")).to_have_count(0, timeout=TIMEOUT_MS)
    return page


@pytest.fixture(params=list(WIDTHS))
def sized(request: pytest.FixtureRequest, browser: Any, app: RunningApp) -> Iterator[Any]:
    """A page in a new chat, on a phone (390 px) and on a desktop (1440 px); its size's
    name is ``page.size``."""
    page = open_at(browser, app, WIDTHS[request.param])
    page.size = request.param
    yield page
    page.context.close()


def chat(page: Any, text: str) -> None:
    """Send ``text`` and wait until its turn is over."""
    send(page, text)
    answer = page.locator("#chatbot [data-testid='bot'] .message-content").last
    expect(answer).to_have_text(hello(text), timeout=TIMEOUT_MS)
    expect(page.locator("#stop-turn")).to_be_hidden(timeout=TIMEOUT_MS)


def reload(page: Any, text: str) -> None:
    """Reload the page and wait until the chat in view (the newest) shows ``text``."""
    page.reload()
    loaded(page)
    expect(page.locator("#chatbot [data-testid='user']").last).to_have_text(
        text, timeout=TIMEOUT_MS
    )


def thumb(page: Any, name: str) -> Any:
    """The last answer's thumb named ``name`` ("Like", "Dislike", "Liked", "Disliked")."""
    return page.locator("#chatbot").get_by_role("button", name=name, exact=True).last


def ratings(app: RunningApp) -> list[Feedback]:
    store = SqliteStore.open_home(app.home)
    try:
        return chats.feedback(store)
    finally:
        store.close()


def page_fits(page: Any) -> None:
    """Nothing makes the page scroll sideways."""
    sizes = page.evaluate(
        "() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]"
    )
    assert sizes[0] <= sizes[1] + 1, sizes


def open_graph(page: Any) -> None:
    page.get_by_role("tab", name="Graph").click()
    expect(page.locator("#turn-trace")).to_contain_text("Path:", timeout=TIMEOUT_MS)


def test_after_a_reload_the_graph_tab_shows_an_older_turns_prompt(
    sized: Any, artifacts: Path
) -> None:
    page, size = sized, sized.size
    chat(page, f"the first question {size}")
    chat(page, f"the second question {size}")
    reload(page, f"the second question {size}")
    open_graph(page)
    picker = page.locator("#graph-turn input")
    newest = re.compile(rf"^\d\d:\d\d — the second question {size}$")
    expect(picker).to_have_value(newest, timeout=TIMEOUT_MS)
    picker.click()
    page.get_by_role("option", name=re.compile(f"— the first question {size}$")).click()
    trace = page.locator("#turn-trace")
    expect(trace).to_contain_text(f"Asked: the first question {size}", timeout=TIMEOUT_MS)
    expect(trace).to_contain_text("build_context → call_model")
    expect(trace).to_contain_text("Tokens: not reported by the provider")
    summary = trace.locator("summary", has_text="Model call 1: scripted-chat")
    summary.click()
    prompt = trace.locator("details[open] pre")
    expect(prompt.first).to_be_visible()
    expect(prompt.nth(1)).to_have_text(f"the first question {size}")  # as sent
    expect(trace.locator("details[open]")).not_to_contain_text("the second question")
    page_fits(page)
    page.screenshot(path=artifacts / f"graph-turn-{WIDTHS[size]['width']}.png")


def test_a_rating_and_its_comment_are_stored_and_shown_after_a_reload(
    sized: Any, app: RunningApp, artifacts: Path
) -> None:
    page, size = sized, sized.size
    text = f"rate this answer {size}"
    chat(page, text)
    thumb(page, "Dislike").click()
    row = page.locator("#feedback-row")
    expect(row).to_be_visible(timeout=TIMEOUT_MS)
    expect(row).to_contain_text("What went wrong?")
    comment = f'it should have checked the weather and said "sunny" ({size})'
    page.locator("#feedback-comment textarea").fill(comment)
    page.locator("#feedback-save").click()
    expect(row).to_be_hidden(timeout=TIMEOUT_MS)
    mine = [r for r in ratings(app) if r.comment == comment]
    assert len(mine) == 1 and mine[0].rating == -1

    reload(page, text)
    expect(thumb(page, "Disliked")).to_be_visible(timeout=TIMEOUT_MS)
    open_graph(page)
    trace = page.locator("#turn-trace")
    expect(trace).to_contain_text("Rating: 👎 · it should have checked the weather")
    page_fits(page)
    page.screenshot(path=artifacts / f"feedback-{WIDTHS[size]['width']}.png")


def test_an_answer_given_again_is_not_rated(browser: Any, app: RunningApp) -> None:
    page = open_at(browser, app, WIDTHS["desktop"])
    try:
        chat(page, "rate then retry")
        thumb(page, "Like").click()
        expect(page.locator("#feedback-row")).to_be_visible(timeout=TIMEOUT_MS)
        rated = [r for r in ratings(app) if r.rating == 1]
        reload(page, "rate then retry")
        expect(thumb(page, "Liked")).to_be_visible(timeout=TIMEOUT_MS)  # from the store
        page.locator("#chatbot").get_by_role("button", name="Retry").last.click()
        expect(page.locator("#stop-turn")).to_be_hidden(timeout=TIMEOUT_MS)
        expect(thumb(page, "Like")).to_be_visible(timeout=TIMEOUT_MS)  # not "Liked"
        expect(page.locator("#chatbot").get_by_role("button", name="Liked")).to_have_count(0)
        assert len([r for r in ratings(app) if r.rating == 1]) == len(rated) - 1
    finally:
        page.context.close()


HARNESS_RUN = """
import json, sys
from pathlib import Path
from evals.runner import run_suites
from tests.support.policy import scripted_model
folder = Path(sys.argv[1])
run = run_suites(["feedback"], model=scripted_model("native"), folder=folder, progress=False)
print(json.dumps({r.case.id: r.passed for r in run.runs}))
"""


def test_rated_answers_export_as_cases_the_harness_runs(
    browser: Any, app: RunningApp, tmp_path: Path
) -> None:
    page = open_at(browser, app, WIDTHS["desktop"])
    try:
        chat(page, "What is 2+2?")
        thumb(page, "Like").click()
        expect(page.locator("#feedback-row")).to_be_visible(timeout=TIMEOUT_MS)
        page.locator("#feedback-close").click()
        liked = [r for r in ratings(app) if r.rating == 1]
        assert liked, ratings(app)
    finally:
        page.context.close()
    out = tmp_path / "feedback.jsonl"
    env = {"PYTHONPATH": str(ROOT), "GRADIO_ANALYTICS_ENABLED": "False", "NO_PROXY": "*"}
    command = [sys.executable, "-m", "app.cli", "eval", "export-feedback"]
    exported = subprocess.run(
        [*command, "--home", str(app.home), "--out", str(out)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
    )
    assert exported.returncode == 0, exported.stderr
    assert f"written to {out}" in exported.stdout
    cases = {case["id"]: case for case in map(json.loads, out.read_text().splitlines())}
    case = cases[f"fb-{liked[0].message_id}"]
    assert case["message"] == "What is 2+2?"
    assert case["expect"]["forbidden_tools"] == ["*"]  # the 👍 answer ran no tool
    ran = subprocess.run(
        [sys.executable, "-c", HARNESS_RUN, str(tmp_path)],
        capture_output=True,
        text=True,
        env={**env, "DEEPEVAL_TELEMETRY_OPT_OUT": "1", "DEEPEVAL_DISABLE_DOTENV": "1"},
        cwd=ROOT,
        timeout=300,
    )
    assert ran.returncode == 0, ran.stderr[-2000:]
    passed = json.loads(ran.stdout.strip().splitlines()[-1])
    assert set(passed) == set(cases)  # the harness ran every exported case
    assert passed[case["id"]] is True  # the scripted companion answers 2+2 with no tool
