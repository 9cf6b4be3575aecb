"""Multi-step questions through the orchestrator's planner, with a checkpoint decided over HTTP."""

import json

import httpx
import pytest

from agent_doubles import TableAgent
from baton.agents import OrchestratorAgent
from baton.llm import FunctionModel
from baton.pipeline import AgentStageRunner, PipelineExecutor, Planner
from baton.pipeline.planning import PipelinePlanning
from baton.server import ApiKeys, SessionStore, Workspace, Workspaces, create_app

PLAN = {
    "question": "Revenue then costs",
    "stages": [
        {"stage_id": "revenue", "description": "Revenue", "tool": "query_database", "question": "revenue by unit",
         "depends_on": [], "checkpoint": True},
        {"stage_id": "costs", "description": "Costs", "tool": "query_database", "question": "costs by unit",
         "depends_on": ["revenue"]},
    ],
}


def planner_model(messages, tools):
    return json.dumps(PLAN)


def workspace(name):
    finance = TableAgent("finance", [{"unit": "Epson", "amount": 10}])
    planning = PipelinePlanning(Planner(FunctionModel(planner_model)), PipelineExecutor(AgentStageRunner({"query_database": finance})))
    orchestrator = OrchestratorAgent(model=FunctionModel(lambda m, t: "direct answer"), planning=planning)
    orchestrator.add_agent(finance)
    return Workspace(name, orchestrator, SessionStore(), pipelines=planning)


@pytest.fixture
async def client():
    app = create_app(Workspaces([workspace("acme"), workspace("globex")]), ApiKeys({"a": "acme", "g": "globex"}))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:
        yield c


async def test_a_multi_step_question_pauses_at_its_checkpoint_and_approval_completes_it(client):
    paused = (await client.post("/v1/ask", json={"question": "First revenue by unit, then costs by unit"}, headers={"X-API-Key": "a"})).json()
    assert paused["response_type"] == "stage_checkpoint"
    workflow_id = paused["workflow_id"]
    # another workspace can't see or decide it: 404, same as an unknown id
    other = await client.post(f"/v1/pipelines/{workflow_id}/decision", json={"action": "approve"}, headers={"X-API-Key": "g"})
    assert other.status_code == 404
    bad = await client.post(f"/v1/pipelines/{workflow_id}/decision", json={"action": "edit"}, headers={"X-API-Key": "a"})
    assert bad.status_code == 422 and "needs the new question" in bad.json()["detail"]
    done = await client.post(f"/v1/pipelines/{workflow_id}/decision",
                             json={"action": "approve", "session_id": paused["session_id"]}, headers={"X-API-Key": "a"})
    assert done.status_code == 200
    assert done.json()["response_type"] == "pipeline_complete"
    again = await client.post(f"/v1/pipelines/{workflow_id}/decision", json={"action": "approve"}, headers={"X-API-Key": "a"})
    assert again.status_code == 404
    turns = (await client.get(f"/v1/sessions/{paused['session_id']}", headers={"X-API-Key": "a"})).json()["turns"]
    assert [t["answer"]["response_type"] for t in turns] == ["stage_checkpoint", "pipeline_complete"]


async def test_simple_questions_skip_planning(client):
    answer = (await client.post("/v1/ask", json={"question": "hello"}, headers={"X-API-Key": "a"})).json()
    assert answer["content"] == "direct answer" and answer["response_type"] == "text"


async def test_a_decision_for_a_foreign_session_is_refused_before_the_run_moves_on(client):
    paused = (await client.post("/v1/ask", json={"question": "First revenue by unit, then costs by unit"}, headers={"X-API-Key": "a"})).json()
    globex = (await client.post("/v1/ask", json={"question": "hello"}, headers={"X-API-Key": "g"})).json()
    wrong = await client.post(f"/v1/pipelines/{paused['workflow_id']}/decision",
                              json={"action": "approve", "session_id": globex["session_id"]}, headers={"X-API-Key": "a"})
    assert wrong.status_code == 404
    right = await client.post(f"/v1/pipelines/{paused['workflow_id']}/decision", json={"action": "approve"}, headers={"X-API-Key": "a"})
    assert right.json()["response_type"] == "pipeline_complete"  # still paused after the refusal


async def test_a_decision_naming_another_checkpoint_is_refused_and_loses_nothing(client):
    paused = (await client.post("/v1/ask", json={"question": "First revenue by unit, then costs by unit"}, headers={"X-API-Key": "a"})).json()
    url = f"/v1/pipelines/{paused['workflow_id']}/decision"
    stale = await client.post(url, json={"action": "approve", "stage_id": "costs"}, headers={"X-API-Key": "a"})
    assert stale.status_code == 422
    ok = await client.post(url, json={"action": "approve", "stage_id": "revenue"}, headers={"X-API-Key": "a"})
    assert ok.json()["response_type"] == "pipeline_complete"


class RecordingAgent(TableAgent):
    """A ``TableAgent`` that notes the context of every question it is asked."""

    def __init__(self, *args, **kw) -> None:
        super().__init__(*args, **kw)
        self.seen = {}

    async def run(self, context, *, question, **kw):
        self.seen[question] = context
        return await super().run(context, question=question, **kw)


async def test_the_stages_after_a_decision_run_with_the_asking_requests_context():
    finance = RecordingAgent("finance", [{"unit": "Epson", "amount": 10}])
    planning = PipelinePlanning(Planner(FunctionModel(planner_model)), PipelineExecutor(AgentStageRunner({"query_database": finance})))
    model = FunctionModel(lambda m, t: "direct answer")
    orchestrator = OrchestratorAgent(model=model, planning=planning)
    orchestrator.add_agent(finance)
    app = create_app(Workspaces([Workspace("acme", orchestrator, SessionStore(), pipelines=planning)]), ApiKeys({"a": "acme"}))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:
        hello = (await c.post("/v1/ask", json={"question": "hello"}, headers={"X-API-Key": "a"})).json()
        question = {"question": "First revenue by unit, then costs by unit", "session_id": hello["session_id"]}
        paused = (await c.post("/v1/ask", json=question, headers={"X-API-Key": "a"})).json()
        done = await c.post(f"/v1/pipelines/{paused['workflow_id']}/decision", json={"action": "approve"}, headers={"X-API-Key": "a"})
    assert done.json()["response_type"] == "pipeline_complete"
    before, after = finance.seen["revenue by unit"], finance.seen["costs by unit"]
    assert [m.content for m in before.chat_history] == ["hello", "direct answer"]
    assert after.chat_history == before.chat_history  # the session's conversation, not the decision's empty one
    assert after.llm_router is before.llm_router is model
    assert after.extra.get("_skip_complexity") is True and after.extra["pipeline_stage"] == "costs"
    assert (after.workspace, after.workflow_id) == ("acme", paused["workflow_id"])
