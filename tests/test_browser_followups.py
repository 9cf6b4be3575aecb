"""Every offered follow-up is answered (issue 29, item 1), clicked in a real browser on the demo
with no model: after a verified answer, a semantic-layer answer and a document answer, each
follow-up chip the answer shows is clicked (in a fresh conversation, so each one follows the
same answer) and its answer is an answer: not an error, not a refusal ("needs a language
model", "Did you mean"), and a data answer with a table offers at least three more.

Screenshots land in ``test-artifacts/browser/`` (git-ignored).
"""

from __future__ import annotations

import asyncio
import re
import threading

import pytest

from baton.demo.data import build_demo_database
from baton.demo.workspace import build_demo_workspace
from baton.server import ApiKeys, Workspaces, create_app
from browser_support import browser, last_answer, needs_chromium, new_page, shot  # noqa: F401  (browser: a fixture)
from live_server import serve

pytestmark = [pytest.mark.browser, needs_chromium]
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
expect = sync_api.expect

KEY = "bt_followups_browser_key"
DOCUMENTS_SAY = "No language model is configured, so here is what the documents say"
STARTS = {
    "verified": "What was Epson revenue by month in 2025?",
    "semantic": "What was total revenue by month in 2025?",
    "document": "What is a roadshow?",
}
REFUSALS = ("needs a language model", "No language model is configured, so I answer only", "Did you mean",
            "previous answer stands", "failed")


@pytest.fixture(scope="module")
def base_url(tmp_path_factory):
    directory = tmp_path_factory.mktemp("demo-followups")
    build_demo_database(directory / "finance.sqlite", sales_rows=1_000)
    demo = build_demo_workspace(directory)
    app = create_app(Workspaces([demo]), ApiKeys({KEY: "demo"}), owns_workspaces=False)
    with serve(app) as url:
        yield url
    closing = threading.Thread(target=lambda: asyncio.run(demo.aclose()))
    closing.start()  # a loop of its own: Playwright's runs in this thread
    closing.join(30)


@pytest.fixture
def page(browser, base_url):
    errors: list[str] = []
    page = new_page(browser, base_url, errors)
    yield page
    page.context.close()
    assert not errors, f"JavaScript errors on the page: {errors}"


def settled(page, turns: int) -> None:
    expect(page.locator("#chat .turn")).to_have_count(turns)
    expect(page.locator("#chat .turn").last.locator(".answer").first).to_be_visible()
    expect(page.locator("#ask-button")).to_be_enabled()


def ask(page, question: str) -> None:
    before = page.locator("#chat .turn").count()
    page.fill("#question", question)
    page.click("#ask-button")
    settled(page, before + 1)


def chips(answer) -> list[str]:
    return answer.locator(".chips .chip").all_inner_texts()


def assert_answered(answer, what: str) -> None:
    """An answer: never an error; shown as information only when it is the documents' own
    passage (the page marks every no-model reply so), never a refusal."""
    expect(answer).not_to_have_class(re.compile(r"\berror\b"))
    text = answer.locator(".text").inner_text()
    assert not any(refusal in text for refusal in REFUSALS), (what, text)
    if "info" in (answer.get_attribute("class") or "").split():
        assert text.startswith(DOCUMENTS_SAY), (what, text)


@pytest.mark.parametrize("kind", list(STARTS))
def test_every_offered_follow_up_is_answered(page, kind):
    start = STARTS[kind]
    page.goto("about:blank")
    page.goto(f"/#key={KEY}")
    expect(page.locator("#agents li").first).to_be_visible()
    ask(page, start)
    first = last_answer(page)
    assert_answered(first, start)
    offered = chips(first)
    assert len(offered) >= 3 or (kind == "document" and offered), (kind, offered)
    shot(page, f"followups-{kind}-offers")
    for number, followup in enumerate(offered, 1):
        page.click("#new-session")
        ask(page, start)
        last_answer(page).locator(".chips .chip", has_text=re.compile(f"^{re.escape(followup)}$")).click()
        settled(page, 2)
        assert page.locator("#chat .turn .question").last.inner_text().strip() == followup
        answer = last_answer(page)
        assert_answered(answer, f"{start} -> {followup}")
        if answer.locator(".dataset-table tbody tr").count() > 1:
            assert len(chips(answer)) >= 3, (start, followup, chips(answer))
        shot(page, f"followups-{kind}-{number}")
