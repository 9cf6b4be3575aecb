"""Questions to semantic queries with no model: answers, ask-backs whose suggestions answer
themselves, and the model checks that keep a model usable."""

from __future__ import annotations

import pytest

from baton.demo.data import build_demo_database
from baton.semantic.errors import SemanticModelError
from baton.semantic.layer import SemanticLayer
from baton.semantic.loading import demo_model_path, load_model
from baton.semantic.native import model_from_dict
from baton.semantic.parser import AskBack, NotMetric, Parsed
from baton.semantic.query import SemanticQuery, SemanticQueryError
from baton.specialists.sql.connection import SQLConnection
from semantic_gold import load_cases


@pytest.fixture(scope="module")
def database(tmp_path_factory):
    return build_demo_database(tmp_path_factory.mktemp("parser") / "finance.sqlite", sales_rows=300)


@pytest.fixture
async def parser(database):
    layer = SemanticLayer(load_model(demo_model_path()), SQLConnection(f"sqlite:///{database}", id="parser"))
    yield await layer.ready()
    await layer.connection.aclose()


def parsed(parser, question: str) -> dict:
    outcome = parser.parse(question)
    assert isinstance(outcome, Parsed), (question, outcome)
    return outcome.query.to_dict()


@pytest.mark.parametrize("question, expected", [
    ("What was Epson revenue by quarter in 2025?",
     {"metrics": ["revenue"], "by": ["time"], "grain": "quarter", "where": {"business_unit": ["Epson"], "time": ["2025"]}}),
    ("What was Pokémon's revenue in March 2025?", {"metrics": ["revenue"], "where": {"business_unit": ["Pokemon"], "time": ["2025-03"]}}),
    ("revenue for the Epson business unit in Q3 2025", {"metrics": ["revenue"], "where": {"business_unit": ["Epson"], "time": ["2025-Q3"]}}),
    ("revenue in the month of March 2025", {"metrics": ["revenue"], "where": {"time": ["2025-03"]}}),
    ("printers revenue in FY25", {"metrics": ["revenue"], "where": {"product_category": ["printers"], "time": ["2025"]}}),
    ("EcoTank sales in 2024", {"metrics": ["revenue"], "where": {"product": ["EcoTank L3250"], "time": ["2024"]}}),
    ("top 5 cities by tickets sold", {"metrics": ["tickets"], "by": ["city"], "order": [["tickets", "desc"], ["city", "asc"]], "limit": 5}),
    ("the three lowest business units by cost in 2024",
     {"metrics": ["cost"], "by": ["business_unit"], "where": {"time": ["2024"]}, "order": [["cost", "asc"], ["business_unit", "asc"]], "limit": 3}),
    ("Epson vs Pokemon revenue in 2025",
     {"metrics": ["revenue"], "by": ["business_unit"], "where": {"business_unit": ["Epson", "Pokemon"], "time": ["2025"]}}),
    ("revenue from April to June 2024", {"metrics": ["revenue"], "by": ["time"], "grain": "month",
                                          "where": {"time": ["2024-04", "2024-05", "2024-06"]}}),
    ("Which roadshow cities made the most profit?", {"metrics": ["event_profit"], "by": ["city"]}),
    ("How much did we spend on marketing in 2025?", {"metrics": ["cost"], "where": {"cost_category": ["marketing"], "time": ["2025"]}}),
])
async def test_questions_become_semantic_queries(parser, question, expected):
    got = parsed(parser, question)
    got.pop("order", None) if "order" not in expected else None
    assert got == expected


@pytest.mark.parametrize("question, reason, suggestions", [
    ("Which products sold the most in 2025?", "ambiguous",
     ["Revenue by product in 2025", "Units sold by product in 2025", "Transactions by product in 2025"]),
    ("profit in 2025", "ambiguous", ["Net profit in 2025", "Roadshow profit in 2025"]),
    ("revenue in March", "needs_period", ["Revenue in March 2025", "Revenue in March 2024"]),
    ("revenue this year", "unknown_words", ["Revenue in 2025", "Revenue in 2024"]),
    ("revenue excluding Epson in 2025", "unknown_words", ["Revenue in 2025"]),
    ("costs by product in 2025", "cannot_answer", ["Cost in 2025"]),
    ("weekly revenue in 2025", "cannot_answer", ["Revenue by month in 2025", "Revenue in 2025"]),
])
async def test_unsure_questions_are_asked_back_with_suggestions_that_answer_themselves(parser, question, reason, suggestions):
    outcome = parser.parse(question)
    assert isinstance(outcome, AskBack) and outcome.reason == reason, outcome
    assert list(outcome.questions) == suggestions
    for text, reading in zip(outcome.questions, outcome.readings):
        again = parser.parse(text)
        assert isinstance(again, Parsed) and again.query == reading, text


async def test_every_ask_back_of_the_question_set_offers_only_suggestions_that_work(parser):
    for question in load_cases()["ask_back"]:
        outcome = parser.parse(question)
        assert isinstance(outcome, AskBack), question
        for text, reading in zip(outcome.questions, outcome.readings):
            assert parser.parse(text) == Parsed(reading), (question, text)


@pytest.mark.parametrize("question", ["What is a roadshow?", "Write a poem about spring", "Show this as a pie chart", ""])
async def test_questions_about_no_metric_are_left_to_other_routes(parser, question):
    assert isinstance(parser.parse(question), NotMetric)


def test_the_model_checks_its_references():
    base = {"name": "m", "entities": [{"name": "e", "table": "t"}], "measures": [{"name": "x", "entity": "e", "agg": "sum", "expr": "v"}],
            "metrics": [{"name": "a", "measure": "x"}], "dimensions": [{"name": "d", "entity": "e", "expr": "c"}]}
    model_from_dict(base)
    for change, message in (
        ({"metrics": [{"name": "a", "measure": "x"}, {"name": "a", "type": "derived", "expr": "a + 1"}]}, "defined twice"),
        ({"metrics": [{"name": "a", "type": "derived", "expr": "b"}, {"name": "b", "type": "derived", "expr": "a"}]}, "refers to itself"),
        ({"metrics": [{"name": "a", "type": "ratio", "numerator": "x", "denominator": "a"}]}, "numerator and denominator"),
        ({"metrics": [{"name": "a", "measure": "nope"}]}, "needs a measure"),
        ({"dimensions": [{"name": "time", "entity": "e", "expr": "c"}]}, "defined twice"),
        ({"measures": [{"name": "x", "entity": "e", "agg": "median", "expr": "v"}]}, "agg"),
        ({"entities": [{"name": "e", "table": "t", "joins": [{"to": "f", "on": {"a": "b"}}]}]}, "no entity"),
        ({"entities": [{"name": "e", "table": "t", "time": {"column": "d", "format": "julian"}}]}, "time format"),
        ({"metrics": []}, "no metric"),
    ):
        with pytest.raises(SemanticModelError, match=message):
            model_from_dict({**base, **change})


def test_a_query_the_model_cannot_answer_says_why():
    model = load_model(demo_model_path())
    for data, message in (
        ({"metrics": ["cost"], "by": ["city"]}, "cost cannot be broken down by city"),
        ({"metrics": ["revenue"], "by": ["time"], "grain": "day"}, "kept by month"),
        ({"metrics": ["revenue"], "where": {"time": ["2025-03-01"]}}, "finer"),
        ({"metrics": ["nope"]}, "no metric"),
        ({"metrics": ["revenue"], "order": [["city", "desc"]]}, "cannot order by"),
        ({"metrics": ["revenue"], "limit": 0}, "limit"),
    ):
        with pytest.raises(SemanticQueryError, match=message):
            SemanticQuery.from_dict(data).check(model)
