"""A run's event stream in one process (DBOS on SQLite, the embedded default) over a bus that
loses every other event: the stream still yields the run's numbered events 1..n in order,
fetching what the bus lost from the run's log; over HTTP every event has ``id:`` and a
client resumes after ``Last-Event-ID`` (a bad one is a 400, one past the end gives only the
end)."""

import asyncio
import json

import httpx
import pytest

from agent_doubles import TableAgent
from baton.agents import OrchestratorAgent
from baton.llm import FunctionModel
from baton.pipeline import AgentStageRunner, PipelineExecutor, Planner
from baton.pipeline.planning import PipelinePlanning
from baton.server import SessionStore, Workspace, create_app
from baton.state import ApiKeys
from baton.state.location import State
from baton.workspace import Workspaces
from baton.workspace.database import open_database_workspace
from baton.workspace.pipeline_host import PipelineHost
from baton.workspace.planning import durable_pipelines
from workspace_doubles import PIPELINE_PLAN, pipeline_model, sales_db

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
async def lossy_ws(tmp_path):
    state = State.from_env({}, home=tmp_path / "home")
    host = PipelineHost.for_state(state, queue_polling_interval_s=0.1)
    publish, sent = host.bus.publish, []

    def lossy(channel, event):
        sent.append(event)
        if len(sent) % 2 == 0 or event.get("type") == "llm.token":
            return  # lost on the way
        publish(channel, event)

    host.bus.publish = lossy  # the worker relays through it
    ws = open_database_workspace(sales_db(tmp_path / "shop.sqlite"), FunctionModel(pipeline_model), state=state,
                                 pipelines=durable_pipelines(host))
    ws.own(host)
    async with ws:
        yield ws


async def read_sse(client, url, **headers):
    events, ident = [], None
    async with client.stream("GET", url, headers=headers) as stream:
        assert stream.status_code == 200
        async for line in stream.aiter_lines():
            if line.startswith("id: "):
                ident = int(line[4:])
            elif line.startswith("event: "):
                events.append((ident, line[7:]))
                ident = None
    return events


async def test_a_lossy_bus_loses_nothing_and_a_client_resumes_after_its_last_event(lossy_ws):
    app = create_app(Workspaces([lossy_ws]), ApiKeys({"k": lossy_ws.name}), owns_workspaces=False)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t", headers={"X-API-Key": "k"},
                                 timeout=60) as client:
        started = await client.post("/v1/pipelines", json={"plan": PIPELINE_PLAN})
        wid = started.json()["workflow_id"]
        live = []
        async for event in lossy_ws.pipelines.events(wid):  # attached at once: live, with half of it lost on the bus
            live.append((event.data["seq"], event.data["attempt"], event.type))
            if event.type == "stage.checkpoint":
                break
        assert [s for s, _, _ in live] == list(range(1, len(live) + 1)) and {a for _, a, _ in live} == {1}
        assert live[0][2] == "stage.start" and "sql.attempt" in [t for _, _, t in live]
        done = await client.post(f"/v1/pipelines/{wid}/decision", json={"action": "approve", "stage_id": "totals"})
        assert done.status_code == 200

        url = f"/v1/pipelines/{wid}/events"
        whole = await read_sse(client, url)
        numbered = [i for i, _ in whole[:-1]]
        assert whole[-1] == (None, "end") and numbered == list(range(1, len(numbered) + 1))
        assert [t for _, t in whole[:len(live)]] == [t for _, _, t in live]  # the same history for every reader
        resumed = await read_sse(client, url, **{"Last-Event-ID": str(len(live))})
        assert resumed == whole[len(live):]
        assert await read_sse(client, url + f"?after={len(live)}") == whole[len(live):]
        assert await read_sse(client, url, **{"Last-Event-ID": "999999"}) == [(None, "end")]
        assert await read_sse(client, url + "?after=" + "9" * 30) == [(None, "end")]  # not a database error
        for bad in ("abc", "1; DROP TABLE baton_run_events", "1e3", "+1", "-1", "9" * 40, "\u0661".encode(), b"\xff"):
            refused = await client.get(url, headers={"Last-Event-ID": bad})
            assert refused.status_code == 400, bad
        assert (await client.get(url.replace(wid, "p0000000000-nope"), headers={"Last-Event-ID": "1"})).status_code == 404


async def test_an_in_process_run_numbers_its_events_too():
    plan = {"question": "Revenue then costs", "stages": [
        {"stage_id": "revenue", "tool": "query_database", "question": "revenue by unit", "depends_on": []},
        {"stage_id": "costs", "tool": "query_database", "question": "costs by unit", "depends_on": ["revenue"]}]}
    finance = TableAgent("finance", [{"unit": "Epson", "amount": 10}])
    planning = PipelinePlanning(Planner(FunctionModel(lambda m, t: json.dumps(plan))),
                                PipelineExecutor(AgentStageRunner({"query_database": finance})))
    orchestrator = OrchestratorAgent(model=FunctionModel(lambda m, t: "direct answer"), planning=planning)
    orchestrator.add_agent(finance)
    app = create_app(Workspaces([Workspace("acme", orchestrator, SessionStore(), pipelines=planning)]), ApiKeys({"a": "acme"}))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t", headers={"X-API-Key": "a"},
                                 timeout=30) as client:
        wid = (await client.post("/v1/pipelines", json={"plan": plan})).json()["workflow_id"]
        for _ in range(200):
            if (await client.get(f"/v1/pipelines/{wid}")).json()["status"] == "complete":
                break
            await asyncio.sleep(0.05)
        url = f"/v1/pipelines/{wid}/events"
        whole = await read_sse(client, url)
        numbered = [i for i, _ in whole[:-1]]
        assert whole[-1] == (None, "end") and len(numbered) >= 4 and numbered == list(range(1, len(numbered) + 1))
        assert await read_sse(client, url, **{"Last-Event-ID": "2"}) == whole[2:]
