"""An analyst's first hour in the page (issue 14), in a real browser, on the real demo workspace
with no model: the empty page's examples, a paraphrase answered, a near-miss refused with
"Did you mean" (the suggestion works when clicked), every follow-up that needs no model, a
document answer rendered as Markdown, an edited SQL re-run (refused when unsafe), "Save as
verified question" then the question asked in other words, the schema browser, CSV download,
logout. A second workspace holds hostile names, values and documents: nothing it returns may
become markup or script in the page.

Screenshots land in ``test-artifacts/browser/`` (git-ignored).
"""

from __future__ import annotations

import asyncio
import csv
import io
import re
import sqlite3
import threading

import pytest

from baton.demo.data import build_demo_database
from baton.demo.verified import VERIFIED_QUESTIONS
from baton.demo.workspace import DOCUMENT_EXAMPLES, build_demo_workspace
from baton.demo.workspace import demo_database as database_file_of
from baton.server import ApiKeys, Workspaces, create_app
from baton.state.location import State
from baton.verified import VerifiedQuestion
from baton.workspace.database import open_database_workspace
from baton.workspace.verified import install_verified
from browser_support import ask, browser, last_answer, needs_chromium, new_page, shot  # noqa: F401  (browser: a fixture)
from live_server import serve

pytestmark = [pytest.mark.browser, needs_chromium]
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
expect = sync_api.expect

KEY = "bt_analyst_browser_key"
HOSTILE_KEY = "bt_hostile_browser_key"
TICKETS = "How many tickets did each roadshow city sell?"
EVENTS_SQL = ("SELECT city, COUNT(*) AS events FROM roadshow_events WHERE deleted_at IS NULL "
              "GROUP BY city ORDER BY events DESC")

# --- the hostile workspace: markup in column names, cells and documents ------------------------
NAME_COLUMN = '<img src=x onerror="window.__pwned = 1">'
CELLS = ["<script>window.__pwned = 2</script>", '<svg onload="window.__pwned = 3">', "**bold** [x](javascript:window.__pwned=4)"]
HOSTILE_DOC = """# Policies

## Refund policy

Refunds <img src=x onerror="window.__pwned = 5"> are **<script>window.__pwned = 6</script>** paid within 30 days.
See [the form](javascript:window.__pwned=7) or [the handbook](https://example.com/handbook) and `<b>not bold</b>`.

<iframe src="javascript:window.__pwned=8"></iframe>
"""
HOSTILE_QUESTION = "What is the amount of each item?"


@pytest.fixture(scope="module")
def demo_database(tmp_path_factory):
    directory = tmp_path_factory.mktemp("demo")
    build_demo_database(directory / "finance.sqlite", sales_rows=2_000)
    return directory


def hostile_workspace(directory):
    database = directory / "hostile.sqlite"
    with sqlite3.connect(database) as db:
        db.execute(f'CREATE TABLE items ("{NAME_COLUMN.replace(chr(34), chr(34) * 2)}" TEXT, amount REAL)')
        db.executemany("INSERT INTO items VALUES (?, ?)", [(cell, 10.0 * (i + 1)) for i, cell in enumerate(CELLS)])
    docs = directory / "docs"
    docs.mkdir()
    (docs / "policies.md").write_text(HOSTILE_DOC, encoding="utf-8")
    ws = open_database_workspace(f"sqlite:///{database}", None, docs=docs, state=State.from_env(env={}, home=directory / "home"),
                                 name="hostile")
    column = '"' + NAME_COLUMN.replace('"', '""') + '"'
    install_verified(ws, [VerifiedQuestion(HOSTILE_QUESTION, f"SELECT {column}, SUM(amount) AS amount FROM items GROUP BY 1 ORDER BY 2 DESC",
                                           "database", "")])
    return ws


@pytest.fixture(scope="module")
def workspaces(demo_database, tmp_path_factory):
    demo = build_demo_workspace(demo_database)
    hostile = hostile_workspace(tmp_path_factory.mktemp("hostile"))
    yield demo, hostile
    closing = threading.Thread(target=lambda: [asyncio.run(ws.aclose()) for ws in (demo, hostile)])
    closing.start()  # a loop of its own: Playwright's runs in this thread
    closing.join(30)


@pytest.fixture(scope="module")
def base_url(workspaces):
    demo, hostile = workspaces
    app = create_app(Workspaces([demo, hostile]), ApiKeys({KEY: "demo", HOSTILE_KEY: "hostile"}), owns_workspaces=False)
    with serve(app) as url:
        yield url


@pytest.fixture
def page(browser, base_url):
    errors: list[str] = []
    page = new_page(browser, base_url, errors)
    yield page
    page.context.close()
    assert not errors, f"JavaScript errors on the page: {errors}"


def login(page, key: str = KEY) -> None:
    page.goto("about:blank")
    page.goto(f"/#key={key}")
    expect(page.locator("#agents li").first).to_be_visible()


def table_rows(answer) -> list[list[str]]:
    return [row.locator("td").all_inner_texts() for row in answer.locator(".dataset-table tbody tr").all()]


def column(answer, name: str) -> list[str]:
    heads = answer.locator(".dataset-table thead th").all_inner_texts()
    index = heads.index(name)
    return [row[index] for row in table_rows(answer)]


# --- scenarios -------------------------------------------------------------------------------


def test_the_empty_page_offers_examples_and_each_kind_is_answered(page):
    login(page)
    verified = page.locator(".example-group[data-kind=verified] button.example")
    documents = page.locator(".example-group[data-kind=documents] button.example")
    expect(documents).to_have_text(list(DOCUMENT_EXAMPLES))
    assert "What was Pokemon revenue by month in 2025?" in verified.all_inner_texts()
    shot(page, "analyst-01-empty-page-examples")
    verified.filter(has_text="What was Pokemon revenue by month in 2025?").click()
    answer = last_answer(page)
    expect(answer.locator(".chart")).to_have_attribute("data-mode", "interactive")
    expect(answer.locator(".dataset-table tbody tr")).to_have_count(12)
    expect(page.locator("#empty")).to_be_hidden()
    page.click("#new-session")
    page.locator(".example-group[data-kind=documents] button.example", has_text="What is a roadshow?").click()
    expect(last_answer(page).locator(".md strong").first).to_have_text("Roadshow")


def test_a_paraphrase_is_answered_from_the_verified_question(page):
    login(page)
    ask(page, "What was Pokemon's revenue by month in 2025?")
    answer = last_answer(page)
    expect(answer).not_to_have_class(re.compile("error"))
    expect(answer.locator(".meta")).to_contain_text("verified question · no LLM call")
    expect(answer.locator(".dataset-table tbody tr")).to_have_count(12)
    svg = answer.locator(".chart svg").first
    expect(svg).to_be_visible()
    answer.locator(".chart .mark-symbol path").nth(11).hover()
    expect(page.locator("#vg-tooltip-element")).to_contain_text("Dec 2025")  # interactive: hover shows the point
    expect(answer.locator(".feedback")).to_be_visible()
    shot(page, "analyst-02-paraphrase-answered")


def test_a_near_miss_is_refused_with_did_you_mean_and_the_suggestion_works(page):
    login(page)
    ask(page, "Which Pokemon products had the most returns in 2025?")  # no returns in the data: not answerable
    refusal = last_answer(page)
    expect(refusal).to_have_class(re.compile(r"\binfo\b"))  # information, not an error (issue 28: no red box)
    expect(refusal).not_to_have_class(re.compile(r"\berror\b"))
    expect(refusal.locator(".feedback")).to_have_count(0)  # nothing to judge: no thumbs
    expect(refusal.locator(".chips")).to_have_count(0)  # the suggestions are in the text, not twice
    suggestions = refusal.locator("button.suggestion")
    expect(suggestions).to_have_count(3)
    expect(suggestions.first).to_have_text("Which Pokemon products sold the most in 2025?")
    shot(page, "analyst-03-did-you-mean")
    suggestions.first.click()
    expect(page.locator("#chat .turn")).to_have_count(2)
    answer = page.locator("#chat .turn").nth(1).locator(".answer")
    expect(page.locator("#chat .turn .question").last).to_have_text("Which Pokemon products sold the most in 2025?")
    expect(answer.locator(".dataset-table thead th")).to_have_text(["product", "revenue"])
    expect(answer).not_to_have_class(re.compile("error"))


def test_every_follow_up_that_needs_no_model(page):
    login(page)
    ask(page, "Which Pokemon products sold the most in 2025?")
    products = column(last_answer(page), "product")
    assert len(products) == 4
    ask(page, "Sort by product")
    assert column(last_answer(page), "product") == sorted(products)
    ask(page, "Show the bottom 2")
    expect(last_answer(page).locator(".dataset-table tbody tr")).to_have_count(2)
    ask(page, "Only Pikachu Plush")
    assert column(last_answer(page), "product") == ["Pikachu Plush"]
    shot(page, "analyst-04-follow-ups-sort-bottom-filter")
    page.click("#new-session")
    ask(page, "Which Pokemon products sold the most in 2025?")
    ask(page, "Show percentage breakdown")
    shares = [float(v) for v in column(last_answer(page), "share_pct")]
    assert sum(shares) == pytest.approx(100, abs=0.5)
    expect(last_answer(page).locator(".chart .mark-arc path")).to_have_count(4)  # shares drawn as a pie
    page.click("#new-session")
    ask(page, "Which Pokemon products sold the most in 2025?")
    ask(page, "Show this as a pie chart")
    expect(last_answer(page).locator(".chart .mark-arc path")).to_have_count(4)
    page.click("#new-session")
    ask(page, "What was Pokemon revenue by month in 2025?")
    ask(page, "Show only the top 5")
    expect(last_answer(page).locator(".dataset-table tbody tr")).to_have_count(5)
    page.click("#new-session")
    ask(page, "What was Pokemon revenue by month in 2025?")
    ask(page, "Break this down by quarter")
    assert column(last_answer(page), "quarter") == ["2025-Q1", "2025-Q2", "2025-Q3", "2025-Q4"]
    ask(page, "Compare with the previous period")
    heads = last_answer(page).locator(".dataset-table thead th").all_inner_texts()
    assert "previous_revenue" in heads and "change_revenue" in heads
    shot(page, "analyst-05-follow-ups-regroup-compare")
    ask(page, "Why did it drop in March?")
    needs = last_answer(page)
    expect(needs).to_have_class(re.compile(r"\binfo\b"))  # "needs a language model" is information, not an error
    expect(needs).not_to_have_class(re.compile(r"\berror\b"))
    expect(needs.locator(".text")).to_contain_text("needs a language model")
    expect(needs.locator(".feedback")).to_have_count(0)
    expect(needs.locator(".chips .chip").first).to_be_visible()  # what can be done instead
    for answer in page.locator("#chat .answer").all()[:-1]:
        expect(answer).not_to_have_class(re.compile(r"\berror\b"))


def test_a_document_answer_is_rendered_markdown_with_each_source_once(page):
    login(page)
    ask(page, "How are cancelled roadshow events handled?")
    answer = last_answer(page)
    text = answer.locator(".text .md")
    expect(text.locator("strong").first).to_be_visible()
    expect(text.locator("code", has_text="deleted_at IS NULL")).to_have_count(1)
    assert "**" not in text.inner_text() and "`" not in text.inner_text() and "[1] ##" not in text.inner_text()
    sources = answer.locator("details.sources li strong")
    names = sources.all_inner_texts()
    assert names and len(names) == len(set(names))  # each source once
    shot(page, "analyst-06-document-answer")


def test_edited_sql_is_refused_when_unsafe_and_runs_when_safe(page, workspaces):
    demo, _ = workspaces
    count = lambda: sqlite3.connect(database_file_of(demo)).execute("SELECT COUNT(*) FROM roadshow_events").fetchone()[0]
    before = count()
    login(page)
    ask(page, TICKETS)
    answer = last_answer(page)
    answer.locator("details.sql summary").click()
    answer.get_by_role("button", name="Edit SQL").click()
    editor = answer.locator("textarea.sql-editor")
    expect(editor).to_have_value(re.compile(r"^SELECT city, SUM\(tickets_sold\)"))
    editor.fill("DELETE FROM roadshow_events")
    answer.get_by_role("button", name="Run").click()
    problem = answer.locator(".sql-error")
    expect(problem).to_contain_text("unsafe SQL refused")
    expect(problem).to_have_attribute("data-code", "unsafe_sql")
    shot(page, "analyst-07-edited-sql-refused")
    editor.fill("SELECT city FROM roadshow_events; DROP TABLE roadshow_events")
    answer.get_by_role("button", name="Run").click()
    expect(problem).to_contain_text("unsafe SQL refused")
    assert count() == before
    expect(page.locator("#chat .turn")).to_have_count(1)  # nothing refused joined the conversation
    editor.fill(EVENTS_SQL)
    answer.get_by_role("button", name="Run").click()
    expect(page.locator("#chat .turn")).to_have_count(2)
    edited = last_answer(page)
    expect(page.locator("#chat .turn .question").last).to_have_text(f"Edited SQL of “{TICKETS}”")
    expect(edited.locator(".dataset-table thead th")).to_have_text(["city", "events"])
    expect(edited.locator(".meta")).to_contain_text("your edited SQL")


def test_save_as_verified_then_ask_in_other_words(page):
    login(page)
    ask(page, TICKETS)
    answer = last_answer(page)
    answer.locator("details.sql summary").click()
    answer.get_by_role("button", name="Edit SQL").click()
    answer.locator("textarea.sql-editor").fill(EVENTS_SQL)
    answer.get_by_role("button", name="Run").click()
    expect(page.locator("#chat .turn")).to_have_count(2)
    edited = last_answer(page)
    edited.get_by_role("button", name="Save as verified question").click()
    box = edited.locator("input.verify-question")
    expect(box).to_have_value("")  # an edit's question is the person's to write
    box.fill("How many roadshow events did each city hold?")
    edited.get_by_role("button", name="Save", exact=True).click()
    expect(edited.locator(".verify-status")).to_contain_text("Saved as a verified question")
    shot(page, "analyst-08-saved-as-verified")
    page.click("#new-session")
    expect(page.locator(".example-group[data-kind=verified] button.example").first).to_have_text(
        "How many roadshow events did each city hold?")  # the newest saved one leads the examples
    ask(page, "How many events did each roadshow city hold?")
    answer = last_answer(page)
    expect(answer.locator(".meta")).to_contain_text("verified question · no LLM call")
    expect(answer.locator(".dataset-table thead th")).to_have_text(["city", "events"])


def test_the_schema_browser_lists_tables_columns_and_row_counts(page):
    login(page)
    page.click("#schema-button")
    panel = page.locator("#schema")
    expect(panel).to_be_visible()
    events = panel.locator(".schema-table[data-table=roadshow_events]")
    expect(events.locator(".rows")).to_have_text(re.compile(r"^about \d+ rows$"))
    events.locator("summary").click()
    expect(events.locator("tr[data-column=deleted_at] td.type")).to_have_text("TEXT")
    expect(events.locator("p.comment")).to_have_text(  # the semantic model's description, where SQLite has no comments
        "One row per roadshow event, in a city on a date; a cancelled event keeps its row, with deleted_at set.")
    panel.locator("#schema-filter").fill("ticket_price")
    expect(panel.locator(".schema-table:visible")).to_have_count(1)
    expect(panel.locator(".schema-table:visible tr[data-column=ticket_price]")).to_be_visible()
    panel.locator("#schema-filter").fill("cancelled event")  # found by its comment
    expect(panel.locator(".schema-table:visible")).to_have_count(1)
    expect(panel.locator(".schema-table:visible")).to_have_attribute("data-table", "roadshow_events")
    shot(page, "analyst-09-schema-browser")
    panel.get_by_role("button", name="Close the tables").click()
    expect(panel).to_be_hidden()


def test_csv_download_of_an_answer(page, workspaces):
    demo, _ = workspaces
    login(page)
    ask(page, TICKETS)
    with page.expect_download() as download:
        last_answer(page).get_by_role("link", name="Download CSV").click()
    assert download.value.suggested_filename == "how-many-tickets-did-each-roadshow-city-sell.csv"
    text = open(download.value.path(), encoding="utf-8-sig").read()
    rows = list(csv.reader(io.StringIO(text)))
    expected = sqlite3.connect(database_file_of(demo)).execute(VERIFIED_QUESTIONS[4].sql).fetchall()
    assert rows[0] == ["city", "tickets"] and [(c, int(n)) for c, n in rows[1:]] == expected


def test_hostile_names_values_and_documents_stay_text(page):
    login(page, HOSTILE_KEY)
    ask(page, HOSTILE_QUESTION)
    answer = last_answer(page)
    expect(answer.locator(".dataset-table thead th").first).to_have_text(NAME_COLUMN)
    assert sorted(column(answer, NAME_COLUMN)) == sorted(CELLS)
    chart = answer.locator(".chart")
    expect(chart).to_have_attribute("data-mode", "interactive")
    chart.locator(".mark-rect path").first.hover()
    tooltip = page.locator("#vg-tooltip-element")
    expect(tooltip).to_contain_text("<")  # the cell's markup, shown as characters
    ask(page, "What is the refund policy?")
    document = last_answer(page)
    expect(document.locator(".md")).to_contain_text('Refunds <img src=x onerror="window.__pwned = 5"> are')
    expect(document.locator(".md strong", has_text="window.__pwned = 6")).to_have_text("<script>window.__pwned = 6</script>")
    expect(document.locator(".md code", has_text="<b>not bold</b>")).to_have_count(1)
    expect(document.locator(".md a[href='https://example.com/handbook']")).to_have_count(1)
    assert document.locator(".md a[href^='javascript']").count() == 0
    shot(page, "analyst-10-hostile-text")
    assert page.locator("#chat img, #chat script, #chat iframe, #chat svg[onload], #vg-tooltip-element img").count() == 0
    assert page.evaluate("window.__pwned") is None


def test_logout_ends_the_session(page):
    login(page)
    page.get_by_role("button", name="Log out").click()
    expect(page.locator("#login")).to_be_visible()
    assert not [c for c in page.context.cookies() if c["name"].startswith("baton_session")]
    page.reload()
    expect(page.locator("#login")).to_be_visible()
    assert page.context.request.get("/v1/agents").status == 401
