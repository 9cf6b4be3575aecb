"""The page's analyst routes over the real demo workspace with no model (issue 14): example
questions, the schema browser, edited SQL re-run through the safety checks, "Save as
verified question", CSV downloads; and the routes serving the chart runtime and the icon.
The browser tests (test_browser_analyst.py) drive the same routes through the page."""

from __future__ import annotations

import csv
import io
import sqlite3

import httpx
import pytest

from baton.agents import OrchestratorAgent
from baton.demo.data import build_demo_database
from baton.demo.verified import VERIFIED_QUESTIONS
from baton.demo.workspace import DOCUMENT_EXAMPLES, build_demo_workspace, demo_database
from baton.response import AIMessage, QueryResult
from baton.server import ApiKeys, SessionStore, Workspace, Workspaces, create_app
from baton.workspace.export import answer_csv

KEY = "bt_analyst_key"
OTHER = "bt_other_key"
H = {"Authorization": f"Bearer {KEY}"}
TICKETS = "How many tickets did each roadshow city sell?"
EVENTS_SQL = ("SELECT city, COUNT(*) AS events FROM roadshow_events WHERE deleted_at IS NULL "
              "GROUP BY city ORDER BY events DESC")


@pytest.fixture
async def demo(tmp_path):
    build_demo_database(tmp_path / "finance.sqlite", sales_rows=2_000)
    ws = build_demo_workspace(tmp_path)
    yield ws
    await ws.aclose()


@pytest.fixture
async def client(demo):
    other = Workspace("other", OrchestratorAgent("other"), SessionStore())
    app = create_app(Workspaces([demo, other]), ApiKeys({KEY: "demo", OTHER: "other"}))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as c:
        yield c


async def ask(client, question: str, session_id: str | None = None) -> dict:
    response = await client.post("/v1/ask", json={"question": question, "session_id": session_id}, headers=H)
    assert response.status_code == 200, response.text
    return response.json()


def rows_of(db, sql: str) -> list[tuple]:
    with sqlite3.connect(db) as conn:
        return conn.execute(sql).fetchall()


async def test_examples_list_the_verified_questions_and_questions_the_documents_answer(client, demo):
    from baton.workspace.examples import MAX_VERIFIED
    from baton.workspace.verified import installed

    examples = (await client.get("/v1/examples", headers=H)).json()
    listed = [v["question"] for v in examples["verified"]]
    assert listed == [v.checked_question for v in installed(demo)][:MAX_VERIFIED]  # nobody saved one yet: built-in order
    assert {v.question for v in VERIFIED_QUESTIONS} <= set(listed)
    assert examples["documents"] == list(DOCUMENT_EXAMPLES) and examples["no_model"] is True
    for question in examples["documents"]:  # every document example is answered from the documents
        answer = await ask(client, question)
        assert answer["metadata"].get("agents_consulted") == ["finance_docs"], question
        assert answer["source_documents"] and not answer["error"], question
    assert (await client.get("/v1/examples")).status_code == 401


async def test_generic_document_examples_come_from_section_headings(tmp_path):
    from baton.specialists.knowledge.folder import FolderKnowledgeAgent
    from baton.workspace.examples import example_questions

    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "rules.md").write_text("# Rules\n\n## Refund policy\n\nText.\n\n## What is churn?\n\nText.\n\n### SLA\n\nText.\n")
    orchestrator = OrchestratorAgent("o")
    orchestrator.add_agent(FolderKnowledgeAgent(tmp_path / "docs", name="docs", description="d"))
    ws = Workspace("w", orchestrator, SessionStore())
    try:
        assert example_questions(ws) == {"verified": [], "documents": ["Tell me about refund policy", "Tell me about SLA"],
                                         "no_model": True}
    finally:
        await ws.aclose()


async def test_the_schema_lists_tables_columns_and_row_counts(client, demo):
    schema = (await client.get("/v1/schema", headers=H)).json()
    (connection,) = schema["connections"]
    assert connection["id"] == "demo" and connection["dialect"] == "sqlite"
    tables = {t["name"]: t for t in connection["tables"]}
    assert {"business_units", "products", "monthly_revenue", "roadshow_events", "sales_transactions"} <= set(tables)
    events = tables["roadshow_events"]
    assert events["rows"] == rows_of(demo_database(demo), "SELECT COUNT(*) FROM roadshow_events")[0][0]
    assert {"city", "tickets_sold", "deleted_at"} <= {c["name"] for c in events["columns"]}
    products = {c["name"]: c for c in tables["products"]["columns"]}
    assert products["id"]["primary_key"] is True
    other = (await client.get("/v1/schema", headers={"Authorization": f"Bearer {OTHER}"})).json()
    assert other["connections"] == []  # another workspace sees none of the demo's tables


async def test_edited_sql_runs_through_the_same_checks_and_joins_the_conversation(client, demo):
    first = await ask(client, TICKETS)
    before = rows_of(demo_database(demo), "SELECT COUNT(*) FROM roadshow_events")
    hostile = ["DELETE FROM roadshow_events", "SELECT 1; DROP TABLE roadshow_events", "UPDATE products SET name = 'x'",
               "ATTACH DATABASE '/tmp/x.sqlite' AS x", "PRAGMA query_only = OFF", "SELECT load_extension('x')"]
    for sql in hostile:
        refused = await client.post("/v1/sql/run", json={"turn_id": first["turn_id"], "sql": sql}, headers=H)
        assert refused.status_code == 422, sql
        body = refused.json()
        assert body["error_code"] == "unsafe_sql" and body["rule"] and body["detail"].startswith("unsafe SQL refused"), sql
    assert rows_of(demo_database(demo), "SELECT COUNT(*) FROM roadshow_events") == before
    assert rows_of(demo_database(demo), "SELECT COUNT(*) FROM sqlite_master WHERE name = 'roadshow_events'") == [(1,)]
    invalid = await client.post("/v1/sql/run", json={"turn_id": first["turn_id"], "sql": "SELECT nope FROM roadshow_events"}, headers=H)
    assert invalid.status_code == 422 and invalid.json()["error_code"] == "column_not_found"
    turns = (await client.get(f"/v1/sessions/{first['session_id']}", headers=H)).json()["turns"]
    assert len(turns) == 1  # nothing refused was stored
    ran = await client.post("/v1/sql/run", json={"turn_id": first["turn_id"], "sql": EVENTS_SQL}, headers=H)
    assert ran.status_code == 200, ran.text
    edited = ran.json()
    assert edited["session_id"] == first["session_id"] and edited["query"] == EVENTS_SQL
    assert edited["metadata"]["fast_path"] == "edited_sql" and edited["metadata"]["llm_calls"] == 0
    expected = rows_of(demo_database(demo), EVENTS_SQL)
    assert [(r["city"], r["events"]) for r in AIMessage.from_dict(edited).results.records()] == expected
    assert edited["viz_config"] and edited["suggested_followups"]
    turns = (await client.get(f"/v1/sessions/{first['session_id']}", headers=H)).json()["turns"]
    assert [t["question"] for t in turns] == [TICKETS, f"Edited SQL of “{TICKETS}”"]
    top = await ask(client, "Show only the top 3", first["session_id"])  # follow-ups work on the edited result
    assert top["metadata"]["followup"] == "top_n" and [r["city"] for r in AIMessage.from_dict(top).results.records()] == [
        c for c, _ in expected[:3]]
    foreign = await client.post("/v1/sql/run", json={"turn_id": first["turn_id"], "sql": EVENTS_SQL},
                                headers={"Authorization": f"Bearer {OTHER}"})
    assert foreign.status_code == 404  # another workspace's answer is not found, not run


async def test_an_answer_saved_as_verified_is_answered_in_other_words_without_a_model(client, demo):
    first = await ask(client, TICKETS)
    edited = (await client.post("/v1/sql/run", json={"turn_id": first["turn_id"], "sql": EVENTS_SQL}, headers=H)).json()
    saved = await client.post("/v1/verified", json={"turn_id": edited["turn_id"], "question": "How many roadshow events did each city hold?"},
                              headers=H)
    assert saved.status_code == 200, saved.text
    assert saved.json()["agent"] == "roadshows_finance" and saved.json()["sql"] == EVENTS_SQL
    answer = await ask(client, "How many events did each roadshow city hold?")
    assert answer["metadata"]["fast_path"] == "verified_question" and answer["metadata"]["llm_calls"] == 0
    assert answer["query"] == EVENTS_SQL
    record = demo.memory.get(demo.memory_scope(), saved.json()["record_id"])
    assert record.kind == "benchmark" and record.provenance[0].source == "page"
    examples = (await client.get("/v1/examples", headers=H)).json()
    assert examples["verified"][0]["question"] == "How many roadshow events did each city hold?"  # the newest saved first
    refusal = await ask(client, "Which Pokemon products sold the least in 2025?")
    no_sql = await client.post("/v1/verified", json={"turn_id": refusal["turn_id"]}, headers=H)
    assert no_sql.status_code == 422 and no_sql.json()["error_code"] == "no_sql"
    missing = await client.post("/v1/verified", json={"turn_id": "nope"}, headers=H)
    assert missing.status_code == 404


async def test_csv_of_an_answer_has_every_row_and_cannot_smuggle_formulas(client, demo):
    first = await ask(client, TICKETS)
    response = await client.get(f"/v1/turns/{first['turn_id']}/csv", headers=H)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/csv")
    assert response.headers["content-disposition"] == 'attachment; filename="how-many-tickets-did-each-roadshow-city-sell.csv"'
    text = response.content.decode("utf-8-sig")
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0] == ["city", "tickets"]
    assert [(c, int(n)) for c, n in rows[1:]] == rows_of(demo_database(demo), VERIFIED_QUESTIONS[4].sql)
    assert (await client.get(f"/v1/turns/{first['turn_id']}/csv", headers={"Authorization": f"Bearer {OTHER}"})).status_code == 404
    refusal = await ask(client, "Write a poem about spring")
    assert (await client.get(f"/v1/turns/{refusal['turn_id']}/csv", headers=H)).status_code == 404


def test_csv_cells_that_a_spreadsheet_would_run_are_written_as_text():
    hostile = ["=HYPERLINK(\"http://evil.example\")", "+1+1", "-2+3", "@SUM(A1)", "\tx", "plain"]
    result = QueryResult(columns=["=cmd", "n"], rows=[[h, -5] for h in hostile])
    rows = list(csv.reader(io.StringIO(answer_csv(AIMessage(results=result)).lstrip("\ufeff"))))
    assert rows[0] == ["'=cmd", "n"]
    assert [r[0] for r in rows[1:]] == ["'" + h for h in hostile[:-1]] + ["plain"]
    assert {r[1] for r in rows[1:]} == {"-5"}  # numbers are numbers


async def test_the_chart_runtime_and_the_icon_are_served_from_the_package(client):
    for name in ("vega.min.js", "vega-lite.min.js", "vega-embed.min.js"):
        response = await client.get(f"/static/vendor/{name}")
        assert response.status_code == 200 and response.headers["content-type"].startswith("text/javascript")
        assert len(response.content) > 50_000 and b"sourceMappingURL" not in response.content
    assert "BSD" in (await client.get("/static/vendor/LICENSES.txt")).text
    for bad in ("..%2Fapp.js", "..%2F..%2Fapp.py", "vega.js", "VERSIONS.json", "vega.min.js.map"):
        assert (await client.get(f"/static/vendor/{bad}")).status_code == 404
    icon = await client.get("/favicon.ico")
    assert icon.status_code == 200 and icon.headers["content-type"] == "image/svg+xml"
    page = await client.get("/")
    policy = page.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "unsafe-eval" not in policy and "frame-ancestors 'none'" in policy
    assert 'rel="icon"' in page.text and "/static/vendor/vega-embed.min.js" in page.text and "cdn" not in page.text.lower()
