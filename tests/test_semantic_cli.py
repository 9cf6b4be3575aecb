"""`baton semantic check|init` and `--semantic FILE` on ask and eval, with no model configured."""

from __future__ import annotations

import json
import sqlite3

import pytest
import yaml
from typer.testing import CliRunner

from baton.cli import build_app
from baton.demo.data import build_demo_database
from baton.semantic.loading import demo_model_path


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("BATON_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("BATON_MODEL", raising=False)
    monkeypatch.delenv("BATON_API_KEYS", raising=False)
    build_demo_database(tmp_path / "finance.sqlite", sales_rows=500)
    return tmp_path


def run(*args):
    return CliRunner().invoke(build_app(), list(args), env={"COLUMNS": "200"})


def test_check_runs_every_metric_and_samples_every_dimension(home):
    result = run("semantic", "check", str(demo_model_path()), "--database", f"sqlite:///{home / 'finance.sqlite'}")
    assert result.exit_code == 0, result.output
    assert "ok: 6 entities, 15 metrics, 5 dimensions" in result.output
    assert "average_ticket_price" in result.output and "Epson, General, Pokemon, Roadshows" in result.output
    assert "time: 2024-2025" in result.output


def test_check_reads_the_metricflow_file_too(home):
    result = run("semantic", "check", str(demo_model_path().with_name("metricflow.yaml")), "--database",
                 f"sqlite:///{home / 'finance.sqlite'}")
    assert result.exit_code == 0, result.output and "15 metrics" in result.output


def test_check_lists_missing_tables_columns_and_metrics_that_do_not_run(home):
    model = yaml.safe_load(demo_model_path().read_text())
    model["measures"][0]["expr"] = "revenue_cent / 100.0"  # a typo
    model["entities"][3]["table"] = "monthly_cost"  # no such table
    path = home / "broken.yaml"
    path.write_text(yaml.safe_dump(model))
    result = run("semantic", "check", str(path), "--database", f"sqlite:///{home / 'finance.sqlite'}")
    assert result.exit_code == 1, result.output
    assert "column 'revenue_cent' is not in table 'monthly_revenue'" in result.output
    assert "table 'monthly_cost' does not exist" in result.output
    assert "metric(s) that do not run" in result.output


def test_a_file_that_is_no_model_is_one_line_and_exit_2(home):
    path = home / "bad.yaml"
    path.write_text("entities: [\n")
    result = run("semantic", "check", str(path), "--database", f"sqlite:///{home / 'finance.sqlite'}")
    assert result.exit_code == 2 and "not valid YAML" in result.output and "Traceback" not in result.output


def test_init_drafts_a_model_that_checks(home):
    draft = home / "draft.yaml"
    result = run("semantic", "init", "--database", f"sqlite:///{home / 'finance.sqlite'}", "--out", str(draft))
    assert result.exit_code == 0, result.output
    text = draft.read_text()
    assert text.startswith("# A draft semantic model") and "cents: divided by 100" in text  # the checklist, as comments
    model = yaml.safe_load(text)
    entities = {e["name"]: e for e in model["entities"]}
    assert entities["monthly_revenue"]["time"] == {"column": "month", "format": "month"}
    assert entities["roadshow_events"]["time"] == {"column": "event_date", "format": "date"}
    assert entities["sales_transactions"]["time"] == {"column": "sold_at", "format": "timestamp"}
    assert {"to": "products", "on": {"product_id": "id"}} in entities["monthly_revenue"]["joins"]
    metrics = {m["name"]: m for m in model["metrics"]}
    assert set(metrics) >= {"revenue", "tickets_sold", "monthly_costs", "average_ticket_price"}  # named in words
    measures = {m["name"]: m for m in model["measures"]}
    assert measures[metrics["revenue"]["measure"]]["expr"] == "revenue_cents / 100.0"
    assert measures[metrics["average_ticket_price"]["measure"]]["agg"] == "avg"  # a price is never summed
    assert measures["roadshow_events_count"]["filter"] == "deleted_at IS NULL"  # a soft delete
    assert "decided:" in result.output and "- [ ] soft-delete: entity roadshow_events" in result.output
    checked = run("semantic", "check", str(draft), "--database", f"sqlite:///{home / 'finance.sqlite'}")
    assert checked.exit_code == 0, checked.output


def test_ask_with_semantic_answers_a_metric_question_over_your_own_database(home):
    result = run("ask", "--database", f"sqlite:///{home / 'finance.sqlite'}", "--semantic", str(demo_model_path()),
                 "--json", "What was Epson revenue by quarter in 2025?")
    assert result.exit_code == 0, result.output
    answer = json.loads(result.output)
    with sqlite3.connect(home / "finance.sqlite") as db:
        total = db.execute("SELECT ROUND(SUM(revenue_cents) / 100.0, 2) FROM monthly_revenue "
                           "WHERE unit_id = 2 AND month LIKE '2025-%'").fetchone()[0]
    assert answer["metadata"]["semantic_query"]["by"] == ["time"] and answer["metadata"]["llm_calls"] == 0
    assert [r["quarter"] for r in answer["data"]] == ["2025-Q1", "2025-Q2", "2025-Q3", "2025-Q4"]
    assert abs(sum(r["revenue"] for r in answer["data"]) - total) < 0.05
    assert "Semantic query: revenue by quarter; where business unit = Epson and time in 2025." in answer["content"]


def test_a_semantic_file_that_cannot_be_used_stops_ask_before_anything_runs(home):
    path = home / "hostile.yaml"
    path.write_text("name: x\nentities: [{name: t, table: monthly_revenue}]\n"
                    "measures: [{name: m, entity: t, agg: sum, expr: \"(SELECT 1)\"}]\nmetrics: [{name: r, measure: m}]\n")
    result = run("ask", "--database", f"sqlite:///{home / 'finance.sqlite'}", "--semantic", str(path), "revenue")
    assert result.exit_code == 2 and "Semantic model error" in result.output


def test_eval_with_semantic_answers_metric_questions_of_a_golden_set(home):
    golden = home / "set.jsonl"
    golden.write_text(json.dumps({"id": "tickets", "question": "How many tickets were sold in Paris?",
                                  "sql": "SELECT SUM(tickets_sold) FROM roadshow_events WHERE city = 'Paris' AND deleted_at IS NULL"}) + "\n")
    result = run("eval", str(golden), "--database", f"sqlite:///{home / 'finance.sqlite'}", "--semantic", str(demo_model_path()),
                 "--out", str(home / "out"))
    assert result.exit_code == 0, result.output
    report = json.loads((home / "out" / "report.json").read_text())
    assert report["questions"][0]["status"] == "pass", report["questions"][0]


async def test_serve_with_semantic_answers_metric_questions_over_http(home, monkeypatch):
    import httpx

    from baton.cli.serving import server_app
    from baton.cli.specs import with_flags
    from baton.state.location import State

    monkeypatch.setenv("BATON_API_KEYS", "k-semantic=database")
    spec = with_flags(None, database=f"sqlite:///{home / 'finance.sqlite'}", semantic=demo_model_path())
    app, printed = server_app([spec], None, State.from_env(env={}, home=home / "state"))
    assert printed == []
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as client:
        response = await client.post("/v1/ask", json={"question": "How many tickets were sold in Paris?"},
                                     headers={"Authorization": "Bearer k-semantic"})
    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["metadata"]["semantic_query"] == {"metrics": ["tickets"], "where": {"city": ["Paris"]}}
    with sqlite3.connect(home / "finance.sqlite") as db:
        gold = db.execute("SELECT SUM(tickets_sold) FROM roadshow_events WHERE city = 'Paris' AND deleted_at IS NULL").fetchone()[0]
    assert answer["data"] == [{"tickets": gold}]
