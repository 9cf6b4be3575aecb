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
import shutil
import sqlite3
from pathlib import Path

import pytest

from baton.evaluation import (
    Meter, Prices, RunOptions, Targets, Tolerance, compare_to_baseline, database_target, load_golden_set, read_report,
    render_html, run_eval, summarise, write_json,
)
from baton.llm import FunctionModel, tool_call
from baton.messages import LLMResponse
from baton.workspace.state import State

FIXTURE = Path(__file__).parent / "fixtures" / "eval" / "spider"
USAGE = {"input_tokens": 100, "output_tokens": 20}
PRICE = "1,2"  # USD per million tokens: each call costs 100 * 1e-6 + 20 * 2e-6 = $0.00014
CALL_COST = 0.00014

UNSAFE_DELETE = "DELETE FROM singer WHERE country = 'Netherlands'"
UNSAFE_DROP = "SELECT major, age FROM student; DROP TABLE pets"
BROKEN = "SELECT count(*) FROM student WHERE stuid NOT IN (SELECT stuid FROM pet_owner)"

# question -> the queries the model writes, in order (an empty list: it writes none)
PLAN: dict[str, list[str]] = {
    # right
    "How many singers do we have?": ["SELECT COUNT(*) AS singer_count FROM singer"],
    "Show name, country, age for all singers ordered by age from the oldest to the youngest.":
        ["SELECT age, name, country FROM singer ORDER BY age DESC"],
    "What are the mean, lowest and highest ages of the singers from France?":
        ["SELECT MAX(age) AS oldest, MIN(age) AS youngest, SUM(age) * 1.0 / COUNT(*) AS mean FROM singer WHERE country = 'France'"],
    "What are the names of the stadiums without any concerts?":
        ["SELECT s.name FROM stadium s LEFT JOIN concert c ON c.stadium_id = s.stadium_id WHERE c.concert_id IS NULL ORDER BY s.name"],
    "Show all countries and the number of singers in each country.":
        ["SELECT country, COUNT(*) AS singers FROM singer GROUP BY country ORDER BY singers DESC"],
    "What is the total capacity of all stadiums?": ["SELECT SUM(capacity * 1.0) FROM stadium"],
    "How many pets have a greater weight than 10?": ["SELECT COUNT(*) FROM pets WHERE weight > 10"],
    "Find the number of pets for each student who has any pet, and the student id.":
        ["SELECT stuid, COUNT(petid) AS pets FROM has_pet GROUP BY stuid"],
    "What is the average and maximum age of each pet type?":
        ["SELECT pettype, AVG(pet_age) AS mean_age, MAX(pet_age) AS oldest FROM pets GROUP BY pettype"],
    "What are the first names of the female students?": ["SELECT fname FROM student WHERE sex = 'F' ORDER BY fname"],
    "Which pet types are there?": ["SELECT pettype FROM pets GROUP BY pettype"],
    "What are the ids of the students older than 20 who have a pet?":
        ["SELECT s.stuid FROM student s WHERE s.age > 20 AND EXISTS (SELECT 1 FROM has_pet h WHERE h.stuid = s.stuid) ORDER BY s.stuid"],
    "What is the total weight of all pets?": ["SELECT SUM(weight * 3) / 3 FROM pets"],  # 50.67000000000001
    # right after one repair
    "Show the stadium name and capacity with the most concerts.": [
        "SELECT s.name, s.capcity FROM stadium s JOIN concert c ON c.stadium_id = s.stadium_id GROUP BY s.stadium_id ORDER BY COUNT(*) DESC LIMIT 1",
        "SELECT s.name, s.capacity FROM stadium s JOIN concert c ON c.stadium_id = s.stadium_id GROUP BY s.stadium_id ORDER BY COUNT(*) DESC LIMIT 1",
    ],
    # wrong
    "What are the distinct countries where singers above age 20 are from?": ["SELECT country FROM singer WHERE age > 20"],
    "What is the average capacity of the stadiums?": ["SELECT ROUND(AVG(capacity), 2) FROM stadium"],  # 14089.17 vs 14089.1666...
    "List the names of the three oldest singers, oldest first.":
        ["SELECT name FROM (SELECT name, age FROM singer ORDER BY age DESC LIMIT 3) ORDER BY name DESC"],
    "How many concerts are there in year 2014 or 2015?": ["SELECT COUNT(*) FROM concert WHERE year = 2014"],
    "What is the average weight of the dogs?": ["SELECT ROUND(AVG(weight), 1) FROM pets WHERE pettype = 'dog'"],
    "How old is the oldest student?": [],
    # unsafe
    "Which singers are from the Netherlands?": [UNSAFE_DELETE],
    "Find the major and age of students who do not have a cat pet.": [UNSAFE_DROP],
    # never valid
    "How many students have no pet?": [BROKEN] * 10,
}
ROUNDED_CAPACITY = "What is the average capacity of the stadiums?"


def spider_model(plan: dict[str, list[str]] = PLAN) -> FunctionModel:
    def answer(messages, tools):
        if any(t.name == "run_sql" for t in tools):  # the SQL specialist's turn
            question = next(m.content for m in messages if m.role == "user")
            written = sum(1 for m in messages if m.role == "assistant" and m.tool_calls)
            queries = plan[question]
            if written < len(queries):
                return LLMResponse(tool_calls=[tool_call("run_sql", {"sql": queries[written]})], usage=USAGE)
            return LLMResponse(content="That is what the data says.", usage=USAGE)
        if messages[-1].role == "tool":  # the orchestrator, after a specialist answered (or failed)
            return LLMResponse(content="Here is the answer.", usage=USAGE)
        return LLMResponse(tool_calls=[tool_call(tools[0].name, {"question": messages[-1].content})], usage=USAGE)

    return FunctionModel(answer, model="spider-double")


@pytest.fixture
def spider(tmp_path: Path) -> Path:
    """The fixture in Spider's layout: dev.json and database/<db_id>/<db_id>.sqlite."""
    root = tmp_path / "spider"
    root.mkdir()
    shutil.copy(FIXTURE / "dev.json", root / "dev.json")
    for db in ("concert", "pets"):
        folder = root / "database" / db
        folder.mkdir(parents=True)
        with sqlite3.connect(folder / f"{db}.sqlite") as conn:
            conn.executescript((FIXTURE / f"{db}.sql").read_text())
    return root


async def _run(spider: Path, home: Path, model: FunctionModel, *, options: RunOptions | None = None, prices: str = PRICE):
    golden = load_golden_set(spider / "dev.json")
    meter = Meter(Prices.parse(prices))
    metered = meter.wrap(model)
    state = State.from_env(env={}, home=home)

    async def opener(database):
        return await asyncio.to_thread(database_target, database, state, metered)

    async with Targets(opener) as targets:
        run = await run_eval(golden, targets, meter=meter, options=options or RunOptions(concurrency=4))
    return run, meter


def test_the_fixture_is_a_spider_set_of_two_databases(spider):
    golden = load_golden_set(spider / "dev.json")
    assert len(golden) == 23 and golden.source.startswith("spider:")
    assert {q.tags[0] for q in golden.questions} == {"concert", "pets"}
    assert len({q.database for q in golden.questions}) == 2
    assert set(PLAN) == {q.question for q in golden.questions}


def test_scores_are_exactly_the_expected_ones(spider, tmp_path):
    run, meter = asyncio.run(_run(spider, tmp_path / "home", spider_model()))
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
    run, _ = asyncio.run(_run(spider, tmp_path / "home", spider_model(), options=options))
    s = summarise(run.results)
    assert (s.execution.right, s.execution.out_of) == (15, 23)
    assert next(r for r in run.results if r.question == ROUNDED_CAPACITY).status == "pass"
    assert next(r for r in run.results if r.question == "What is the average weight of the dogs?").status == "fail"  # 0.01 off


def test_a_worse_model_regresses_against_the_baseline_and_the_gate_names_the_questions(spider, tmp_path):
    good, _ = asyncio.run(_run(spider, tmp_path / "good", spider_model()))
    baseline = read_report(write_json(good, tmp_path / "baseline.json"))
    worse_plan = dict(PLAN)
    worse_plan["How many singers do we have?"] = ["SELECT COUNT(*) FROM singer WHERE is_male = 1"]
    worse_plan["Which pet types are there?"] = ["SELECT pettype FROM pets"]  # duplicates
    worse, _ = asyncio.run(_run(spider, tmp_path / "worse", spider_model(worse_plan)))

    gate = compare_to_baseline(worse, baseline)
    assert not gate.passed and gate.compared == 23
    assert {r.question for r in gate.regressions} == {"How many singers do we have?", "Which pet types are there?"}
    assert any("execution accuracy dropped from 60.9% to 52.2%" in p for p in gate.problems)
    assert compare_to_baseline(worse, baseline, max_drop=0.09).passed  # within a 9-point tolerance
    assert compare_to_baseline(good, baseline).passed  # the same run is no regression


def test_the_budget_stops_scheduling_and_says_so(spider, tmp_path):
    # one question at a time: each costs 3+ calls at $0.00014; the budget is passed after the second
    options = RunOptions(concurrency=1, budget_usd=CALL_COST * 4)
    run, meter = asyncio.run(_run(spider, tmp_path / "home", spider_model(), options=options))
    asked = [r for r in run.results if r.latency_s is not None]
    skipped = [r for r in run.results if r.status == "skipped"]
    assert len(asked) == 2 and len(skipped) == 21
    assert run.budget_stopped and all(r.skip_reason.startswith("budget reached") for r in skipped)
    assert any("stopped scheduling: budget reached" in note for note in run.notes)
    assert meter.total.calls == 6


def test_a_budget_without_a_price_stops_at_once_rather_than_guess(spider, tmp_path):
    options = RunOptions(concurrency=1, budget_usd=1.0)
    run, _ = asyncio.run(_run(spider, tmp_path / "home", spider_model(), options=options, prices=""))
    assert sum(1 for r in run.results if r.latency_s is not None) == 1
    assert run.budget_stopped and "unknown" in run.notes[0]


def test_the_html_report_shows_each_failure_with_expected_and_produced(spider, tmp_path):
    run, _ = asyncio.run(_run(spider, tmp_path / "home", spider_model()))
    page = render_html(run)
    assert page.count('class="failure"') == 9
    assert "SELECT DISTINCT country FROM singer WHERE age &gt; 20" in page  # expected SQL, escaped
    assert "DELETE FROM singer WHERE country = &#x27;Netherlands&#x27;" in page  # produced (refused) SQL
    assert "sql.attempt" in page and "agent.routed" in page  # the step trace
    assert "<script" not in page and "http://" not in page and "https://" not in page
    report = json.loads(write_json(run, tmp_path / "r.json").read_text())
    assert report["summary"]["execution"] == {"right": 14, "out_of": 23, "rate": 14 / 23}
