"""The page a data team keeps (issue 29, item 2), in a real browser at desktop and phone width
(390x844): a loading state while a question runs; steps that say what happened, with no
"thinking" line when no model was called; "12 rows", never "row(s)"; sortable columns
(numbers as numbers); a chart-type switch among the types the data allows; a phone layout
with the ask box on screen at once, a sidebar that folds away and charts drawn at the width
they have (labels at a readable size); a logout that forgets the workspace's tables and
examples. Each of the page's bugs listed in the issue has a test here that failed before.

Workspaces: the demo with no model (verified questions, the semantic model, documents), a
second small database (another workspace's tables), and one whose specialist waits for the
test (to see the page while a question runs; routing by a FunctionModel).

Screenshots land in ``test-artifacts/browser/page-*.png`` (git-ignored).
"""

from __future__ import annotations

import asyncio
import re
import sqlite3
import threading

import pytest

from baton.agents import OrchestratorAgent
from baton.demo.data import build_demo_database
from baton.demo.workspace import build_demo_workspace
from baton.llm import FunctionModel, tool_call
from baton.messages import LLMResponse
from baton.server import ApiKeys, SessionStore, Workspace, Workspaces, create_app
from baton.state.location import State
from baton.workspace.database import open_database_workspace
from browser_support import ARTIFACTS, ask, browser, column, gated_agent, last_answer, needs_chromium, new_page, shot  # noqa: F401  (browser: a fixture)
from live_server import serve

pytestmark = [pytest.mark.browser, needs_chromium]
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
expect = sync_api.expect

DEMO_KEY = "bt_page_demo_key"
STOCK_KEY = "bt_page_stock_key"
GATED_KEY = "bt_page_gated_key"
PHONE = {"width": 390, "height": 844}
MONTHLY = "What was Pokemon revenue by month in 2025?"
PRODUCTS = "Which Pokemon products sold the most in 2025?"
TICKETS = "How many tickets did each roadshow city sell?"


@pytest.fixture(scope="module")
def gated():
    return gated_agent()


def stock_workspace(directory):
    """Another workspace with tables of its own (a warehouse's stock)."""
    database = directory / "stock.sqlite"
    with sqlite3.connect(database) as db:
        db.execute("CREATE TABLE stock_items (sku TEXT PRIMARY KEY, quantity INTEGER)")
        db.executemany("INSERT INTO stock_items VALUES (?, ?)", [("A-1", 3), ("B-2", 12)])
    return open_database_workspace(f"sqlite:///{database}", None, state=State.from_env(env={}, home=directory / "home"), name="stock")


@pytest.fixture(scope="module")
def base_url(gated, tmp_path_factory):
    directory = tmp_path_factory.mktemp("demo")
    build_demo_database(directory / "finance.sqlite", sales_rows=2_000)
    demo = build_demo_workspace(directory)
    stock = stock_workspace(tmp_path_factory.mktemp("stock"))
    router = FunctionModel(lambda messages, tools: LLMResponse(content="done") if messages[-1].role == "tool"
                           else LLMResponse(tool_calls=[tool_call("gated", {"question": messages[-1].content})]))
    waiting = OrchestratorAgent("waiting", model=router)
    waiting.add_agent(gated)
    app = create_app(Workspaces([demo, stock, Workspace("waiting", waiting, SessionStore())]),
                     ApiKeys({DEMO_KEY: "demo", STOCK_KEY: "stock", GATED_KEY: "waiting"}), owns_workspaces=False)
    with serve(app) as url:
        yield url
    closing = threading.Thread(target=lambda: [asyncio.run(ws.aclose()) for ws in (demo, stock)])
    closing.start()  # a loop of its own: Playwright's runs in this thread
    closing.join(30)


@pytest.fixture
def page(browser, base_url):
    errors: list[str] = []
    page = new_page(browser, base_url, errors)
    yield page
    page.context.close()
    assert not errors, f"JavaScript errors on the page: {errors}"


@pytest.fixture
def phone(browser, base_url):
    errors: list[str] = []
    page = new_page(browser, base_url, errors)
    page.set_viewport_size(PHONE)
    yield page
    page.context.close()
    assert not errors, f"JavaScript errors on the page: {errors}"


def login(page, key: str = DEMO_KEY) -> None:
    page.goto("about:blank")
    page.goto(f"/#key={key}")
    expect(page.locator("#agents li").first).to_be_attached()
    expect(page.locator("#ask-form")).to_be_visible()


def steps(page) -> list[str]:
    turn = page.locator("#chat .turn").last
    turn.locator("details.steps summary").click()
    return turn.locator("details.steps .events li").all_inner_texts()


def screen(page, name: str) -> None:
    """What the phone's screen shows (a full-page shot draws sticky bars mid-page)."""
    (ARTIFACTS / "browser").mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "browser" / f"{name}.png"))


def on_screen(page, selector: str) -> bool:
    box = page.locator(selector).bounding_box()
    size = page.viewport_size
    return box is not None and box["y"] >= 0 and box["y"] + box["height"] <= size["height"] and box["x"] + box["width"] <= size["width"]


# --- scenarios -------------------------------------------------------------------------------


def test_a_question_shows_a_loading_state_until_its_answer(page, gated):
    login(page, GATED_KEY)
    gated.gate.clear()
    page.fill("#question", "A slow question")
    page.click("#ask-button")
    turn = page.locator("#chat .turn").last
    loading = turn.locator(".loading[role=status]")
    expect(loading).to_be_visible()
    expect(loading).to_contain_text("gated is working on it")  # it says the latest step
    expect(turn).to_have_attribute("aria-busy", "true")
    expect(page.locator("#ask-button")).to_have_text("Asking…")
    expect(page.locator("#ask-button")).to_be_disabled()
    shot(page, "page-01-loading")
    gated.gate.set()
    expect(turn.locator(".answer .text")).to_have_text("The gate opened.")
    expect(loading).to_have_count(0)
    expect(turn).not_to_have_attribute("aria-busy", "true")
    expect(page.locator("#ask-button")).to_have_text("Ask")
    assert "✓ the model replied" in " ".join(steps(page))  # a real model call is said as one


def test_steps_say_what_happened_and_no_thinking_when_no_model_was_called(page):
    login(page)
    ask(page, MONTHLY)
    said = steps(page)
    assert not [s for s in said if "thinking" in s or "waiting for the model" in s], said
    assert "matched a verified question, no LLM call" in said
    assert said[-1] == "answered from a verified question, no LLM call"
    page.click("#new-session")
    metric = page.locator(".example-group[data-kind=metrics] button.example").first
    metric.click()
    expect(last_answer(page)).to_be_visible()
    expect(page.locator("#ask-button")).to_be_enabled()
    said = steps(page)
    assert said[-1] == "answered from the semantic model, no LLM call", said
    assert not [s for s in said if "thinking" in s]
    page.click("#new-session")
    ask(page, "How are cancelled roadshow events handled?")
    said = steps(page)
    assert said[-1] == "answered from the documents, no LLM call", said
    assert "routed by keywords, no LLM call" in said and not [s for s in said if "thinking" in s]
    shot(page, "page-02-steps-no-model")
    ask(page, "Which Pokemon products had the most returns in 2025?")  # an ask-back stays information
    expect(last_answer(page)).to_have_class(re.compile(r"\binfo\b"))
    expect(last_answer(page)).not_to_have_class(re.compile(r"\berror\b"))


def test_counts_say_12_rows_never_row_s_and_numbers_are_grouped(page):
    login(page)
    ask(page, TICKETS)
    answer = last_answer(page)
    expect(answer.locator(".text")).to_contain_text("12 rows.")
    expect(answer.locator(".dataset-table .caption")).to_contain_text("12 rows")
    assert "row(s)" not in page.locator("#chat").inner_text()
    tickets = column(answer, "tickets")
    assert all(re.fullmatch(r"\d{1,3}(,\d{3})+", t) for t in tickets), tickets  # 26,666, not 26666
    steps(page)
    expect(page.locator("#chat .turn").last.locator(".events li[data-type='sql.attempt']")).to_contain_text("(12 rows)")


def test_columns_sort_on_click_numbers_as_numbers(page):
    login(page)
    ask(page, TICKETS)
    answer = last_answer(page)
    original = column(answer, "city")
    tickets = answer.locator("th", has_text="tickets")
    tickets.get_by_role("button").click()
    expect(tickets).to_have_attribute("aria-sort", "ascending")
    numbers = [int(t.replace(",", "")) for t in column(answer, "tickets")]
    assert numbers == sorted(numbers)
    tickets.get_by_role("button").click()
    expect(tickets).to_have_attribute("aria-sort", "descending")
    numbers = [int(t.replace(",", "")) for t in column(answer, "tickets")]
    assert numbers == sorted(numbers, reverse=True)
    shot(page, "page-03-sorted-descending")
    tickets.get_by_role("button").click()  # a third click: the answer's own order
    expect(tickets).to_have_attribute("aria-sort", "none")
    assert column(answer, "city") == original
    city = answer.locator("th", has_text="city")
    city.get_by_role("button").click()
    cities = column(answer, "city")
    assert cities == sorted(cities, key=str.lower)
    expect(tickets).to_have_attribute("aria-sort", "none")


def test_a_chart_type_switch_offers_only_what_the_data_allows(page):
    login(page)
    ask(page, MONTHLY)
    chart = last_answer(page).locator(".chart")
    kinds = chart.locator(".chart-kinds button")
    expect(kinds).to_have_text(["line", "bar", "area"])
    expect(kinds.first).to_have_attribute("aria-pressed", "true")
    kinds.nth(1).click()
    expect(chart.locator(".mark-rect path")).to_have_count(12)
    expect(kinds.nth(1)).to_have_attribute("aria-pressed", "true")
    kinds.nth(2).click()
    expect(chart.locator(".mark-area path")).to_have_count(1)
    shot(page, "page-04-chart-switched-to-area")
    ask(page, PRODUCTS)
    chart = last_answer(page).locator(".chart")
    kinds = chart.locator(".chart-kinds button")
    expect(kinds).to_have_text(["bar", "pie"])  # 4 products, none negative: a pie fits
    kinds.nth(1).click()
    expect(chart.locator(".mark-arc path")).to_have_count(4)
    chart.locator(".mark-arc path").first.hover()
    expect(page.locator("#vg-tooltip-element")).to_contain_text("revenue")
    kinds.first.click()
    expect(chart.locator(".mark-rect path")).to_have_count(4)
    ask(page, "Show percentage breakdown")  # drawn as a pie by the server: a bar is offered too
    chart = last_answer(page).locator(".chart")
    kinds = chart.locator(".chart-kinds button")
    expect(kinds).to_have_text(["bar", "pie"])
    expect(kinds.nth(1)).to_have_attribute("aria-pressed", "true")
    kinds.first.click()
    expect(chart.locator(".mark-rect path")).to_have_count(4)
    expect(chart.locator(".mark-arc path")).to_have_count(0)
    ask(page, TICKETS)  # 12 cities: too many slices for a pie, and no time axis: nothing to switch to
    expect(last_answer(page).locator(".chart svg").first).to_be_visible()
    expect(last_answer(page).locator(".chart-kinds")).to_have_count(0)


def test_logout_forgets_the_workspace_tables_and_examples(page):
    login(page)
    page.click("#schema-button")
    expect(page.locator("#schema .schema-table[data-table=roadshow_events]")).to_have_count(1)
    page.click("#schema-close")
    expect(page.locator(".example-group button.example").first).to_be_visible()
    ask(page, TICKETS)
    page.get_by_role("button", name="Log out").click()
    expect(page.locator("#login")).to_be_visible()
    expect(page.locator("#chat .turn")).to_have_count(0)
    expect(page.locator("#schema-list .schema-table")).to_have_count(0)
    expect(page.locator("#examples button.example")).to_have_count(0)
    page.fill("#login-key", STOCK_KEY)  # another workspace, in the same page (no reload)
    page.locator("#login-form button").click()
    expect(page.locator("#workspace")).to_have_text("stock")
    page.click("#schema-button")
    tables = page.locator("#schema .schema-table")
    expect(tables).to_have_count(1)
    expect(tables).to_have_attribute("data-table", "stock_items")
    assert "Pokemon" not in page.locator("#examples").inner_text()
    shot(page, "page-05-after-logout-other-workspace")


def test_desktop_layout_keeps_sidebar_and_hides_the_menu_button(page):
    login(page)
    expect(page.locator("#sidebar")).to_be_visible()
    expect(page.locator("#menu-button")).to_be_hidden()
    ask(page, MONTHLY)
    svg = last_answer(page).locator(".chart svg").first
    assert svg.bounding_box()["width"] > 500  # drawn at its width: there is room
    shot(page, "page-06-desktop-answer")


def axis_labels(page, answer) -> list[dict]:
    """Every axis label of the answer's chart as it is on screen (rotated labels: their box)."""
    return answer.locator(".chart .role-axis-label text").evaluate_all(
        "nodes => nodes.filter(n => n.textContent).map(n => { const r = n.getBoundingClientRect();"
        " return { text: n.textContent, x: r.x, y: r.y, w: r.width, h: r.height, size: parseFloat(getComputedStyle(n).fontSize),"
        " scale: n.ownerSVGElement.getBoundingClientRect().width / n.ownerSVGElement.width.baseVal.value }; })")


def test_phone_the_ask_box_is_on_screen_at_once_and_stays(phone):
    page = phone
    login(page)
    assert on_screen(page, "#question") and on_screen(page, "#ask-button"), page.locator("#question").bounding_box()
    screen(page, "page-07-phone-empty")
    ask(page, MONTHLY)
    ask(page, TICKETS)
    assert on_screen(page, "#question"), "the ask box stays on screen below a long answer"
    screen(page, "page-08-phone-answer")
    page.evaluate("window.scrollTo(0, 0)")
    assert on_screen(page, "#question"), "the ask box is on screen from the top of the page too"
    wrap = last_answer(page).locator(".table-wrap").bounding_box()
    assert wrap["x"] + wrap["width"] <= PHONE["width"]


def test_phone_charts_are_drawn_at_its_width_with_readable_labels(phone):
    page = phone
    login(page)
    for question in (MONTHLY, TICKETS):
        ask(page, question)
        answer = last_answer(page)
        svg = answer.locator(".chart svg").first
        expect(svg).to_be_visible()
        box = svg.bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"], box
        labels = axis_labels(page, answer)
        assert labels, "the chart has axis labels"
        for label in labels:  # drawn at the phone's width, not a desktop chart shrunk: 10 px text or more
            assert label["size"] * label["scale"] >= 10, label
        if question == TICKETS:  # 12 cities lie down, one labelled bar each, none left unnamed
            texts = {label["text"] for label in labels}
            assert set(column(answer, "city")) <= texts, texts
        svg.scroll_into_view_if_needed()
        screen(page, "page-09-phone-chart-" + ("months" if question == MONTHLY else "cities"))


def test_phone_the_sidebar_is_a_menu_that_folds_away(phone):
    page = phone
    login(page)
    expect(page.locator("#sidebar")).to_be_hidden()  # folded away: the page is the question
    expect(page.locator("#menu-button")).to_be_visible()
    page.click("#menu-button")
    expect(page.locator("#sidebar")).to_be_visible()
    expect(page.locator("#menu-button")).to_have_attribute("aria-expanded", "true")
    expect(page.get_by_role("button", name="Log out")).to_be_visible()
    screen(page, "page-10-phone-menu")
    page.click("#new-session")  # choosing in the menu closes it
    expect(page.locator("#sidebar")).to_be_hidden()
    page.click("#menu-button")
    page.click("#schema-button")  # the tables open over the page, and close again
    expect(page.locator("#schema")).to_be_visible()
    assert on_screen(page, "#schema-close")
    screen(page, "page-11-phone-tables")
    page.click("#schema-close")
    expect(page.locator("#schema")).to_be_hidden()
