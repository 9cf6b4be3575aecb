"""The semantic layer on the answer path: no-model routing, ask-backs, follow-ups as edits,
saved queries as verified questions, and the SQL specialist's semantic_query tool."""

from __future__ import annotations

import contextlib
import dataclasses
import sqlite3

import pytest
import yaml

from baton.demo.data import build_demo_database
from baton.demo.workspace import build_demo_workspace
from baton.llm import FunctionModel, tool_call
from baton.messages import LLMResponse
from baton.semantic.loading import demo_model_path
from baton.semantic.query import SemanticQuery
from baton.workspace.verified import installed, save_verified_question
from semantic_gold import rows_match


def answer_query(data: dict) -> SemanticQuery:
    return SemanticQuery.from_dict(data)


@pytest.fixture
def demo_dir(tmp_path):
    build_demo_database(tmp_path / "finance.sqlite", sales_rows=500)
    return tmp_path


def gold(directory, sql):
    with contextlib.closing(sqlite3.connect(directory / "finance.sqlite")) as db:
        return [list(r) for r in db.execute(sql).fetchall()]


async def test_a_metric_question_is_answered_with_its_semantic_query_and_sql(demo_dir):
    async with build_demo_workspace(demo_dir) as ws:
        answer = await ws.answer("What was Epson revenue by quarter in 2025?")
    assert answer.metadata["fast_path"] == "semantic_layer" and answer.metadata["routed_to"] == "metrics"
    assert answer.metadata["llm_calls"] == 0 and answer.error is None
    assert answer.metadata["semantic_query"] == {"metrics": ["revenue"], "by": ["time"], "grain": "quarter",
                                                 "where": {"business_unit": ["Epson"], "time": ["2025"]},
                                                 "order": [["time", "asc"]]}
    assert "Semantic query: revenue by quarter; where business unit = Epson and time in 2025." in answer.content
    assert "monthly_revenue" in answer.query and "business_units" in answer.query and answer.viz_config
    expected = gold(demo_dir, "SELECT substr(month,1,4) || '-Q' || ((CAST(substr(month,6,2) AS INTEGER) + 2) / 3), "
                              "ROUND(SUM(revenue_cents) / 100.0, 2) FROM monthly_revenue WHERE unit_id = 2 AND month LIKE '2025-%' GROUP BY 1")
    assert rows_match(answer.results.rows, expected, ordered=True)


async def test_verified_questions_keep_precedence(demo_dir):
    async with build_demo_workspace(demo_dir) as ws:
        answer = await ws.answer("What was Pokemon revenue by month in 2025?")
    assert answer.metadata["fast_path"] == "verified_question" and "semantic_query" not in answer.metadata


async def test_an_ambiguous_question_is_asked_back_and_each_suggestion_answers_when_asked(demo_dir):
    async with build_demo_workspace(demo_dir) as ws:
        asked = await ws.answer("Which products sold the most in 2025?")
        assert asked.data is None and asked.metadata["llm_calls"] == 0
        assert asked.suggested_followups == ["Revenue by product in 2025", "Units sold by product in 2025",
                                             "Transactions by product in 2025"]
        readings = asked.metadata["semantic_ask_back"]["readings"]
        assert asked.metadata["semantic_ask_back"]["reason"] == "ambiguous" and len(readings) == 3
        assert all(f"- {q}" in asked.content for q in asked.suggested_followups)
        for suggestion, reading in zip(asked.suggested_followups, readings):
            answer = await ws.answer(suggestion, asked.session_id)
            assert answer.data and answer.metadata["semantic_query"] == reading["semantic_query"], suggestion


async def test_follow_ups_edit_the_semantic_query(demo_dir):
    async with build_demo_workspace(demo_dir) as ws:
        first = await ws.answer("Revenue by product in 2025")
        session = first.session_id
        steps = [
            ("top 3", {"by": ["product"], "limit": 3}),
            ("by business unit instead", {"by": ["business_unit"]}),
            ("only Epson", {"where": {"business_unit": ["Epson"], "time": ["2025"]}}),
            ("compare with 2024", {"by": ["time"], "grain": "year", "where": {"business_unit": ["Epson"], "time": ["2025", "2024"]}}),
            ("by quarter instead", {"grain": "quarter"}),
        ]
        for question, expected in steps:
            answer = await ws.answer(question, session)
            assert answer.metadata["followup"] == "semantic_edit", (question, answer.content)
            query = answer.metadata["semantic_query"]
            assert {k: query.get(k) for k in expected} == expected, (question, query)
            direct = await ws.semantic.run(answer_query(query))
            assert direct[1].result.rows == answer.results.rows, question  # the same rows as the query asked directly
        assert len(answer.data) == 8  # Epson's quarters of 2024 and 2025
        chart = await ws.answer("Show this as a bar chart", session)  # not an edit: the chart follow-up
        assert chart.metadata["followup"] == "rechart" and chart.metadata["semantic_query"] == query
        refused = await ws.answer("add cancelled events", session)  # roadshow events have no business unit
        assert refused.metadata["followup"] == "semantic_edit_refused" and "cannot be broken down" in refused.content
        assert refused.metadata["semantic_query"]["grain"] == "quarter"  # kept: the next edit starts from it
        yearly = await ws.answer("by year instead", session)
        assert yearly.metadata["followup"] == "semantic_edit" and len(yearly.data) == 2


async def test_a_top_n_share_is_of_the_whole_ranking_even_one_longer_than_the_row_cap(demo_dir):
    async with build_demo_workspace(demo_dir) as ws:
        first = await ws.answer("Revenue by product in 2025")
        whole = await ws.answer("top 3", first.session_id)
        share = next(i for i in whole.insights if i["kind"] == "top_share")
        assert f"across all {len(first.data)} product values" in share["text"]
        top, total = max(row["revenue"] for row in first.data), sum(row["revenue"] for row in first.data)
        assert f"{100 * top / total:.1f}%" in share["text"]
        connection = ws.semantic.connection
        connection.options = dataclasses.replace(connection.options, row_cap=4)  # the ranking no longer fits a result
        again = await ws.answer("Revenue by product in 2025")  # a new conversation
        capped = await ws.answer("top 3", again.session_id)
    assert again.results.truncated and capped.results.row_count == 3
    # the database totals the whole ranking in one aggregate query: the same share as uncapped
    assert next(i for i in capped.insights if i["kind"] == "top_share")["text"] == share["text"]


async def test_a_semantic_answer_can_be_saved_as_a_verified_question(demo_dir):
    async with build_demo_workspace(demo_dir) as ws:
        answer = await ws.answer("Tickets sold by city in 2025")
        saved = await save_verified_question(ws, "Tickets by city this season", answer=answer)
        assert saved.agent in {"pokemon_finance", "epson_finance", "roadshows_finance", "general_finance"}
        again = await ws.answer("Tickets by city this season")
    assert again.metadata["fast_path"] == "verified_question" and again.results.rows == answer.results.rows


async def test_saved_queries_of_a_model_are_verified_questions(demo_dir):
    model = yaml.safe_load(demo_model_path().read_text())
    model["saved_queries"] = [{"question": "What did the roadshows earn per city?",
                               "query": {"metrics": ["event_profit"], "by": ["city"]}}]
    path = demo_dir / "model.yaml"
    path.write_text(yaml.safe_dump(model))
    async with build_demo_workspace(demo_dir, semantic=path) as ws:
        verified = [v for v in installed(ws) if v.source == "semantic"]
        answer = await ws.answer("What did the roadshows earn per city?")
    assert [v.question for v in verified] == ["What did the roadshows earn per city?"] and verified[0].agent == "general_finance"
    assert answer.metadata["fast_path"] == "verified_question"
    expected = gold(demo_dir, "SELECT city, ROUND(SUM(tickets_sold * ticket_price) - SUM(venue_cost), 2) FROM roadshow_events "
                              "WHERE deleted_at IS NULL GROUP BY city")
    assert rows_match(answer.results.rows, expected)


def _sql_specialist_model(arguments: dict, seen: list):
    """Routes to general_finance, which calls semantic_query with ``arguments`` (then answers)."""

    def fn(messages, tools):
        names = [t.name for t in tools or ()]
        seen.append(names)
        last = messages[-1]
        if "general_finance" in names:  # the orchestrator
            if last.role == "tool":
                return LLMResponse(content=last.content)
            return LLMResponse(tool_calls=[tool_call("general_finance", {"question": last.content})])
        if last.role == "tool":  # the SQL specialist read the result
            if last.content.startswith("Semantic query refused"):
                return LLMResponse(tool_calls=[tool_call("run_sql", {"sql": "SELECT COUNT(*) AS n FROM business_units"})])
            return LLMResponse(content="Here it is.")
        return LLMResponse(tool_calls=[tool_call("semantic_query", arguments)])

    return fn


async def test_with_a_model_the_sql_specialist_fills_the_semantic_query_tool(demo_dir):
    seen: list = []
    model = FunctionModel(_sql_specialist_model({"metrics": ["revenue", "cost"], "by": ["business_unit"], "periods": ["2025"]}, seen))
    async with build_demo_workspace(demo_dir, model=model, pipelines=None) as ws:
        answer = await ws.answer("How did revenue and costs compare across units last year?")
    assert ["semantic_query", "run_sql"] in seen  # offered with run_sql as the fallback
    assert answer.metadata["semantic_query"]["metrics"] == ["revenue", "cost"]
    assert "Semantic query: revenue and cost by business unit; where time in 2025" in answer.content
    expected = gold(demo_dir, "SELECT u.name, ROUND((SELECT SUM(revenue_cents) / 100.0 FROM monthly_revenue r WHERE r.unit_id = u.id "
                              "AND r.month LIKE '2025-%'), 2), ROUND((SELECT SUM(amount) FROM monthly_costs c WHERE c.unit_id = u.id "
                              "AND c.month LIKE '2025-%'), 2) FROM business_units u")
    assert rows_match(answer.results.rows, expected)


async def test_a_tool_call_with_a_value_the_data_does_not_hold_is_refused_and_free_sql_is_the_fallback(demo_dir):
    seen: list = []
    arguments = {"metrics": ["revenue"], "filters": [{"dimension": "business_unit", "values": ["Epson' OR 1=1 --"]}]}
    model = FunctionModel(_sql_specialist_model(arguments, seen))
    async with build_demo_workspace(demo_dir, model=model, pipelines=None) as ws:
        answer = await ws.answer("Revenue of a unit")
    assert answer.results.rows == [[4]] and "semantic_query" not in answer.metadata
    assert all("OR 1=1" not in (a.get("sql") or "") for a in answer.metadata.get("attempts", []))
