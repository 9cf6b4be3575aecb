"""``baton eval`` on a Spider-format set: two SQLite databases built from SQL at test time,
23 questions, and a FunctionModel that answers some right (several only by an equivalence:
reordered or renamed columns, float noise, an int sum against a float one, an ORDER BY the
gold query lacks, duplicates kept), some wrong (a duplicate-dropping answer, a rounded
average, the right rows in the wrong order, a wrong filter, no SQL at all), some with unsafe
SQL, one after a repair and one never valid. Every figure of the run is asserted exactly.

The model is the public ``FunctionModel``: the orchestrator's turn routes to the only
specialist; the SQL specialist's turns write the scripted queries in order (one per call),
then a sentence once a query ran.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

import pytest

from baton.evaluation import (
    RunOptions,
    Tolerance,
    compare_to_baseline,
    load_golden_set,
    read_report,
    render_html,
    summarise,
    write_json,
)
from eval_doubles import CALL_COST, PLAN, ROUNDED_CAPACITY, build_spider, run_spider, spider_model


@pytest.fixture
def spider(tmp_path: Path) -> Path:
    return build_spider(tmp_path)


def test_the_fixture_is_a_spider_set_of_two_databases(spider):
    golden = load_golden_set(spider / "dev.json")
    assert len(golden) == 23 and golden.source.startswith("spider:")
    assert {q.tags[0] for q in golden.questions} == {"concert", "pets"}
    assert len({q.database for q in golden.questions}) == 2
    assert set(PLAN) == {q.question for q in golden.questions}


def test_scores_are_exactly_the_expected_ones(spider, tmp_path):
    run, meter = asyncio.run(run_spider(spider, tmp_path / "home", spider_model()))
    by_question = {r.question: r for r in run.results}
    s = summarise(run.results)

    failed = {q for q, r in by_question.items() if r.status == "fail"}
    assert failed == {
        "What are the distinct countries where singers above age 20 are from?", ROUNDED_CAPACITY,
        "List the names of the three oldest singers, oldest first.", "How many concerts are there in year 2014 or 2015?",
        "What is the average weight of the dogs?", "How old is the oldest student?", "Which singers are from the Netherlands?",
        "Find the major and age of students who do not have a cat pet.", "How many students have no pet?",
    }
    assert (s.questions, s.passed, s.failed, s.skipped, s.gold_errors) == (23, 14, 9, 0, 0)
    assert (s.execution.right, s.execution.out_of) == (14, 23)
    assert s.routing.out_of == 0 and s.routing.value is None  # Spider names no specialist
    # SQL was written for 22 questions; it ran for all but the two unsafe ones and the broken one
    assert (s.valid_sql.right, s.valid_sql.out_of) == (19, 22)
    assert (s.repaired_questions, s.repair_attempts) == (1, 1)
    assert s.safety_refusals == 2

    # calls: a one-shot answer is 3 (route, write, say); a repair adds one; an unsafe query
    # ends the specialist (route, write, then the orchestrator answers); the broken query is
    # written max_attempts (4) times; with no SQL the specialist is nudged once
    calls = {q: r.llm_calls for q, r in by_question.items()}
    assert calls["How many singers do we have?"] == 3
    assert calls["Show the stadium name and capacity with the most concerts."] == 4
    assert calls["Which singers are from the Netherlands?"] == 3
    assert calls["How many students have no pet?"] == 1 + 4 + 1
    assert calls["How old is the oldest student?"] == 1 + 2 + 1
    expected_calls = 18 * 3 + 4 + 2 * 3 + 6 + 4  # 18 one-shot answers (right or wrong)
    assert s.llm_calls == meter.total.calls == expected_calls == 74
    assert meter.unattributed == 0
    assert (s.input_tokens, s.output_tokens) == (100 * expected_calls, 20 * expected_calls)
    assert s.cost_usd == pytest.approx(CALL_COST * expected_calls)
    assert all(r.cost_usd == pytest.approx(CALL_COST * r.llm_calls) for r in run.results)
    assert s.unpriced_calls == 0
    assert s.latency_p50_s is not None and s.latency_p95_s >= s.latency_p50_s

    reasons = {q: " ".join(r.reasons) for q, r in by_question.items()}
    assert "3 row(s), expected 7" in reasons["What are the distinct countries where singers above age 20 are from?"] or \
        "7 row(s), expected 3" in reasons["What are the distinct countries where singers above age 20 are from?"]
    assert "wrong order" in reasons["List the names of the three oldest singers, oldest first."]
    assert "unsafe SQL refused" in reasons["Which singers are from the Netherlands?"]
    assert "unsafe SQL refused" in reasons["Find the major and age of students who do not have a cat pet."]
    assert by_question["How many students have no pet?"].valid_sql is False
    assert by_question["How old is the oldest student?"].valid_sql is None
    assert by_question["List the names of the three oldest singers, oldest first."].ordered is True
    assert by_question["What are the ids of the students older than 20 who have a pet?"].ordered is False  # ORDER BY in a subquery

    # the unsafe queries changed nothing
    with sqlite3.connect(spider / "database" / "concert" / "concert.sqlite") as conn:
        assert conn.execute("SELECT COUNT(*) FROM singer WHERE country = 'Netherlands'").fetchone() == (2,)
    with sqlite3.connect(spider / "database" / "pets" / "pets.sqlite") as conn:
        assert conn.execute("SELECT COUNT(*) FROM pets").fetchone() == (5,)


def test_a_tolerance_forgives_the_rounded_average_and_nothing_else(spider, tmp_path):
    options = RunOptions(concurrency=2, tolerance=Tolerance(abs=0.005))
    run, _ = asyncio.run(run_spider(spider, tmp_path / "home", spider_model(), options=options))
    s = summarise(run.results)
    assert (s.execution.right, s.execution.out_of) == (15, 23)
    assert next(r for r in run.results if r.question == ROUNDED_CAPACITY).status == "pass"
    assert next(r for r in run.results if r.question == "What is the average weight of the dogs?").status == "fail"  # 0.01 off


def test_a_worse_model_regresses_against_the_baseline_and_the_gate_names_the_questions(spider, tmp_path):
    good, _ = asyncio.run(run_spider(spider, tmp_path / "good", spider_model()))
    baseline = read_report(write_json(good, tmp_path / "baseline.json"))
    worse_plan = dict(PLAN)
    worse_plan["How many singers do we have?"] = ["SELECT COUNT(*) FROM singer WHERE is_male = 1"]
    worse_plan["Which pet types are there?"] = ["SELECT pettype FROM pets"]  # duplicates
    worse, _ = asyncio.run(run_spider(spider, tmp_path / "worse", spider_model(worse_plan)))

    gate = compare_to_baseline(worse, baseline)
    assert not gate.passed and gate.compared == 23
    assert {r.question for r in gate.regressions} == {"How many singers do we have?", "Which pet types are there?"}
    assert any("execution accuracy dropped from 60.9% to 52.2%" in p for p in gate.problems)
    assert compare_to_baseline(worse, baseline, max_drop=0.09).passed  # within a 9-point tolerance
    assert compare_to_baseline(good, baseline).passed  # the same run is no regression


def test_the_budget_stops_scheduling_and_says_so(spider, tmp_path):
    # one question at a time: each costs 3+ calls at $0.00014; the budget is passed after the second
    options = RunOptions(concurrency=1, budget_usd=CALL_COST * 4)
    run, meter = asyncio.run(run_spider(spider, tmp_path / "home", spider_model(), options=options))
    asked = [r for r in run.results if r.latency_s is not None]
    skipped = [r for r in run.results if r.status == "skipped"]
    assert len(asked) == 2 and len(skipped) == 21
    assert run.budget_stopped and all(r.skip_reason.startswith("budget reached") for r in skipped)
    assert any("stopped scheduling: budget reached" in note for note in run.notes)
    assert meter.total.calls == 6


def test_a_budget_without_a_price_stops_at_once_rather_than_guess(spider, tmp_path):
    options = RunOptions(concurrency=1, budget_usd=1.0)
    run, _ = asyncio.run(run_spider(spider, tmp_path / "home", spider_model(), options=options, prices=""))
    assert sum(1 for r in run.results if r.latency_s is not None) == 1
    assert run.budget_stopped and "unknown" in run.notes[0]


def test_the_html_report_shows_each_failure_with_expected_and_produced(spider, tmp_path):
    run, _ = asyncio.run(run_spider(spider, tmp_path / "home", spider_model()))
    page = render_html(run)
    assert page.count('class="failure"') == 9
    assert "SELECT DISTINCT country FROM singer WHERE age &gt; 20" in page  # expected SQL, escaped
    assert "DELETE FROM singer WHERE country = &#x27;Netherlands&#x27;" in page  # produced (refused) SQL
    assert "sql.attempt" in page and "agent.routed" in page  # the step trace
    assert "<script" not in page and "http://" not in page and "https://" not in page
    report = json.loads(write_json(run, tmp_path / "r.json").read_text())
    assert report["summary"]["execution"] == {"right": 14, "out_of": 23, "rate": 14 / 23}


def test_a_question_past_its_deadline_fails_and_the_run_goes_on(spider, tmp_path):
    from baton.evaluation import GoldenSet
    from baton.llm import FunctionModel

    golden = load_golden_set(spider / "dev.json")
    slow_question = golden.questions[0].question
    inner = spider_model().fn

    async def hanging(messages, tools):
        if any(t.name == "run_sql" for t in tools) and any(m.content == slow_question for m in messages if m.role == "user"):
            await asyncio.sleep(60)  # a provider that never answers; the deadline cancels it
        return inner(messages, tools)

    subset = GoldenSet("subset", golden.questions[:2], source="test")
    run, _ = asyncio.run(run_spider(spider, tmp_path / "home", FunctionModel(hanging), golden=subset,
                                    options=RunOptions(concurrency=2, timeout_s=0.5)))
    slow, fine = run.results
    assert slow.status == "fail" and slow.reasons == ["no answer within 0.5 s"]
    assert slow.llm_calls == 2  # the routing call, and the SQL call that never came back
    assert fine.status == "pass"


def test_a_database_that_cannot_be_opened_fails_its_questions_with_the_reason(spider, tmp_path):
    from baton.evaluation import golden_set

    golden = golden_set("bad", [
        {"id": "nowhere", "question": "How many?", "sql": "SELECT 1", "database": "nosuchdriver://user:secret@host/db"},
        {"id": "again", "question": "How many more?", "sql": "SELECT 2", "database": "nosuchdriver://user:secret@host/db"},
    ])
    run, meter = asyncio.run(run_spider(spider, tmp_path / "home", spider_model(), golden=golden))
    assert [r.status for r in run.results] == ["fail", "fail"]
    assert all("cannot open a workspace for nosuchdriver://user:***@host/db" in r.reasons[0] for r in run.results)
    assert all("secret" not in r.reasons[0] for r in run.results)
    assert meter.total.calls == 0
