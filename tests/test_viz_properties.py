"""Properties over arbitrary small results: the chooser, validator, renderer and insight
finder never crash, the chooser's own choice passes validation, and specs are plain JSON."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from baton.response import QueryResult
from baton.viz import VIZ_TYPES, choose_chart, render_svg, validate_chart
from baton.viz.insights import find_insights

NAMES = st.sampled_from(["region", "month", "year", "sales", "share_pct", "customer_id", "hour", "a.b", "x[0]", "", "v"])
CELLS = {
    "int": st.integers(-10**6, 10**6),
    "float": st.floats(allow_nan=True, allow_infinity=True, width=32),
    "decimal": st.decimals(min_value=-1000, max_value=1000, places=2, allow_nan=False),
    "numeric-text": st.decimals(min_value=0, max_value=1000, places=2, allow_nan=False).map(str),
    "text": st.text(max_size=12),
    "category": st.sampled_from(["north", "south", "east", "west"]),
    "date": st.dates(dt.date(1990, 1, 1), dt.date(2030, 12, 31)),
    "datetime": st.datetimes(dt.datetime(1990, 1, 1), dt.datetime(2030, 12, 31)),
    "month-text": st.builds(lambda y, m: f"{y}-{m:02d}", st.integers(1990, 2030), st.integers(1, 12)),
    "bool": st.booleans(),
}


@st.composite
def results(draw):
    kinds = draw(st.lists(st.sampled_from(sorted(CELLS)), min_size=1, max_size=4))
    columns = [draw(NAMES) for _ in kinds]
    n = draw(st.integers(0, 25))
    rows = [[draw(st.none() | CELLS[k]) if draw(st.integers(0, 9)) == 0 else draw(CELLS[k]) for k in kinds]
            for _ in range(n)]
    return QueryResult(columns, rows)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(results(), st.sampled_from([None, "show this as a pie chart", "share by region", "trend over time"]))
def test_choice_is_valid_json_renders_and_passes_its_own_validation(result, question):
    choice = choose_chart(result, question=question)
    assert choice.viz_type in VIZ_TYPES
    assert validate_chart(choice.viz_type, result) == choice.viz_type
    json.dumps(choice.viz_config, allow_nan=False)
    if choice.viz_config:
        assert render_svg(choice.viz_config).startswith("<svg")
    for insight in find_insights(result):
        assert insight["evidence_rows"] and insight["id"].startswith("ins_")


@settings(max_examples=60, deadline=None)
@given(results(), st.text(max_size=12))
def test_validate_never_crashes_and_returns_a_known_type(result, viz_type):
    assert validate_chart(viz_type, result) in VIZ_TYPES


def test_decimal_and_nan_values_never_reach_the_spec_as_non_json():
    result = QueryResult(["k", "v"], [["a", Decimal("1.5")], ["b", float("nan")], ["c", float("inf")]])
    spec = choose_chart(result).viz_config
    json.dumps(spec, allow_nan=False)
    assert [v["v"] for v in spec["data"]["values"]] == [1.5, None, None]
