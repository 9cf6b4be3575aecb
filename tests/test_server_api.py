import json

import httpx
import openai
import pytest

from agent_doubles import TableAgent
from baton.agents import OrchestratorAgent
from baton.llm import FunctionModel, tool_call
from baton.messages import LLMResponse
from baton.server import ApiKeys, SessionStore, Workspace, Workspaces, create_app
from live_server import serve

UNITS = ["pokemon_finance", "epson_finance"]


def route(messages, tools):
    if messages[-1].role == "tool":
        return "Both: " + " / ".join(m.content for m in messages if m.role == "tool")
    question = messages[-1].content
    if question.startswith("both"):
        return LLMResponse(tool_calls=[tool_call(u, {"question": question}) for u in UNITS])
    unit = "epson_finance" if "epson" in question.lower() else "pokemon_finance"
    return LLMResponse(tool_calls=[tool_call(unit, {"question": question})])


def workspace(name: str, rows_tag: str) -> Workspace:
    orchestrator = OrchestratorAgent(f"{name}-orchestrator", model=FunctionModel(route))
    for unit in UNITS:
        orchestrator.add_agent(TableAgent(unit, [{"unit": unit, "workspace": rows_tag}]))
    return Workspace(name, orchestrator, SessionStore())


@pytest.fixture
def app():
    workspaces = Workspaces([workspace("acme", "acme-data"), workspace("globex", "globex-data")])
    return create_app(workspaces, ApiKeys({"key-acme": "acme", "key-globex": "globex"}))


@pytest.fixture
async def client(app):
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as c:
        yield c


ACME = {"Authorization": "Bearer key-acme"}
GLOBEX = {"X-API-Key": "key-globex"}


async def test_health_needs_no_key_everything_else_does(client):
    assert (await client.get("/health")).json() == {"status": "ok"}
    for method, path in [("get", "/v1/agents"), ("post", "/v1/ask"), ("get", "/v1/sessions"), ("post", "/v1/chat/completions")]:
        response = await client.request(method, path, json={"question": "x"})
        assert response.status_code == 401, path
        assert response.json() == {"detail": "an API key is required"}
    wrong = await client.get("/v1/agents", headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401 and "acme" not in wrong.text


async def test_ask_returns_the_aimessage_and_keeps_the_session(client):
    first = (await client.post("/v1/ask", json={"question": "Pokemon revenue?"}, headers=ACME)).json()
    assert first["metadata"]["routed_to"] == "pokemon_finance"
    assert first["data"] == [{"unit": "pokemon_finance", "workspace": "acme-data", "question": "Pokemon revenue?"}]
    session_id = first["session_id"]
    second = (await client.post("/v1/ask", json={"question": "and Epson?", "session_id": session_id}, headers=ACME)).json()
    assert second["session_id"] == session_id
    turns = (await client.get(f"/v1/sessions/{session_id}", headers=ACME)).json()["turns"]
    assert [t["question"] for t in turns] == ["Pokemon revenue?", "and Epson?"]
    listed = (await client.get("/v1/sessions", headers=ACME)).json()["sessions"]
    assert listed[0]["session_id"] == session_id and listed[0]["turns"] == 2


async def test_a_key_never_reaches_another_workspace(client):
    acme = (await client.post("/v1/ask", json={"question": "Pokemon?"}, headers=ACME)).json()
    # globex can't read, list or continue acme's session: 404, same as a session that doesn't exist
    assert (await client.get(f"/v1/sessions/{acme['session_id']}", headers=GLOBEX)).status_code == 404
    assert (await client.get("/v1/sessions/does-not-exist", headers=GLOBEX)).json() == {"detail": "session not found"}
    assert (await client.get("/v1/sessions", headers=GLOBEX)).json() == {"sessions": []}
    cont = await client.post("/v1/ask", json={"question": "more", "session_id": acme["session_id"]}, headers=GLOBEX)
    assert cont.status_code == 404
    globex = (await client.post("/v1/ask", json={"question": "Pokemon?"}, headers=GLOBEX)).json()
    assert globex["data"][0]["workspace"] == "globex-data"
    agents = (await client.get("/v1/agents", headers=GLOBEX)).json()
    assert agents["workspace"] == "globex" and [a["name"] for a in agents["agents"]] == UNITS


async def test_malformed_bodies_get_422_with_the_reason(client):
    missing = await client.post("/v1/ask", json={}, headers=ACME)
    assert missing.status_code == 422 and missing.json()["detail"][0]["loc"] == ["body", "question"]
    extra = await client.post("/v1/ask", json={"question": "x", "workspace": "globex"}, headers=ACME)
    assert extra.status_code == 422 and extra.json()["detail"][0]["type"] == "extra_forbidden"
    not_json = await client.post("/v1/ask", content=b"{nope", headers={**ACME, "content-type": "application/json"})
    assert not_json.status_code == 422


async def test_stream_sends_events_then_the_answer(client):
    async with client.stream("POST", "/v1/ask/stream", json={"question": "both units"}, headers=ACME) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        body = "".join([chunk async for chunk in response.aiter_text()])
    events = [block for block in body.split("\n\n") if block.strip()]
    names = [block.split("\n")[0].removeprefix("event: ") for block in events]
    assert names[-1] == "answer"
    assert names.count("agent.start") == 2 and names.count("agent.end") == 2 and "llm.start" in names
    answer = json.loads(events[-1].split("\n", 1)[1].removeprefix("data: "))
    assert answer["metadata"]["mode"] == "synthesis" and set(answer["data"]) == set(UNITS)


async def test_openapi_schema_lists_every_endpoint(client):
    assert (await client.get("/openapi.json")).status_code == 401
    schema = (await client.get("/openapi.json", headers=ACME)).json()
    for path in ["/v1/ask", "/v1/ask/stream", "/v1/agents", "/v1/sessions", "/v1/chat/completions", "/v1/models", "/health"]:
        assert path in schema["paths"], path
    assert "AskRequest" in schema["components"]["schemas"]


def test_the_official_openai_sdk_gets_the_answer(app):
    with serve(app) as url:
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="key-acme")
        assert [m.id for m in client.models.list().data] == ["acme-orchestrator"]
        reply = client.chat.completions.create(model="acme-orchestrator", messages=[{"role": "user", "content": "Epson revenue?"}])
        content = reply.choices[0].message.content
        assert "| unit | workspace | question |" in content and "epson_finance" in content and "acme-data" in content
        chunks = client.chat.completions.create(model="acme-orchestrator", messages=[{"role": "user", "content": "Epson revenue?"}], stream=True)
        streamed = "".join(c.choices[0].delta.content or "" for c in chunks)
        assert streamed == content
        with pytest.raises(openai.AuthenticationError):
            openai.OpenAI(base_url=f"{url}/v1", api_key="wrong").chat.completions.create(
                model="x", messages=[{"role": "user", "content": "hi"}])


def test_every_api_route_requires_the_key(app):
    from fastapi.routing import APIRoute

    from baton.server.auth import authenticate

    open_paths = {"/health", "/health/ready", "/", "/login", "/logout", "/static/{name}", "/static/vendor/{name}",
                  "/favicon.ico"}  # readiness: load balancers call it without a key
    for route in app.routes:
        if isinstance(route, APIRoute) and route.path not in open_paths:
            calls = [d.call for d in route.dependant.dependencies]
            assert authenticate in calls, route.path


def test_keys_for_unknown_workspaces_are_refused_at_start():
    from baton.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match="unknown workspaces: nowhere"):
        create_app(Workspaces([workspace("acme", "x")]), ApiKeys({"k": "nowhere"}))


async def test_chart_rendering_checks_its_input(client):
    spec = {"mark": "bar", "data": {"values": [{"a": "x", "b": 1}]},
            "encoding": {"x": {"field": "a", "type": "nominal"}, "y": {"field": "b", "type": "quantitative"}}}
    svg = await client.post("/v1/charts/render", json={"spec": spec}, headers=ACME)
    assert svg.status_code == 200 and svg.text.lstrip().startswith("<svg")
    broken = await client.post("/v1/charts/render", json={"spec": {"mark": 12}}, headers=ACME)
    assert broken.status_code == 422
    huge = {**spec, "data": {"values": [{"a": "x" * 100, "b": i} for i in range(60_000)]}}
    assert (await client.post("/v1/charts/render", json={"spec": huge}, headers=ACME)).status_code == 413


async def test_login_sets_a_cookie_only_for_a_valid_same_site_post(client):
    assert (await client.post("/login", json={"key": "nope"})).status_code == 401
    assert (await client.post("/login", json={"key": "key-acme"}, headers={"Origin": "https://evil.example"})).status_code == 403
    ok = await client.post("/login", json={"key": "key-acme"}, headers={"Origin": "http://test"})
    assert ok.status_code == 204 and "baton_session_" in ok.headers["set-cookie"] and "HttpOnly" in ok.headers["set-cookie"]
    assert "key-acme" not in ok.headers["set-cookie"]  # a session token, never the key (test_server_login.py)
    assert (await client.get("/v1/agents")).status_code == 200  # the cookie now authenticates


def test_markdown_tables_count_the_rows_they_leave_out():
    import pandas as pd

    from baton.response import AIMessage
    from baton.workspace.markdown import to_markdown

    assert to_markdown(AIMessage(data=pd.DataFrame({"a": range(100)}))).endswith("_80 more rows not shown_")
    assert to_markdown(AIMessage(data=[{"a": i} for i in range(25)])).endswith("_5 more rows not shown_")
    assert "p\\|q" in to_markdown(AIMessage(data=[{"a": "p|q"}]))
