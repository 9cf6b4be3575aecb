"""The web page in a real browser: Playwright driving the system Chromium against a live server.

One server and one browser per module (a fresh browser context, so fresh cookies, per test).
The workspace's agents are real and small: a chart agent whose answer goes through
``baton.viz.presentation.present`` (chart, follow-ups, insights), two table agents for synthesis
answers, a gated agent the test releases (to see events arrive before the answer); a second
workspace's planner turns a multi-step question into a plan that pauses at a checkpoint.
Routing and planning are FunctionModels.

Screenshots land in ``test-artifacts/browser/`` (git-ignored).
"""

from __future__ import annotations

import datetime as dt
import json
import re

import pytest

from agent_doubles import TableAgent
from baton.agents import AgentContext, AgentResult, BaseAgent, OrchestratorAgent
from baton.errors import ProviderError
from baton.llm import FunctionModel, tool_call
from baton.messages import LLMResponse
from baton.pipeline import AgentStageRunner, PipelineExecutor, Planner
from baton.pipeline.planning import PipelinePlanning
from baton.response import AIMessage, QueryResult, ResponseType
from baton.server import ApiKeys, SessionStore, Workspace, Workspaces, create_app
from baton.viz.presentation import present
from browser_support import browser, gated_agent, needs_chromium, shot  # noqa: F401  (browser: a fixture; shot: test_browser_durable)
from live_server import serve

KEY = "bt_browser_test_key"
OTHER_KEY = "bt_other_workspace_key"
PIPELINE_KEY = "bt_pipeline_workspace_key"

pytestmark = [pytest.mark.browser, needs_chromium]
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
expect = sync_api.expect

# --- the workspace's agents ----------------------------------------------------------------

MONTHS = [dt.date(2024, m, 1) for m in range(1, 13)]
REVENUE = [1000.0 + 37 * m + (400 if m == 7 else 0) for m in range(1, 13)]


class RevenueAgent(BaseAgent):
    """A single-dataset answer dressed by ``present()``: rows, SQL, chart, follow-ups, insights."""

    def __init__(self) -> None:
        super().__init__("revenue", "Monthly revenue for the Pokemon unit")

    async def run(self, context: AgentContext, *, question: str, **kw) -> AgentResult:
        result = QueryResult(columns=["month", "revenue"], rows=[[m, r] for m, r in zip(MONTHS, REVENUE)],
                             column_types=["DATE", "REAL"])
        message = present(AIMessage(
            content=f"Revenue by month: {len(result.rows)} months.", data=[dict(zip(result.columns, r)) for r in result.rows],
            results=result, query="SELECT month, SUM(revenue) AS revenue FROM sales GROUP BY month ORDER BY month",
            input=question, response_type=ResponseType.SQL_RESULT,
        ), seed=7)
        assert message.viz_config and message.suggested_followups and message.insights, "present() filled nothing"
        return AgentResult(agent_name=self.name, task=question, result=message.content, ai_message=message)


INJECTION = '<img src=x onerror="window.__pwned = 1">'


class InjectorAgent(BaseAgent):
    """Answers with markup in its text, column names and cells: the page must show it as text."""

    async def run(self, context: AgentContext, *, question: str, **kw) -> AgentResult:
        message = AIMessage(content=f"Result {INJECTION}", data=[{"<b>name</b>": "<script>window.__pwned = 2</script>", "n": 1}],
                            query="SELECT '<svg onload=alert(1)>'", suggested_followups=[INJECTION],
                            insights=[{"id": "i1", "kind": "note", "text": INJECTION}])
        return AgentResult(agent_name=self.name, task=question, result=message.content, ai_message=message)


class BrokenAgent(BaseAgent):
    """A specialist that fails: its step must not wear a check mark."""

    async def run(self, context: AgentContext, *, question: str, **kw) -> AgentResult:
        raise RuntimeError("the warehouse is on fire")


def route(messages, tools):
    if messages[-1].role == "tool":
        return LLMResponse(content="Pokemon and Epson side by side: " + " / ".join(m.content for m in messages if m.role == "tool"))
    question = messages[-1].content.lower()
    if "compare" in question:
        return LLMResponse(tool_calls=[tool_call(u, {"question": question}) for u in ("pokemon_finance", "epson_finance")])
    if "unavailable" in question:
        raise ProviderError("the model is down for maintenance", provider="function", model="router")
    if "broken" in question:
        return LLMResponse(tool_calls=[tool_call("broken", {"question": question})])
    if "inject" in question:
        return LLMResponse(tool_calls=[tool_call("injector", {"question": question})])
    if "slow" in question:
        return LLMResponse(tool_calls=[tool_call("gated", {"question": question})])
    return LLMResponse(tool_calls=[tool_call("revenue", {"question": question})])


@pytest.fixture(scope="module")
def gated():
    return gated_agent()


@pytest.fixture(scope="module")
def app(gated, tmp_path_factory):
    from baton.memory import MemoryStore, TrustedAuthenticator

    memory = MemoryStore(f"sqlite:///{tmp_path_factory.mktemp('memory') / 'memory.sqlite'}", authenticator=TrustedAuthenticator())
    orchestrator = OrchestratorAgent("finance", model=FunctionModel(route))
    orchestrator.add_agent(RevenueAgent())
    orchestrator.add_agent(gated)
    orchestrator.add_agent(InjectorAgent("injector", "Returns hostile text"))
    orchestrator.add_agent(BrokenAgent("broken", "Always fails"))
    for unit, revenue in (("pokemon_finance", 1200), ("epson_finance", 800)):
        orchestrator.add_agent(TableAgent(unit, [{"unit": unit, "revenue": revenue}]))
    other = OrchestratorAgent("other", model=FunctionModel(route))
    other.add_agent(RevenueAgent())
    workspaces = Workspaces([Workspace("finance", orchestrator, SessionStore(), memory=memory), Workspace("other", other, SessionStore()),
                             pipeline_workspace()])
    return create_app(workspaces, ApiKeys({KEY: "finance", OTHER_KEY: "other", PIPELINE_KEY: "pipelines"}))


PLAN = {
    "question": "Revenue then costs",
    "stages": [
        {"stage_id": "revenue", "description": "Revenue", "tool": "query_database", "question": "revenue by unit",
         "depends_on": [], "checkpoint": True},
        {"stage_id": "costs", "description": "Costs", "tool": "query_database", "question": "costs by unit",
         "depends_on": ["revenue"]},
    ],
}


class UnitsAgent(BaseAgent):
    """A stage's specialist: a small result table per question."""

    async def run(self, context: AgentContext, *, question: str, **kw) -> AgentResult:
        result = QueryResult(columns=["unit", "amount"], rows=[["Epson", 10 + len(question)], ["Pokemon", 30]])
        message = AIMessage(content=f"{question}: 2 units", data=result.records(), results=result)
        return AgentResult(agent_name=self.name, task=question, result=message.content, ai_message=message)


def pipeline_workspace() -> Workspace:
    """The orchestrator's planner turns a multi-step question into a plan that pauses for review."""
    finance = UnitsAgent("finance", "Revenue and costs by unit")
    planning = PipelinePlanning(Planner(FunctionModel(lambda m, t: json.dumps(PLAN))),
                                PipelineExecutor(AgentStageRunner({"query_database": finance})))
    orchestrator = OrchestratorAgent("planner", model=FunctionModel(lambda m, t: "direct answer"), planning=planning)
    orchestrator.add_agent(finance)
    return Workspace("pipelines", orchestrator, SessionStore(), pipelines=planning)


@pytest.fixture(scope="module")
def base_url(app):
    with serve(app) as url:
        yield url


@pytest.fixture
def page(browser, base_url, request):
    context = browser.new_context(base_url=base_url, viewport={"width": 1280, "height": 900})
    context.set_default_timeout(10_000)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    yield page
    context.close()
    assert not errors, f"JavaScript errors on the page: {errors}"


def login(page, key: str = KEY) -> None:
    page.goto("about:blank")
    page.goto(f"/#key={key}")
    expect(page.locator("#agents li").first).to_be_visible()
    expect(page).to_have_url(re.compile(r"/$"))  # the key left the address bar


def ask(page, question: str) -> None:
    page.fill("#question", question)
    page.click("#ask-button")


def last_turn(page):
    return page.locator("#chat .turn").last


# --- scenarios -----------------------------------------------------------------------------


def test_login_link_opens_the_workspace_and_a_bad_key_does_not(page):
    page.goto("/")
    expect(page.locator("#login")).to_be_visible()  # no cookie yet: the page asks for a key
    assert page.locator("#agents li").count() == 0
    page.goto("about:blank")  # a fresh load: "/" -> "/#..." alone would only move the fragment
    page.goto("/#key=wrong")
    expect(page.locator("#login-error")).to_have_text("That key is not valid.")
    assert page.locator("#agents li").count() == 0
    assert page.context.request.post("/login", data={"key": KEY}, headers={"Origin": "https://evil.example"}).status == 403
    login(page)
    expect(page.locator("#login")).to_be_hidden()
    expect(page.locator("#agents li")).to_have_text(["revenue", "gated", "injector", "broken", "pokemon_finance", "epson_finance"])
    shot(page, "01-logged-in")


def test_events_stream_into_the_page_before_the_answer(page, gated):
    login(page)
    gated.gate.clear()
    ask(page, "A slow question")
    turn = last_turn(page)
    expect(turn.locator(".events li", has_text="gated is working on it")).to_be_visible()
    expect(turn.locator(".events li[data-type='llm.start']").first).to_be_visible()
    assert turn.locator(".answer").count() == 0, "the answer arrived before the gate opened"
    expect(page.locator("#ask-button")).to_be_disabled()
    shot(page, "02-streaming")
    gated.gate.set()
    expect(turn.locator(".answer .text")).to_have_text("The gate opened.")
    steps = turn.locator("details.steps")  # the progress folds away once the answer is in
    expect(steps.locator("summary")).to_have_text(re.compile(r"^\d+ steps$"))
    steps.locator("summary").click()
    expect(steps.locator(".events li", has_text="gated success")).to_be_visible()
    expect(page.locator("#ask-button")).to_be_enabled()


def test_a_single_dataset_answer_shows_chart_table_and_sql(page):
    login(page)
    ask(page, "Revenue by month")
    answer = last_turn(page).locator(".answer")
    figure = answer.locator(".chart")
    expect(figure).to_have_attribute("data-mode", "interactive")  # drawn in the page by the vendored Vega runtime
    svg = figure.locator("svg").first
    expect(svg).to_be_visible()
    assert svg.get_attribute("aria-label").lower() == "revenue by month" and svg.bounding_box()["width"] > 300
    figure.locator(".mark-symbol path").nth(6).hover()  # July: the tooltip says what is under the pointer
    tooltip = page.locator("#vg-tooltip-element")
    expect(tooltip).to_be_visible()
    expect(tooltip).to_contain_text("revenue")
    expect(tooltip).to_contain_text("1,659")
    assert answer.locator("table thead th").all_inner_texts() == ["month", "revenue"]
    rows = answer.locator("table tbody tr")
    expect(rows).to_have_count(12)
    assert rows.first.locator("td").all_inner_texts() == ["2024-01-01", "1,037"]
    sql = answer.locator("details.sql pre")
    expect(sql).to_be_hidden()  # folded until asked for
    answer.locator("details.sql summary").click()
    expect(sql).to_have_text(re.compile(r"^SELECT month, SUM\(revenue\)"))
    expect(answer.locator(".meta")).to_contain_text("answered by revenue")
    shot(page, "03-chart-and-table")


def test_a_synthesis_answer_has_one_tab_per_agent(page):
    login(page)
    ask(page, "Compare Pokemon and Epson")
    answer = last_turn(page).locator(".answer")
    tabs = answer.locator("[role=tab]")
    expect(tabs).to_have_text(["pokemon_finance", "epson_finance"])
    pokemon, epson = answer.locator("[role=tabpanel][data-agent=pokemon_finance]"), answer.locator("[role=tabpanel][data-agent=epson_finance]")
    expect(pokemon).to_be_visible()
    expect(epson).to_be_hidden()
    expect(pokemon.locator("td").first).to_have_text("pokemon_finance")
    expect(tabs.first).to_have_attribute("aria-selected", "true")
    tabs.nth(1).click()
    expect(epson).to_be_visible()
    expect(pokemon).to_be_hidden()
    expect(epson.locator("td").first).to_have_text("epson_finance")
    expect(tabs.nth(1)).to_have_attribute("aria-selected", "true")
    expect(answer.locator(".text")).to_contain_text("Pokemon and Epson side by side")
    shot(page, "04-synthesis-tabs")


def test_a_follow_up_chip_asks_it_as_a_new_turn_in_the_same_conversation(page):
    login(page)
    ask(page, "Revenue by month")
    chips = last_turn(page).locator(".chips .chip")
    expect(chips.first).to_be_visible()
    chip_text = chips.first.inner_text()
    chips.first.click()
    expect(page.locator("#chat .turn")).to_have_count(2)
    expect(last_turn(page).locator(".question")).to_have_text(chip_text)
    expect(last_turn(page).locator(".answer .chart svg").first).to_be_visible()
    expect(page.locator("#sessions .session.active")).to_have_count(1)
    shot(page, "05-follow-up")


def test_an_insight_can_be_dismissed(page, app):
    login(page)
    ask(page, "Revenue by month")
    insight = last_turn(page).locator(".insight")
    expect(insight).to_have_count(1)
    expect(insight).to_contain_text("largest change")
    shot(page, "06-insight")
    with page.expect_response("**/v1/insights/dismiss") as reply:
        insight.get_by_role("button", name="Dismiss").click()
    assert reply.value.ok
    expect(insight).to_have_count(0)


def test_thumbs_feedback_is_sent_and_acknowledged(page, app):
    login(page)
    ask(page, "Revenue by month")
    feedback = last_turn(page).locator(".feedback")
    expect(feedback.get_by_role("button", name="Thumbs up")).to_be_visible()
    shot(page, "07-feedback")
    with page.expect_request("**/v1/feedback") as sent:
        feedback.get_by_role("button", name="Thumbs up").click()
    assert sent.value.post_data_json["thumbs"] == "up" and sent.value.post_data_json["turn_id"]
    expect(feedback).to_contain_text("Thanks")
    shot(page, "07-feedback-sent")


def test_the_session_list_shows_the_conversation_and_reopening_restores_it(page):
    login(page)
    ask(page, "Revenue by month for the session test")
    expect(last_turn(page).locator(".answer")).to_be_visible()
    ask(page, "Compare Pokemon and Epson for the session test")
    expect(page.locator("#chat .turn .answer")).to_have_count(2)
    entry = page.locator("#sessions .session", has_text="Revenue by month for the session test")
    expect(entry).to_have_count(1)
    expect(entry).to_have_class(re.compile("active"))
    page.click("#new-session")
    expect(page.locator("#chat .turn")).to_have_count(0)
    page.reload()  # the list comes from the server, not from the page's memory
    entry.click()
    turns = page.locator("#chat .turn")
    expect(turns).to_have_count(2)
    expect(turns.nth(0).locator(".question")).to_have_text("Revenue by month for the session test")
    expect(turns.nth(0).locator(".chart svg").first).to_be_visible()
    expect(turns.nth(1).locator("[role=tab]")).to_have_count(2)
    # the restored conversation continues where it left off
    ask(page, "Revenue by month, again")
    expect(page.locator("#chat .turn .answer")).to_have_count(3)
    expect(page.locator("#sessions .session", has_text="Revenue by month for the session test")).to_have_count(1)
    shot(page, "08-session-restored")


def test_markup_in_answers_is_shown_as_text_never_run(page):
    login(page)
    ask(page, "inject something")
    answer = last_turn(page).locator(".answer")
    expect(answer.locator(".text")).to_have_text(f"Result {INJECTION}")
    assert answer.locator("th").first.inner_text() == "<b>name</b>"
    assert answer.locator("td").first.inner_text() == "<script>window.__pwned = 2</script>"
    expect(answer.locator(".chip")).to_have_text([INJECTION])
    expect(answer.locator(".insight span")).to_have_text(INJECTION)
    assert page.locator("#chat img[src=x], #chat script, #chat b, #chat svg[onload]").count() == 0
    assert page.evaluate("window.__pwned") is None
    shot(page, "11-markup-as-text")


def test_a_failed_request_is_shown_as_an_error_and_the_page_stays_usable(page):
    login(page)
    ask(page, "model unavailable?")
    failed = last_turn(page).locator(".answer.error")
    expect(failed).to_contain_text("the model is down for maintenance")
    expect(page.locator("#ask-button")).to_be_enabled()
    shot(page, "12-failed-request")
    ask(page, "Revenue by month")
    expect(last_turn(page).locator(".answer .chart svg").first).to_be_visible()


def test_another_workspace_key_sees_none_of_these_conversations(page):
    login(page, OTHER_KEY)
    expect(page.locator("#agents li")).to_have_text(["revenue"])
    expect(page.locator("#sessions li")).to_have_count(0)
    expect(page.locator("#empty")).to_be_visible()
    shot(page, "13-other-workspace-empty")


def test_approving_a_pipeline_checkpoint_continues_the_plan(page, app):
    login(page, PIPELINE_KEY)
    ask(page, "First revenue by unit, then costs by unit")
    turn = last_turn(page)
    checkpoint = turn.locator(".checkpoint")
    expect(checkpoint).to_be_visible()
    expect(checkpoint.locator(".title")).to_contain_text("revenue")
    expect(checkpoint.get_by_role("button")).to_have_text(["Approve", "Edit", "Reject"])
    expect(turn.locator(".answer [role=tab]")).to_have_text(["revenue"])  # the stage's rows so far
    checkpoint.get_by_role("button", name="Edit").click()  # Edit first asks for the new question
    expect(checkpoint.get_by_role("textbox")).to_be_visible()
    shot(page, "09-checkpoint")
    with page.expect_request(re.compile(r"/v1/pipelines/[^/]+/decision$")) as sent:
        checkpoint.get_by_role("button", name="Approve").click()
    assert sent.value.post_data_json["action"] == "approve" and sent.value.post_data_json["session_id"]
    assert sent.value.response().ok
    expect(checkpoint).to_contain_text("Approved.")
    expect(checkpoint.get_by_role("button", name="Approve")).to_be_disabled()
    done = turn.locator(".answer").nth(1)
    expect(done.locator("[role=tab]")).to_have_text(["revenue", "costs"])
    expect(done.locator(".checkpoint")).to_have_count(0)
    shot(page, "10-checkpoint-approved")


def test_a_failed_step_wears_no_check_mark(page):
    login(page)
    ask(page, "Ask the broken specialist")
    turn = last_turn(page)
    expect(turn.locator(".answer")).to_be_visible()
    turn.locator("details.steps summary").click()
    failed = turn.locator(".events li[data-type='agent.end']", has_text="broken")
    expect(failed).to_have_class(re.compile("failed"))
    expect(failed).to_have_text(re.compile(r"^✗ broken "))
    assert "✓" not in failed.inner_text()
    shot(page, "14-failed-step")
