"""Numbers that overflow a float or JSON's safe range: a chart and insights still come out,
with no inf/NaN in them (JSON encoders with allow_nan=False refuse those)."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from baton.response import QueryResult
from baton.viz import choose_chart, render_svg
from baton.viz.insights import find_insights
from baton.viz.profile import to_number


@pytest.mark.parametrize(
    "value", ["1e999", "-1e999", Decimal("1e999"), Decimal("-2E+400"), 10**400, -(10**400)], ids=["str", "-str", "decimal", "-decimal", "int", "-int"]
)
def test_values_beyond_float_range_are_not_numbers(value):
    assert to_number(value) is None


def test_integers_beyond_the_safe_range_become_floats():
    assert to_number(10**30) == 1e30 and isinstance(to_number(10**30), float)
    assert to_number(2**53) == 2**53 and isinstance(to_number(2**53), int)


@pytest.mark.parametrize("huge", [10**30, 10**400, "1e999", Decimal("1e999")], ids=["int30", "int400", "str", "decimal"])
def test_a_chart_of_huge_values_renders(huge):
    result = QueryResult(columns=["region", "revenue"], rows=[["north", huge], ["south", 5], ["east", 7]])
    choice = choose_chart(result)
    json.dumps(choice.viz_config, allow_nan=False)  # no inf/NaN in the spec
    if choice.viz_config:
        assert render_svg(choice.viz_config).startswith("<svg")


def test_huge_category_integers_render():
    result = QueryResult(columns=["account_id", "balance"], rows=[[10**30, 1], [2, 5]])
    choice = choose_chart(result)
    assert render_svg(choice.viz_config).startswith("<svg")


@pytest.mark.parametrize("huge", ["1e999", Decimal("1e999"), 10**400], ids=["str", "decimal", "int400"])
def test_insights_hold_no_infinite_values(huge):
    rows = [[f"k{i}", huge if i == 0 else i + 1] for i in range(10)]
    insights = find_insights(QueryResult(columns=["k", "v"], rows=rows))
    json.dumps([i["values"] for i in insights], allow_nan=False)
    assert all("inf" not in i["text"] and "nan" not in i["text"] for i in insights)
