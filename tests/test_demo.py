"""The demo workspace end to end on the real demo database, with no model configured."""

import sqlite3

import pytest

from baton.agents.lexical_routing import NO_MODEL_ANSWER
from baton.demo.data import build_demo_database
from baton.demo.verified import VERIFIED_QUESTIONS
from baton.demo.workspace import build_demo_workspace
from baton.events import RecordingTracker


@pytest.fixture(scope="module")
def demo_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("demo")
    build_demo_database(directory / "finance.sqlite", sales_rows=5_000)
    return directory


@pytest.fixture
async def demo(demo_dir):
    workspace = build_demo_workspace(demo_dir)
    yield workspace
    await workspace.aclose()


def test_the_database_has_the_gotchas_the_heuristics_exist_for(demo_dir):
    db = sqlite3.connect(demo_dir / "finance.sqlite")
    columns = {row[1] for row in db.execute("PRAGMA table_info(monthly_revenue)")}
    assert "revenue_cents" in columns
    assert db.execute("SELECT COUNT(*) FROM roadshow_events WHERE deleted_at IS NOT NULL").fetchone()[0] > 0
    assert db.execute("SELECT COUNT(DISTINCT name) FROM business_units").fetchone()[0] == 4


def test_the_generator_is_deterministic(tmp_path):
    a = build_demo_database(tmp_path / "a.sqlite", sales_rows=500)
    b = build_demo_database(tmp_path / "b.sqlite", sales_rows=500)
    dump = lambda p: list(sqlite3.connect(p).iterdump())
    assert dump(a) == dump(b)


@pytest.mark.parametrize("verified", VERIFIED_QUESTIONS, ids=lambda v: v.question)
async def test_every_verified_question_is_answered_for_real_without_a_model(demo, demo_dir, verified):
    tracker = RecordingTracker()
    answer = await demo.orchestrator.ask(verified.question, tracker=tracker)
    expected = sqlite3.connect(demo_dir / "finance.sqlite").execute(verified.sql).fetchall()
    assert answer.metadata["routed_to"] == verified.agent
    assert answer.metadata["fast_path"] == "verified_question" and answer.metadata["llm_calls"] == 0
    assert [tuple(row.values()) for row in answer.data] == [tuple(r) for r in expected]
    assert answer.query == verified.sql
    # the only "model" consulted is the verified route, which is not an LLM
    assert {e.data["provider"] for e in tracker.events if e.type == "llm.end"} == {"verified"}
    assert tracker.types().count("sql.attempt") == 1
    assert answer.viz_config and answer.viz_type != "text"


async def test_a_reworded_verified_question_takes_the_fast_path(demo):
    answer = await demo.orchestrator.ask("pokemon revenues by month 2025 please")
    assert answer.metadata["fast_path"] == "verified_question" and len(answer.data) == 12


async def test_anything_else_explains_how_to_configure_a_model_and_lists_what_can_be_asked(demo):
    poem = await demo.answer("Write a poem about spring")
    assert poem.content.startswith(NO_MODEL_ANSWER.split(". ")[0]) and "BATON_MODEL" in poem.content
    assert "You can ask, for example:" in poem.content and poem.data is None
    assert len(poem.suggested_followups) == 3 and set(poem.suggested_followups) <= {v.question for v in VERIFIED_QUESTIONS}
    assert poem.metadata["llm_calls"] == 0
    month = await demo.answer("What was Epson revenue in March 2024?")  # one month: not the verified question ...
    assert month.metadata["fast_path"] == "semantic_layer" and month.data == [{"revenue": 960787.64}]  # ... the semantic layer's
    near = await demo.answer("Which Epson products were popular in 2025?")  # no metric named: the closest verified questions
    assert near.data is None and near.metadata.get("fast_path") is None
    assert "Did you mean one of these?" in near.content
    assert near.suggested_followups[0] == "Which Epson products sold the most in 2025?"
    assert [d["question"] for d in near.metadata["did_you_mean"]] == near.suggested_followups
    assert all(f"- {q}" in near.content for q in near.suggested_followups)


async def test_with_a_model_a_multi_step_question_runs_as_a_plan_through_the_specialists(demo_dir):
    import json

    from baton.llm import FunctionModel, tool_call
    from baton.messages import LLMResponse

    plan = {"question": "q", "stages": [
        {"stage_id": "pokemon", "tool": "query_database", "question": "What was Pokemon revenue by month in 2025?", "depends_on": []},
        {"stage_id": "epson", "tool": "query_database", "question": "What was Epson revenue by month in 2025?", "depends_on": []},
        {"stage_id": "gap", "tool": "analyze_results", "question": "gap", "depends_on": ["pokemon", "epson"]},
    ]}

    def model(messages, tools):
        if not tools:  # the planner
            return json.dumps(plan)
        if messages[-1].role == "tool":
            return "done"
        return LLMResponse(tool_calls=[tool_call("run_sql", {"sql": (
            "SELECT p.month, p.revenue - e.revenue AS gap FROM pokemon p JOIN epson e USING (month) ORDER BY p.month")})])

    workspace = build_demo_workspace(demo_dir, model=FunctionModel(model))
    try:
        answer = await workspace.orchestrator.ask("First get Pokemon revenue by month, then Epson's, then compare them")
    finally:
        await workspace.aclose()
    assert answer.response_type == "pipeline_complete"
    assert set(answer.data) == {"pokemon", "epson", "gap"} and len(answer.data["gap"]) == 12


async def test_rebuild_starts_the_demo_afresh(tmp_path):
    from baton.memory import Principal, RecordDraft

    first = build_demo_workspace(tmp_path)
    scope = first.memory.open(Principal("demo"))
    first.memory.remember(scope, RecordDraft("note", "Roadshow numbers exclude Q1 refunds", entity="roadshows", attribute="refunds"))
    assert len(first.memory.list_records(scope, kind="note")) == 1
    await first.aclose()
    first.memory.close()
    again = build_demo_workspace(tmp_path, rebuild=True)
    try:
        scope = again.memory.open(Principal("demo"))
        assert again.memory.list_records(scope, kind="note") == []  # what the first run remembered is gone
        assert len(again.memory.list_records(scope, kind="benchmark")) == len(VERIFIED_QUESTIONS)
    finally:
        await again.aclose()


async def test_definitions_are_answered_from_the_docs_with_citations_even_without_a_model(demo):
    answer = await demo.orchestrator.ask("How is profit defined?")
    assert answer.metadata["agents_consulted"] == ["finance_docs"]
    assert "revenue minus its costs" in answer.content
    assert answer.source_documents and answer.source_documents[0].source == "metrics.md"


def test_the_docs_are_doctrine_in_memory_and_reach_the_sql_bundle(demo):
    from baton.memory import Principal, compile_bundle

    scope = demo.memory.open(Principal("demo"))
    assert len(demo.memory.list_records(scope, kind="doctrine")) >= 5
    bundle = compile_bundle(scope, "Pokemon revenue last year", connection_id="demo")
    assert "revenue_cents" in bundle.text and "100" in bundle.text
