"""Memory through the demo's HTTP API: insights with their lifecycle, feedback cycles,
the per-task bundle's lock on answers, and isolation between workspaces."""

import httpx
import pytest

from baton.demo.data import build_demo_database
from baton.demo.workspace import build_demo_workspace
from baton.llm import FunctionModel, tool_call
from baton.messages import LLMResponse
from baton.server import ApiKeys, Workspaces, create_app


@pytest.fixture
async def two_demos(tmp_path):
    demos = []
    for name in ("acme", "globex"):
        directory = tmp_path / name
        build_demo_database(directory / "finance.sqlite", sales_rows=1_000)
        demos.append(build_demo_workspace(directory, model=FunctionModel(sql_writer), name=name))
    app = create_app(Workspaces(demos), ApiKeys({"a": "acme", "g": "globex"}))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
        yield client
    for demo in demos:
        await demo.aclose()


def sql_writer(messages, tools):
    """Routes to epson_finance and writes one query there (a question no benchmark covers)."""
    if any(t.name == "run_sql" for t in tools):
        if messages[-1].role == "tool":
            return "Epson's 2024 revenue by product."
        return LLMResponse(tool_calls=[tool_call("run_sql", {"sql": (
            "SELECT p.name AS product, SUM(r.revenue_cents) / 100.0 AS revenue FROM monthly_revenue r "
            "JOIN products p ON p.id = r.product_id WHERE r.unit_id = 2 AND r.month LIKE '2024-%' GROUP BY p.name")})])
    return LLMResponse(tool_calls=[tool_call("epson_finance", {"question": messages[-1].content})])


A, G = {"X-API-Key": "a"}, {"X-API-Key": "g"}


async def ask(client, question, headers=A):
    response = await client.post("/v1/ask", json={"question": question}, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()


async def test_insights_are_remembered_resurfaced_and_dismissed(two_demos):
    first = await ask(two_demos, "What was Pokemon revenue by month in 2025?")
    assert first["insights"], "a monthly series has findings"
    records = (await two_demos.get("/v1/memory", params={"kind": "insight"}, headers=A)).json()["records"]
    assert len(records) == len(first["insights"]) and all(r["confidence"] == 0.5 for r in records)
    await ask(two_demos, "What was Pokemon revenue by month in 2025?")  # found again
    again = (await two_demos.get("/v1/memory", params={"kind": "insight"}, headers=A)).json()["records"]
    assert len(again) == len(records) and all(r["confidence"] == 0.55 for r in again)
    insight_id = first["insights"][0]["id"]
    assert (await two_demos.post("/v1/insights/dismiss", json={"insight_id": insight_id}, headers=G)).status_code == 404
    assert (await two_demos.post("/v1/insights/dismiss", json={"insight_id": insight_id}, headers=A)).status_code == 200
    after = sorted(r["confidence"] for r in (await two_demos.get("/v1/memory", params={"kind": "insight"}, headers=A)).json()["records"])
    assert after[0] == pytest.approx(0.35) and after[-1] == pytest.approx(0.55)


async def test_a_confirmed_verdict_makes_a_benchmark_and_a_rejection_flags_it_stale(two_demos):
    answer = await ask(two_demos, "Epson revenue by product in 2024?")
    assert answer["metadata"]["memory_lock"]["journal_seq"] > 0  # the bundle the agent saw is pinned
    confirmed = await two_demos.post("/v1/feedback", json={"turn_id": answer["turn_id"], "verdict": "confirmed"}, headers=A)
    assert confirmed.json()["memory"]["produced"] == "benchmark"
    benchmark_id = confirmed.json()["memory"]["record_id"]
    shown = (await two_demos.get(f"/v1/memory/{benchmark_id}", headers=A)).json()
    assert shown["record"]["kind"] == "benchmark" and "2024" in shown["record"]["value"]
    assert (await two_demos.get(f"/v1/memory/{benchmark_id}", headers=G)).status_code == 404  # isolation
    rejected = await two_demos.post("/v1/feedback", json={"turn_id": answer["turn_id"], "verdict": "rejected",
                                                         "comment": "2024 revenue must exclude returns"}, headers=A)
    assert rejected.json()["memory"]["produced"] == "learning" and benchmark_id in rejected.json()["memory"]["flagged_stale"]
    assert (await two_demos.get(f"/v1/memory/{benchmark_id}", headers=A)).json()["record"]["stale"] is True


async def test_thumbs_are_kept_and_a_thumbs_down_reaches_memory(two_demos):
    answer = await ask(two_demos, "What was Epson revenue by month in 2025?")
    up = (await two_demos.post("/v1/feedback", json={"turn_id": answer["turn_id"], "thumbs": "up"}, headers=A)).json()
    assert up == {"recorded": True, "memory": None}
    down = (await two_demos.post("/v1/feedback", json={"turn_id": answer["turn_id"], "thumbs": "down"}, headers=A)).json()
    assert down["memory"]["produced"] == "note"
    assert (await two_demos.post("/v1/feedback", json={"turn_id": answer["turn_id"], "thumbs": "down"}, headers=G)).status_code == 404
    assert (await two_demos.post("/v1/feedback", json={"turn_id": answer["turn_id"], "thumbs": "sideways"}, headers=A)).status_code == 422


async def test_forgetting_a_record_erases_it_for_this_workspace_only(two_demos):
    benchmarks = (await two_demos.get("/v1/memory", params={"kind": "benchmark"}, headers=A)).json()["records"]
    target = benchmarks[0]["id"]
    assert (await two_demos.delete(f"/v1/memory/{target}", headers=G)).status_code == 404
    gone = await two_demos.delete(f"/v1/memory/{target}", headers=A)
    assert gone.status_code == 200 and gone.json()["payloads_erased"] >= 1
    remaining = {r["id"] for r in (await two_demos.get("/v1/memory", params={"kind": "benchmark"}, headers=A)).json()["records"]}
    assert target not in remaining and len(remaining) == len(benchmarks) - 1
