"""Template follow-ups (seed 002): the pool rules, determinism under a seed, no global state."""

from __future__ import annotations

import random

import pytest

from baton.suggest import AGGREGATE_FOLLOWUPS, FOLLOWUP_TEMPLATES, generate_followups, has_aggregate_keywords

PLAIN = "SELECT name, city FROM customers"
AGGREGATE = "SELECT region, SUM(amount) AS revenue FROM orders GROUP BY region"


def everything(query, columns, row_count):
    """The whole shuffled pool (k large enough to see every candidate)."""
    return generate_followups(query, columns, row_count, seed=0, k=100)


def test_templates_are_the_seeds_five():
    assert FOLLOWUP_TEMPLATES == [
        "Show this as a pie chart",
        "Break this down by month",
        "Compare with the previous period",
        "Show only the top 5 results",
        "What is the trend over time?",
    ]


def test_plain_single_row_answer_draws_only_from_the_templates():
    pool = everything(PLAIN, ["name"], 1)
    assert sorted(pool) == sorted(FOLLOWUP_TEMPLATES)


def test_aggregates_add_percentage_and_average_suggestions():
    pool = everything(AGGREGATE, ["region"], 1)
    assert sorted(pool) == sorted(FOLLOWUP_TEMPLATES + AGGREGATE_FOLLOWUPS)


def test_several_rows_and_columns_add_a_sort_on_the_last_column():
    pool = everything(AGGREGATE, ["region", "revenue"], 4)
    assert "Sort by revenue descending" in pool
    assert len(pool) == len(FOLLOWUP_TEMPLATES) + len(AGGREGATE_FOLLOWUPS) + 1
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
