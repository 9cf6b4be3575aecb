"""Durable pipelines in a workspace (the embedded default: DBOS on SQLite in this process):
a multi-step question pauses at its checkpoint, the decision continues it, every event —
the stages' and the agents' inside them — reaches the asking request, and the HTTP API
starts, lists, streams and decides runs."""


import httpx
import pytest

from baton.events import RecordingTracker
from baton.llm import FunctionModel
from baton.pipeline import CheckpointDecision
from baton.server import create_app
from baton.state import ApiKeys
from baton.state.location import State
from baton.workspace import Workspaces
from baton.workspace.database import open_database_workspace
from baton.workspace.pipeline_host import PipelineHost
from baton.workspace.pipelines import PipelineNotFound
from baton.workspace.planning import durable_pipelines
from workspace_doubles import PIPELINE_PLAN, pipeline_model, sales_db

pytestmark = pytest.mark.timeout(120)

@pytest.fixture
def shop(tmp_path):
    return sales_db(tmp_path / "shop.sqlite")


@pytest.fixture
async def durable_ws(shop, tmp_path):
    state = State.from_env({}, home=tmp_path / "home")
    host = PipelineHost.for_state(state, queue_polling_interval_s=0.1)
    ws = open_database_workspace(shop, FunctionModel(pipeline_model), state=state, pipelines=durable_pipelines(host))
    ws.own(host)
    async with ws:
        yield ws


async def test_a_multi_step_question_runs_durably_pauses_and_continues(durable_ws):
    tracker = RecordingTracker()
    paused = await durable_ws.answer("First the total amount by region, then count the sales", tracker=tracker)
    assert paused.response_type == "stage_checkpoint" and paused.workflow_id.startswith(durable_ws.pipelines.prefix)
    assert paused.data == {"totals": [{"region": "north", "total": 12.0}, {"region": "south", "total": 4.5}]}
    types = tracker.types()
    assert ("stage.start", "totals") in [(e.type, e.data.get("stage_id")) for e in tracker.events]
    inside = [e for e in tracker.events if e.type == "sql.attempt"]
    assert inside and all(e.data["stage_id"] == "totals" for e in inside)  # the agents inside the stage, live
    assert types.index("stage.checkpoint") > types.index("stage.start")
    with pytest.raises(PipelineNotFound):
        await durable_ws.decide("p0000000000-nope", CheckpointDecision("approve"))
    done = await durable_ws.decide(paused.workflow_id, CheckpointDecision("approve", stage_id="totals"), session_id=paused.session_id)
    assert done.response_type == "pipeline_complete"
    assert done.data["counts"] == [{"region": "north", "sales": 2}, {"region": "south", "sales": 1}]
    turns = await durable_ws.sessions.turns(durable_ws.name, paused.session_id)
    assert [t.answer.response_type for t in turns] == ["stage_checkpoint", "pipeline_complete"]
    with pytest.raises(PipelineNotFound):  # decided already: nothing waits any more
        await durable_ws.decide(paused.workflow_id, CheckpointDecision("approve"))


async def test_the_http_api_starts_lists_streams_and_decides_runs(durable_ws):
    app = create_app(Workspaces([durable_ws]), ApiKeys({"k": durable_ws.name}), owns_workspaces=False)
    headers = {"X-API-Key": "k"}
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t", headers=headers, timeout=60) as client:
        bad = await client.post("/v1/pipelines", json={"plan": {"question": "x", "stages": []}})
        assert bad.status_code == 422
        started = await client.post("/v1/pipelines", json={"plan": PIPELINE_PLAN})
        assert started.status_code == 202
        wid = started.json()["workflow_id"]
        assert (await client.get("/v1/pipelines/p0000000000-other")).status_code == 404
        seen = []  # (httpx's ASGI transport returns a body once it ends: the live stream is read directly here)
        async for event in durable_ws.pipelines.events(wid):
            seen.append(event.type)
            if event.type == "stage.checkpoint":
                break
        assert seen[0] == "stage.start" and "stage.end" in seen and "sql.attempt" in seen
        listed = (await client.get("/v1/pipelines")).json()["runs"]
        assert [r["workflow_id"] for r in listed] == [wid] and listed[0]["status"] == "paused"
        edit = await client.post(f"/v1/pipelines/{wid}/decision", json={"action": "edit"})
        assert edit.status_code == 422
        done = await client.post(f"/v1/pipelines/{wid}/decision", json={"action": "approve", "stage_id": "totals"})
        assert done.status_code == 200 and done.json()["response_type"] == "pipeline_complete"
        run = (await client.get(f"/v1/pipelines/{wid}")).json()
        assert run["status"] == "complete" and run["outcome"]["response_type"] == "pipeline_complete"
        async with client.stream("GET", f"/v1/pipelines/{wid}/events") as stream:  # after the end: the whole log, then end
            names = [line[7:] async for line in stream.aiter_lines() if line.startswith("event: ")]
        assert names[-3:] == ["pipeline.complete", "pipeline.status", "end"] and names.count("stage.checkpoint") == 1
        assert names.count("sql.attempt") == 2  # a reader that comes late still sees what the stages' agents did


class ContextRecorder:
    """A stage runner that keeps the context each stage ran with."""

    def __init__(self) -> None:
        self.seen = {}

    async def run(self, stage, inputs, context):
        from baton.pipeline import StageResult

        self.seen[stage.stage_id] = context
        return StageResult(stage.stage_id)


def test_durable_stages_run_with_the_requests_model_preference_and_conversation(tmp_path):
    from baton.agents import AgentContext
    from baton.messages import Message
    from baton.pipeline import ExecutionPlan, PlanStage
    from baton.pipeline.durable import DurableConfig, PipelineClient, PipelineWorker

    config = DurableConfig(system_database_url=f"sqlite:///{tmp_path / 'system.sqlite'}", queue_polling_interval_s=0.1,
                           heartbeat_interval_s=0.5, heartbeat_lapse_s=2.0)
    recorder = ContextRecorder()
    request = AgentContext(user_question="q", workspace="acme", model="qwen2.5:7b", preferred_provider="ollama",
                           chat_history=(Message.user("earlier"), Message.assistant("answer")))
    with PipelineWorker(config, {"acme": recorder}), PipelineClient(config) as client:
        result = client.result(client.submit(ExecutionPlan("q", [PlanStage("a", "query_database", "x")]), request), timeout_s=30)
    assert result.status == "complete"
    seen = recorder.seen["a"]
    assert (seen.model, seen.preferred_provider, seen.workspace) == ("qwen2.5:7b", "ollama", "acme")
    assert [m.content for m in seen.chat_history] == ["earlier", "answer"]


def test_opening_and_closing_a_durable_workspace_leaks_no_thread_or_descriptor(shop, tmp_path):
    import asyncio
    import os
    import threading

    def own_threads():
        return [t.name for t in threading.enumerate() if not t.name.startswith("asyncio_")]

    async def once():
        state = State.from_env({}, home=tmp_path / "home")
        host = PipelineHost.for_state(state, queue_polling_interval_s=0.1)
        ws = open_database_workspace(shop, FunctionModel(pipeline_model), state=state, pipelines=durable_pipelines(host))
        ws.own(host)
        async with ws:
            assert (await ws.pipelines.runs()) == []

    asyncio.run(once())
    baseline = (len(os.listdir("/proc/self/fd")), own_threads())
    for _ in range(4):
        asyncio.run(once())
    after = (len(os.listdir("/proc/self/fd")), own_threads())
    assert after[0] <= baseline[0] and len(after[1]) <= len(baseline[1]), (baseline, after)
