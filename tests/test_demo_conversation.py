"""Conversations on the demo through the HTTP API: follow-ups refer to the previous answer."""

import httpx
import pytest

from baton.cli.serving import demo_app
from baton.demo.data import build_demo_database
from baton.demo.workspace import build_demo_workspace
from baton.llm import ScriptedModel


@pytest.fixture(scope="module")
def demo_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("demo-conv")
    build_demo_database(directory / "finance.sqlite", sales_rows=2_000)
    return directory


@pytest.fixture
async def client(demo_dir, monkeypatch):
    monkeypatch.setenv("BATON_DEMO_KEY", "demo-key")
    model = ScriptedModel([])  # a configured model that must never be called
    workspace = build_demo_workspace(demo_dir, model=model)
    app, key = demo_app(workspace)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://demo", headers={"X-API-Key": key}) as c:
        c.model = model
        yield c
    await workspace.aclose()


async def ask(client, question, session_id=None):
    response = await client.post("/v1/ask", json={"question": question, "session_id": session_id})
    assert response.status_code == 200, response.text
    return response.json()


async def test_show_this_as_a_pie_chart_recharts_without_query_or_llm(client):
    first = await ask(client, "Which Pokemon products sold the most in 2025?")
    assert first["viz_type"] != "pie"
    pie = await ask(client, "Show this as a pie chart", first["session_id"])
    assert pie["viz_type"] == "pie" and pie["viz_config"]["mark"]["type"] == "arc"
    assert pie["data"] == first["data"] and pie["query"] == first["query"]
    assert pie["metadata"]["followup"] == "rechart" and pie["metadata"]["llm_calls"] == 0
    assert client.model.calls == []


async def test_a_pie_of_too_many_slices_becomes_a_bar(client):
    first = await ask(client, "What was Pokemon revenue by month in 2025?")  # 12 months
    pie = await ask(client, "Show this as a pie chart", first["session_id"])
    assert pie["viz_type"] == "bar" and "pie" in pie["content"]


async def test_show_only_the_top_5_requeries_with_the_previous_sql(client):
    first = await ask(client, "What was the profit of each roadshow city?")
    assert len(first["data"]) == 12
    top = await ask(client, "Show only the top 5", first["session_id"])
    assert top["metadata"]["followup"] == "top_n" and top["metadata"]["fast_path"] == "given_sql"
    assert first["query"] in top["query"] and "LIMIT 5" in top["query"]
    profits = [row["profit"] for row in first["data"]]
    assert [row["profit"] for row in top["data"]] == sorted(profits, reverse=True)[:5]
    turns = (await client.get(f"/v1/sessions/{first['session_id']}")).json()["turns"]
    assert [t["question"] for t in turns] == ["What was the profit of each roadshow city?", "Show only the top 5"]
    assert client.model.calls == []


async def test_follow_up_without_a_previous_answer_goes_to_the_orchestrator(client):
    answer = await ask(client, "Which Pokemon products sold the most in 2025?")
    assert answer["metadata"].get("followup") is None


@pytest.mark.parametrize("question", [
    "Show Epson revenue by month in 2025 as a line chart",  # a new question that names a chart type
    "Show the top 10 products",                              # a new question that says "top"
])
async def test_new_questions_are_not_mistaken_for_follow_ups(client, question):
    first = await ask(client, "What was the profit of each roadshow city?")
    response = await client.post("/v1/ask", json={"question": question, "session_id": first["session_id"]})
    answer = response.json()
    assert answer["metadata"].get("followup") is None
    assert answer["data"] != first["data"]
