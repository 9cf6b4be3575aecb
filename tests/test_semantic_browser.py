"""The semantic layer in the page (issue 18), in a real browser, on the demo with no model: a
metric question answered with the semantic query it ran shown beside its table and SQL; an
ambiguous one answered with an ask-back whose suggestions answer when clicked.

The page needs no change for either: the semantic query is said in the answer's text, and
the ask-back's readings travel as "Did you mean" suggestions. Screenshots land in
``test-artifacts/browser/`` (git-ignored).
"""

from __future__ import annotations

import asyncio
import re
import threading

import pytest

from baton.demo.data import build_demo_database
from baton.demo.workspace import build_demo_workspace
from baton.server import ApiKeys, Workspaces, create_app
from browser_support import ask, browser, needs_chromium, new_page, shot  # noqa: F401  (browser: a fixture)
from live_server import serve

pytestmark = [pytest.mark.browser, needs_chromium]
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
expect = sync_api.expect

KEY = "bt_semantic_browser_key"


@pytest.fixture(scope="module")
def base_url(tmp_path_factory):
    directory = tmp_path_factory.mktemp("semantic_demo")
    build_demo_database(directory / "finance.sqlite", sales_rows=2_000)
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
    page.goto("about:blank")
    page.goto(f"/#key={KEY}")
    expect(page.locator("#agents li").first).to_be_visible()
    yield page
    page.context.close()
    assert not errors, f"JavaScript errors on the page: {errors}"


def test_a_metric_question_is_answered_with_its_semantic_query_shown(page):
    answer = ask(page, "What was Epson revenue by quarter in 2025?")
    expect(answer).not_to_have_class(re.compile(r"\berror\b"))
    expect(answer.locator(".text")).to_contain_text("Semantic query: revenue by quarter; where business unit = Epson and time in 2025.")
    expect(answer.locator(".dataset-table thead th")).to_have_text(["quarter", "revenue"])
    expect(answer.locator(".dataset-table tbody tr")).to_have_count(4)
    expect(answer.locator(".dataset-table tbody tr").first.locator("td").first).to_have_text("2025-Q1")
    expect(answer.locator(".meta")).to_contain_text("no LLM call")
    answer.locator("details.sql summary").first.click()
    expect(answer.locator("details.sql")).to_contain_text("monthly_revenue")
    shot(page, "semantic-01-metric-question")


def test_an_ambiguous_question_asks_back_and_its_suggestions_answer_when_clicked(page):
    asked = ask(page, "Which products sold the most in 2025?")
    expect(asked.locator(".text")).to_contain_text("can be read in more than one way")
    suggestions = asked.locator("button.suggestion")
    expect(suggestions).to_have_text(["Revenue by product in 2025", "Units sold by product in 2025", "Transactions by product in 2025"])
    expect(asked.locator(".dataset-table")).to_have_count(0)  # no table for a guess
    shot(page, "semantic-02-ask-back")
    suggestions.nth(1).click()
    expect(page.locator("#chat .turn")).to_have_count(2)
    expect(page.locator("#chat .turn .question").last).to_have_text("Units sold by product in 2025")
    answer = page.locator("#chat .turn").nth(1).locator(".answer").last
    expect(answer.locator(".dataset-table thead th")).to_have_text(["product", "units_sold"])
    expect(answer.locator(".dataset-table tbody tr")).to_have_count(12)
    expect(answer.locator(".text")).to_contain_text("Semantic query: units sold by product; where time in 2025")
    shot(page, "semantic-03-suggestion-clicked")
    page.locator("#chat .turn").first.locator("button.suggestion").first.click()  # another reading, from the same ask-back
    expect(page.locator("#chat .turn")).to_have_count(3)
    last = page.locator("#chat .turn").nth(2).locator(".answer").last
    expect(last.locator(".dataset-table thead th")).to_have_text(["product", "revenue"])


def test_the_empty_page_offers_metric_questions_and_one_answers_when_clicked(page):
    metrics = page.locator(".example-group[data-kind=metrics] button.example")
    expect(metrics.first).to_be_visible()
    assert 3 <= metrics.count() <= 6
    shot(page, "semantic-04-empty-page-metrics")
    question = metrics.first.inner_text()
    metrics.first.click()
    expect(page.locator("#chat .turn .question").last).to_have_text(question)
    answer = page.locator("#chat .turn").last.locator(".answer").last
    expect(answer.locator(".text")).to_contain_text("Semantic query:")
    expect(answer).not_to_have_class(re.compile(r"\b(error|info)\b"))


def test_an_ask_back_and_the_no_model_answer_are_information_not_errors(page):
    asked = ask(page, "Which products sold the most in 2025?")
    expect(asked).to_have_class(re.compile(r"\binfo\b"))
    expect(asked).not_to_have_class(re.compile(r"\berror\b"))
    assert asked.get_attribute("role") != "alert"
    expect(asked.locator(".feedback")).to_have_count(0)  # still nothing to judge
    fallback = ask(page, "Write me a poem about spring")
    expect(fallback.locator(".text")).to_contain_text("Metric questions its semantic model answers")
    expect(fallback).to_have_class(re.compile(r"\binfo\b"))
    expect(fallback).not_to_have_class(re.compile(r"\berror\b"))
    shot(page, "semantic-05-no-model-answer")
