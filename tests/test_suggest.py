"""Template follow-ups (seed 002): the pool rules, determinism under a seed, no global state."""

from __future__ import annotations

import random

import pytest

from baton.viz.suggest import generate_followups, has_aggregate_keywords

PLAIN = "SELECT name, city FROM customers"
AGGREGATE = "SELECT region, SUM(amount) AS revenue FROM orders GROUP BY region"
# Seed 002, "Suggestion Engine (No LLM Cost)", word for word: what the answers must offer.
SEEDS_FIVE = [
    "Show this as a pie chart",
    "Break this down by month",
    "Compare with the previous period",
    "Show only the top 5 results",
    "What is the trend over time?",
]
SEEDS_AGGREGATE_TWO = ["Show percentage breakdown", "Average instead of count?"]


def everything(query, columns, row_count):
    """The whole shuffled pool (k large enough to see every candidate)."""
    return generate_followups(query, columns, row_count, seed=0, k=100)


def test_a_plain_single_row_answer_is_offered_exactly_the_seeds_five():
    pool = everything(PLAIN, ["name"], 1)
    assert sorted(pool) == sorted(SEEDS_FIVE)


def test_aggregates_add_percentage_and_average_suggestions():
    pool = everything(AGGREGATE, ["region"], 1)
    assert sorted(pool) == sorted(SEEDS_FIVE + SEEDS_AGGREGATE_TWO)


def test_several_rows_and_columns_add_a_sort_on_the_last_column():
    pool = everything(AGGREGATE, ["region", "revenue"], 4)
    assert "Sort by revenue descending" in pool
    assert sorted(pool) == sorted([*SEEDS_FIVE, *SEEDS_AGGREGATE_TWO, "Sort by revenue descending"])
    assert "Sort by revenue descending" not in everything(AGGREGATE, ["region", "revenue"], 1)
    assert not any(s.startswith("Sort by") for s in everything(AGGREGATE, ["revenue"], 10))


def test_three_by_default_and_deterministic_under_a_seed():
    first = generate_followups(AGGREGATE, ["region", "revenue"], 4, seed=7)
    assert len(first) == 3 and len(set(first)) == 3
    assert all(generate_followups(AGGREGATE, ["region", "revenue"], 4, seed=7) == first for _ in range(5))
    orders = {tuple(generate_followups(AGGREGATE, ["region", "revenue"], 4, seed=s)) for s in range(20)}
    assert len(orders) > 1  # the seed does choose the order


def test_the_global_random_state_is_neither_used_nor_disturbed():
    random.seed(123)
    expected_next = random.random()
    random.seed(123)
    generate_followups(AGGREGATE, ["region", "revenue"], 4, seed=1)
    generate_followups(AGGREGATE, ["region", "revenue"], 4)
    assert random.random() == expected_next
    random.seed(1)
    a = generate_followups(AGGREGATE, ["region", "revenue"], 4, seed=5)
    random.seed(2)
    assert generate_followups(AGGREGATE, ["region", "revenue"], 4, seed=5) == a


@pytest.mark.parametrize(
    "query,expected",
    [
        ("SELECT COUNT(*) FROM t", True),
        ("select avg(price) from t", True),
        ("SELECT max(x), min(y) FROM t", True),
        ("SELECT a FROM t GROUP\n  BY a", True),
        ("SELECT a FROM t HAVING 1=1", True),
        ("What is the average order value?", True),
        ("SELECT max_price, total FROM t", False),
        ("SELECT name FROM t WHERE status = 'count'", False),
        ("SELECT name FROM t -- sum of nothing\nWHERE 1=1", False),
        ("SELECT name /* max */ FROM t", False),
        ("", False),
        (None, False),
    ],
)
def test_aggregate_keywords(query, expected):
    assert has_aggregate_keywords(query) is expected


def test_k_bounds():
    assert generate_followups(PLAIN, ["a"], 1, seed=0, k=0) == []
    with pytest.raises(ValueError):
        generate_followups(PLAIN, ["a"], 1, k=-1)


# --- suggestions that fit the result (issue 14) ---------------------------------------------

from baton.response import QueryResult  # noqa: E402
from baton.viz.suggest import fitting_followups  # noqa: E402

MONTHLY_SQL = "SELECT month, ROUND(SUM(revenue_cents) / 100.0, 2) AS revenue FROM monthly_revenue GROUP BY month ORDER BY month"
MONTHS = QueryResult(["month", "revenue"], [[f"2025-{m:02d}", 100.0 + (m % 5) * 10] for m in range(1, 13)])
REGIONS = QueryResult(["region", "revenue"], [["North", 500], ["South", 200], ["East", 150], ["West", 150]])


def test_with_the_result_only_what_can_be_answered_is_offered():
    months = fitting_followups(MONTHS, query=MONTHLY_SQL, dialect="sqlite", viz_type="line")
    assert set(months) == {"Show this as a bar chart", "Show only the top 5 results", "Sort by revenue descending",
                           "Show percentage breakdown", "Break this down by quarter", "Compare with the previous period"}
    assert "Show this as a pie chart" not in months  # 12 periods are no share of a whole
    regions = fitting_followups(REGIONS, query=AGGREGATE, viz_type="bar")
    # already sorted descending, only 4 rows: the other order, the top 3 and by name instead (at least three offers)
    assert set(regions) == {"Show this as a pie chart", "Show percentage breakdown", "Sort by revenue ascending",
                            "Show only the top 3 results", "Sort by region"}
    averages = QueryResult(["region", "avg_price"], [["a", 3.0], ["b", 9.0], ["c", 5.0]])
    assert "Show percentage breakdown" not in fitting_followups(averages, query="SELECT region, AVG(price) AS avg_price FROM t GROUP BY region")
    averaged_months = fitting_followups(MONTHS, query=MONTHLY_SQL.replace("SUM", "AVG"), viz_type="line")
    assert "Break this down by quarter" not in averaged_months  # an average of averages is no average
    assert "Break this down by quarter" not in fitting_followups(MONTHS, query=None, viz_type="line")  # no SQL to rewrite


def test_generate_followups_with_a_result_draws_from_the_fitting_pool_only():
    for seed in range(10):
        drawn = generate_followups(MONTHLY_SQL, MONTHS.columns, MONTHS.row_count, seed=seed, result=MONTHS, viz_type="line")
        assert len(drawn) == 3 and set(drawn) <= set(fitting_followups(MONTHS, query=MONTHLY_SQL, viz_type="line"))
        assert not set(drawn) & {"What is the trend over time?", "Average instead of count?"}
    assert generate_followups(None, ["a"], 0, result=QueryResult(["a"], [])) == []


@pytest.mark.parametrize(("column", "values", "additive"), [
    ("revenue", [5, 7], True), ("minutes_played", [5, 7], True), ("Units Sold", [1, 2], True),
    ("avg_price", [5, 7], False), ("avgprice", [5, 7], False), ("conversion_rate", [0.1, 0.2], False),
    ("revenue_per_user", [5, 7], False), ("max_temp", [5, 7], False), ("credit_score", [5, 7], False),
    ("SalesRank", [1, 2], False), ("avgPrice", [1, 2], False), ("sales rank", [1, 2], False), ("Share", [0.4, 0.6], False),
    ("profit", [-5, 7], False),  # a negative value: no share of a whole
])
def test_one_meaning_of_additive_for_shares_follow_ups_and_insights(column, values, additive):
    """Suggestions, the no-model "as a share" follow-up and insights used three word lists
    that disagreed ("score" and "rank" were additive to one of them); now one property."""
    from baton.viz.profile import profile_result

    profile = profile_result(["region", column], [["a", values[0]], ["b", values[1]]], [])
    (measure,) = profile.measures
    assert measure.additive is additive
    offered = "Show percentage breakdown" in fitting_followups(QueryResult(["region", column], [["a", values[0]], ["b", values[1]]]))
    assert offered is additive
