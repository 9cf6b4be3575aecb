"""Asking in your own words: normalisation, verified-question matching, slots, "Did you mean"
(issue 14, part 1). Pure functions first, then the demo end to end with no model."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from baton.demo.data import build_demo_database
from baton.demo.docs import demo_vocabulary
from baton.demo.verified import VERIFIED_QUESTIONS
from baton.demo.workspace import build_demo_workspace
from baton.phrasing import DEFAULT_VOCABULARY, Vocabulary
from baton.verified import Slot, SlotError, VerifiedQuestion, closest_verified, find_verified, with_vocabulary
from baton.verified.sql import bind, bind_limit, bind_year, check_slots, sql_terms

CASES = json.loads((Path(__file__).parent / "data" / "paraphrases.json").read_text(encoding="utf-8"))
BY_QUESTION = {v.question: v for v in VERIFIED_QUESTIONS}


@pytest.fixture(scope="module")
def demo_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("demo-words")
    build_demo_database(directory / "finance.sqlite", sales_rows=1_000)
    return directory


@pytest.fixture(scope="module")
def verified(demo_dir):
    return with_vocabulary(VERIFIED_QUESTIONS, demo_vocabulary(demo_dir / "finance.sqlite"))


@pytest.mark.parametrize("a,b", [
    ("What was Pokemon's revenue by month in 2025?", "pokemon revenue by month 2025"),
    ("Pokémon revenue per month, 2025", "POKEMON REVENUE EACH MONTH 2025"),
    ("pokemon monthly sales FY2025", "Pokemon revenue by month in 2025"),
    ("Which cities sold the most tickets?", "which city sold most ticket"),
    ("best-selling products", "top selling products"),
])
def test_phrasings_of_one_question_read_the_same(a, b):
    assert DEFAULT_VOCABULARY.keys(a) == DEFAULT_VOCABULARY.keys(b)


@pytest.mark.parametrize("a,b", [
    ("Pokemon revenue by month", "Pokemon costs by month"),
    ("products that sold the most", "products that sold the least"),
    ("products that sold", "products that did not sell"),
    ("revenue in 2025", "revenue in 2024"),
    ("average revenue", "revenue"),
])
def test_different_questions_read_differently(a, b):
    assert DEFAULT_VOCABULARY.keys(a) != DEFAULT_VOCABULARY.keys(b)


def test_synonyms_and_entity_types_come_from_the_schema_and_the_documents(demo_dir):
    vocabulary = demo_vocabulary(demo_dir / "finance.sqlite")
    # "business unit" after a business unit's name only names its type (from the schema)
    assert vocabulary.keys("the Pokemon business unit's revenue") == vocabulary.keys("Pokemon revenue")
    assert DEFAULT_VOCABULARY.keys("the Pokemon business unit's revenue") != DEFAULT_VOCABULARY.keys("Pokemon revenue")
    # "Also called: earnings" under "## Profit", "road show" under "## Roadshow" (from the doctrine)
    assert vocabulary.keys("earnings of each road show city") == vocabulary.keys("profit of each roadshow city")
    markdown = Vocabulary.from_markdown(["# Glossary\n\n## Churn\n\nAlso called: attrition, customer loss.\n\nText."])
    assert markdown.keys("attrition by month") == markdown.keys("churn by month") == markdown.keys("customer loss by month")


def test_the_paraphrase_set_is_answered_by_its_verified_question_with_its_slots(verified):
    """The same figures ``bench/paraphrase_recall.py`` prints, on the matcher alone: recall
    of at least 90 % and not one paraphrase answered by another question (issue 14, item 1:
    "targets: recall >= 90 %, wrong-question answers 0"; both floors are the issue's)."""
    by_question = {v.question: v for v in verified}
    right, wrong = 0, []
    for case in CASES["paraphrases"]:
        found = find_verified(case["question"], verified)
        expected = bind(by_question[case["expects"]], case["bindings"])
        if found is not None and (found.sql, found.agent) == (expected.sql, expected.agent):
            right += 1
        elif found is not None:
            wrong.append((case["question"], found.question))
    assert len(CASES["paraphrases"]) >= 60 and wrong == []
    assert right / len(CASES["paraphrases"]) >= 0.9


@pytest.mark.parametrize("case", CASES["near_misses"], ids=lambda c: c["why"])
def test_a_question_that_differs_in_meaning_is_never_answered_with_verified_rows(verified, case):
    assert find_verified(case["question"], verified) is None
    assert len(CASES["near_misses"]) >= 20


def test_a_year_slot_binds_every_year_literal_of_the_sql_and_names_the_bound_year(verified):
    pokemon = next(v for v in verified if v.question == "What was Pokemon revenue by month in 2025?")
    found = find_verified("Pokemon revenue by month in 2024", verified)
    assert found.sql == pokemon.sql.replace("'2025-%'", "'2024-%'")
    assert found.question == "What was Pokemon revenue by month in 2024?" and found.template == pokemon.question
    assert found.bindings == (("year", "2024"),) and found.agent == "pokemon_finance"
    ranged = "SELECT SUM(x) AS s FROM t WHERE d >= '2025-01-01' AND d < '2026-01-01' AND code = 20250"
    assert bind_year(ranged, "2025", "2023") == "SELECT SUM(x) AS s FROM t WHERE d >= '2023-01-01' AND d < '2024-01-01' AND code = 20250"


def test_a_top_n_slot_adds_or_replaces_the_outer_limit_only():
    assert bind_limit("SELECT a, SUM(b) AS s FROM t GROUP BY a ORDER BY s DESC;", "3").endswith("ORDER BY s DESC LIMIT 3")
    nested = "SELECT * FROM (SELECT a FROM t LIMIT 100) AS x ORDER BY a DESC LIMIT 10"
    assert bind_limit(nested, "4") == "SELECT * FROM (SELECT a FROM t LIMIT 100) AS x ORDER BY a DESC LIMIT 4"
    with pytest.raises(SlotError):
        bind_limit(nested, "100000")


def test_a_choice_slot_replaces_the_literal_compared_with_its_column():
    unit = Slot("unit", "choice", "Pokemon", column="unit_id", choices=(("Pokemon", "1"), ("Epson", "2")))
    question = VerifiedQuestion("What was Pokemon revenue in 2025?",
                                "SELECT SUM(revenue_cents) AS revenue FROM monthly_revenue WHERE unit_id = 1 AND month LIKE '2025-%'",
                                "finance", slots=(unit,))
    check_slots(question)
    found = find_verified("Epson revenue in 2025", [question])
    assert found.sql.endswith("WHERE unit_id = 2 AND month LIKE '2025-%'") and found.question == "What was Epson revenue in 2025?"
    assert find_verified("Canon revenue in 2025", [question]) is None  # not a declared choice
    with pytest.raises(SlotError):
        Slot("unit", "choice", "x", column="unit_id", choices=(("x", "1'; DROP TABLE t; --"),))


def test_slots_that_cannot_bind_are_refused_when_declared():
    with pytest.raises(SlotError):
        check_slots(VerifiedQuestion("Revenue in 2025?", "SELECT 1 AS x", slots=(Slot("year", "year", "2025"),)))
    with pytest.raises(SlotError):
        check_slots(VerifiedQuestion("Revenue?", "SELECT 2025 AS x", slots=(Slot("year", "year", "2025"),)))
    with pytest.raises(SlotError):  # a top N of an unranked result means nothing
        check_slots(VerifiedQuestion("Products?", "SELECT name FROM products", slots=(Slot("top", "limit"),)))
    with pytest.raises(SlotError):
        Slot("year", "year", "last year")


def test_hostile_text_in_a_question_never_reaches_the_sql(verified):
    for question in ["Pokemon revenue by month in 2025'; DROP TABLE monthly_revenue; --",
                     "Pokemon revenue by month in 2025 UNION SELECT * FROM sqlite_master",
                     "top 1e9 Epson products in 2025", "top -3 Epson products in 2025"]:
        found = find_verified(question, verified)
        assert found is None or found.sql == bind(BY_QUESTION[found.checked_question], dict(found.bindings)).sql
    assert find_verified("top 5000 Epson products in 2025", verified) is None  # past the limit a slot accepts


def test_equally_specific_matches_with_different_sql_are_ambiguous_and_match_nothing():
    a = VerifiedQuestion("revenue by region", "SELECT region, SUM(x) AS revenue FROM a GROUP BY region", "one")
    b = VerifiedQuestion("revenue by region", "SELECT region, SUM(y) AS revenue FROM b GROUP BY region", "two")
    assert find_verified("revenue per region", [a, b]) is None
    assert find_verified("revenue per region", [a, a]) == a


def test_what_the_sql_implies():
    outputs, tables, measures, direction = sql_terms(BY_QUESTION["What was the profit of each roadshow city?"].sql)
    assert (outputs, tables, measures, direction) == (("city", "profit"), ("roadshow_events",), ("profit",), "most")
    assert sql_terms("SELECT month, SUM(x) AS r FROM t GROUP BY month ORDER BY month")[3] is None
    assert sql_terms("SELECT a, SUM(x) AS r FROM t GROUP BY a ORDER BY r ASC")[3] == "least"
    assert sql_terms("not sql at all ((") == ((), (), (), None)


def test_the_closest_verified_questions_come_first(verified):
    closest = closest_verified("What was Epson revenue in March 2024?", verified)
    assert [v.question for _, v in closest][:2] == ["What was Epson revenue by month in 2025?", "Which Epson products sold the most in 2025?"]
    assert len(closest) == 3 and closest[0][0] > closest[2][0] > 0


async def test_a_bound_year_runs_the_verified_sql_for_that_year_with_no_model(demo_dir):
    async with build_demo_workspace(demo_dir) as ws:
        answer = await ws.answer("What was Pokemon's revenue by month in 2024?")
        other = await ws.answer("top 2 Epson products in 2024")
    rows = sqlite3.connect(demo_dir / "finance.sqlite").execute(
        "SELECT month, ROUND(SUM(revenue_cents) / 100.0, 2) FROM monthly_revenue WHERE unit_id = 1 AND month LIKE '2024-%' "
        "GROUP BY month ORDER BY month").fetchall()
    assert [tuple(r.values()) for r in answer.data] == rows and len(rows) == 12
    assert answer.metadata["fast_path"] == "verified_question" and answer.metadata["llm_calls"] == 0
    assert answer.metadata["verified_question"] == "What was Pokemon revenue by month in 2024?"
    assert len(other.data) == 2 and other.query.endswith("LIMIT 2") and "'2024-%'" in other.query


@pytest.mark.parametrize("default,column,choices,words", [
    ("Canon", "unit_id", (("Pokemon", "1"), ("Epson", "2")), "must be one of its choices"),
    ("North", "region", (("North America", "na"), ("Europe", "eu")), "one word"),
    ("Epson", "unit_id", (("Epson", "1"), ("EPSON", "2")), "repeats"),
    ("Epson", "r.unit_id", (("Epson", "1"), ("Canon", "2")), "without its table"),
    ("W0", "unit_id", tuple((f"W{i}", str(i)) for i in range(51)), "at most 50"),
])
def test_a_choice_slot_refuses_what_matching_could_not_bind_one_way(default, column, choices, words):
    with pytest.raises(SlotError, match=words):
        Slot("unit", "choice", default, column=column, choices=choices)


def test_a_vocabulary_remembers_a_texts_tokens_and_hands_out_copies():
    """The orchestrator and the specialist read one question twice: the second read is the
    first's tokens, in a list of its own (a caller that edits it changes nothing remembered)."""
    vocabulary = Vocabulary(synonyms={"turnover": "revenue"})
    first = vocabulary.tokens("Turnover by month in FY24")
    first.append(first[0])
    again = vocabulary.tokens("Turnover by month in FY24")
    assert [t.key for t in again] == ["revenue", "month", "<year>2024"]
    assert vocabulary.tokens("Turnover by month in FY24", keep_stop_words=True) != again  # "by", "in" kept
