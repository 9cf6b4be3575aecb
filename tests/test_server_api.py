import asyncio
import json
import threading

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


def workspace(name: str, rows_tag: str, model_function=route) -> Workspace:
    orchestrator = OrchestratorAgent(f"{name}-orchestrator", model=FunctionModel(model_function))
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


def held_app():
    """An app whose model holds its final answer (after the specialists' results) until the
    test sets ``release``; ``answered`` is set when the model answers. A test that sees an
    event before it releases the model proves, by events rather than timing, that the
    stream is live and not an answer computed first and cut into chunks afterwards."""
    release, answered = threading.Event(), threading.Event()

    async def held(messages, tools):
        if messages[-1].role == "tool":
            for _ in range(1000):  # released by the client; 10 s at most, then the ordering assertion fails
                if release.is_set():
                    break
                await asyncio.sleep(0.01)
            answered.set()
        return route(messages, tools)

    return create_app(Workspaces([workspace("acme", "acme-data", held)]), ApiKeys({"key-acme": "acme"})), release, answered


async def test_stream_sends_events_as_they_happen_then_the_answer():
    app, release, answered = held_app()
    events, finished, answered_before_release = [], 0, None
    with serve(app) as url:
        async with httpx.AsyncClient(base_url=url, timeout=30) as client:
            async with client.stream("POST", "/v1/ask/stream", json={"question": "both units"}, headers=ACME) as response:
                assert response.headers["content-type"].startswith("text/event-stream")
                buffer = ""
                async for text in response.aiter_text():
                    buffer += text
                    *complete, buffer = buffer.split("\n\n")
                    for block in filter(str.strip, complete):
                        events.append(block)
                        finished += block.startswith("event: agent.end\n")
                        if finished == 2 and answered_before_release is None:
                            answered_before_release = answered.is_set()
                            release.set()
                assert not buffer.strip(), buffer  # every event ends with its blank line
    assert answered_before_release is False  # both specialists' ends arrived while the model still held its answer
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


def test_the_official_openai_sdk_gets_the_answer_streamed_as_it_is_made():
    """The stream is live, shown by events rather than by comparing texts (a server that
    computed the whole answer and then cut it into chunks would give the same text): the
    model's final answer is held until the client has seen both specialists finish."""
    app, release, answered = held_app()
    with serve(app) as url:
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="key-acme")
        assert [m.id for m in client.models.list().data] == ["acme-orchestrator"]
        chunks, finished, answered_before_release = [], 0, None
        for chunk in client.chat.completions.create(model="acme-orchestrator", stream=True,
                                                    messages=[{"role": "user", "content": "both units, revenue?"}]):
            chunks.append(chunk)
            finished += ((chunk.model_extra or {}).get("baton", {}).get("event") or {}).get("type") == "agent.end"
            if finished == 2 and answered_before_release is None:
                answered_before_release = answered.is_set()
                release.set()
        assert answered_before_release is False  # both results reached the client while the model still held its answer
        assert answered.is_set() and chunks[-1].choices[0].finish_reason == "stop"
        streamed = "".join(c.choices[0].delta.content or "" for c in chunks)
        reply = client.chat.completions.create(model="acme-orchestrator", messages=[{"role": "user", "content": "both units, revenue?"}])
        assert streamed == reply.choices[0].message.content  # and the same answer as without streaming
        assert streamed.startswith("Both: ") and "pokemon_finance" in streamed and "epson_finance" in streamed
        reply = client.chat.completions.create(model="acme-orchestrator", messages=[{"role": "user", "content": "Epson revenue?"}])
        content = reply.choices[0].message.content
        assert "| unit | workspace | question |" in content and "epson_finance" in content and "acme-data" in content
        with pytest.raises(openai.AuthenticationError):
            openai.OpenAI(base_url=f"{url}/v1", api_key="wrong").chat.completions.create(
                model="x", messages=[{"role": "user", "content": "hi"}])


# The routes anyone may call, each with what it answers without a key: the probes (load
# balancers call them keyless), the page and its assets (the key is typed into the page), and
# login/logout (login is how a key becomes a session; a wrong key there is a 401,
# test_login_sets_a_cookie_only_for_a_valid_same_site_post).
OPEN_ROUTES = {
    ("GET", "/health"): ("/health", 200),
    ("GET", "/health/ready"): ("/health/ready", 200),
    ("GET", "/"): ("/", 200),
    ("GET", "/favicon.ico"): ("/favicon.ico", 200),
    ("GET", "/static/{name}"): ("/static/app.js", 200),
    ("GET", "/static/vendor/{name}"): ("/static/vendor/vega.min.js", 200),
    ("POST", "/login"): ("/login", 422),  # no key in the body
    ("POST", "/logout"): ("/logout", 204),
}


def _every_route(app):
    """(method, path template, a concrete path) for each route the app serves, path
    parameters filled with a placeholder."""
    import re

    for route in app.routes:
        path = getattr(route, "path", None)
        for method in sorted(getattr(route, "methods", None) or ()):
            if path is not None and method != "HEAD":  # HEAD is GET's twin
                yield method, path, re.sub(r"\{[^}]+\}", "x", path)


async def test_every_route_but_the_open_ones_answers_401_without_a_key(app, client):
    """By real requests over every route the app has (a route added later is covered without
    editing this test), so a route that forgot its dependency fails here."""
    routes = list(_every_route(app))
    assert {(m, p) for m, p, _ in routes} >= set(OPEN_ROUTES)  # the open list names real routes
    protected = [(m, p, concrete) for m, p, concrete in routes if (m, p) not in OPEN_ROUTES]
    assert {("POST", "/v1/ask"), ("POST", "/v1/chat/completions"), ("GET", "/openapi.json"), ("POST", "/mcp"),
            ("DELETE", "/v1/memory/{record_id}")} <= {(m, p) for m, p, _ in protected}
    wrong_answers = {}
    for method, path, concrete in protected:
        for headers in ({}, {"Authorization": "Bearer nope"}, {"X-API-Key": "nope"}):
            response = await client.request(method, concrete, json={}, headers=headers)
            if response.status_code != 401 or "acme" in response.text or "globex" in response.text:
                wrong_answers[(method, path, tuple(headers))] = (response.status_code, response.text[:80])
        keyed = await client.request(method, concrete, json={}, headers=ACME)
        if keyed.status_code == 401:  # so the 401 above came from the missing key, not the route
            wrong_answers[(method, path, "with the key")] = (keyed.status_code, keyed.text[:80])
    assert wrong_answers == {}
    for (method, _), (concrete, status) in OPEN_ROUTES.items():
        assert (await client.request(method, concrete, json={})).status_code == status, concrete


def test_keys_for_unknown_workspaces_are_refused_at_start():
    from baton.errors import StartupRefusal

    with pytest.raises(StartupRefusal, match="does not serve: nowhere"):
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

    from baton.answer_markdown import to_markdown
    from baton.response import AIMessage

    assert to_markdown(AIMessage(data=pd.DataFrame({"a": range(100)}))).endswith("_80 more rows not shown_")
    assert to_markdown(AIMessage(data=[{"a": i} for i in range(25)])).endswith("_5 more rows not shown_")
    assert "p\\|q" in to_markdown(AIMessage(data=[{"a": "p|q"}]))
