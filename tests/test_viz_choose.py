"""The chart chooser on many result shapes, chart validation, and the specs it builds.

Every chosen spec is rendered for real (vl-convert) and parsed as SVG, so a spec Vega-Lite
cannot draw fails here, not in a user's notebook.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import xml.etree.ElementTree as ET
from decimal import Decimal

import numpy as np
import pandas as pd
import pytest

from baton.response import QueryResult
from baton.viz import MAX_CHART_ROWS, VIZ_TYPES, ChartChoice, choose_chart, render_svg, requested_type, validate_chart

SVG_NS = "{http://www.w3.org/2000/svg}"


def svg_texts(svg: str) -> list[str]:
    root = ET.fromstring(svg)
    return [t.text for t in root.iter(f"{SVG_NS}text") if t.text]


def walk_keys(obj):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield k
            yield from walk_keys(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from walk_keys(v)


MONTHS = [f"2024-{m:02d}" for m in range(1, 13)]

# (id, result, question, expected viz_type)
SHAPES = [
    ("month-strings+decimal->line",
     QueryResult(["month", "revenue"], [[m, Decimal(f"{100 + i * 7}.25")] for i, m in enumerate(MONTHS)],
                 ["VARCHAR", "DECIMAL(12,2)"]), None, "line"),
    ("dates+two-measures->multi-line",
     QueryResult(["day", "orders", "returns"], [[dt.date(2024, 3, d), d * 3, d % 4] for d in range(1, 15)]), None, "line"),
    ("datetime+category+measure->line-per-series",
     QueryResult(["ts", "region", "requests"],
                 [[dt.datetime(2024, 1, 1, h), r, h * (i + 1)] for h in range(6) for i, r in enumerate(["eu", "us"])]),
     None, "line"),
    ("iso-date-strings-with-nulls->line",
     QueryResult(["date", "visits"], [["2024-05-01", 10], ["2024-05-02", None], ["2024-05-03", 14], ["2024-05-04", 9]]),
     None, "line"),
    ("integer-year->line",
     QueryResult(["year", "sales"], [[2019 + i, 100 + i] for i in range(5)], ["INTEGER", "BIGINT"]), None, "line"),
    ("postgres-extract-year-numeric->line",
     QueryResult(["year", "orders"], [[Decimal(2021), 10], [Decimal(2022), 14], [Decimal(2023), 9]], ["NUMERIC", "BIGINT"]),
     None, "line"),
    ("pandas-timestamps-nat-and-nan->line",
     QueryResult(["week", "signups"], [[pd.Timestamp("2024-01-01"), np.int64(3)], [pd.NaT, np.int64(1)],
                                       [pd.Timestamp("2024-01-08"), np.float64("nan")],
                                       [pd.Timestamp("2024-01-15"), np.int64(5)]]), None, "line"),
    ("quarter-strings->line",
     QueryResult(["quarter", "sales"], [["2023-Q3", 5], ["2023-Q4", 8], ["2024-Q1", 6], ["2024-Q2", 9]]), None, "line"),
    ("category+measure->bar",
     QueryResult(["region", "sales"], [["North", 120], ["South", 80], ["East", 95], ["West", 60]]), None, "bar"),
    ("30-categories->horizontal-bar",
     QueryResult(["product", "units"], [[f"product {i}", i * 3 + 1] for i in range(30)]), None, "bar"),
    ("null-group->bar",
     QueryResult(["region", "sales"], [["North", 12], [None, 3], ["South", 7]]), None, "bar"),
    ("numeric-strings-from-decimal->bar",
     QueryResult(["category", "amount"], [["a", "12.50"], ["b", "7.25"], ["c", "3.00"]]), None, "bar"),
    ("zip-codes-as-text->bar",
     QueryResult(["zip", "customers"], [["02139", 5], ["10001", 9], ["94103", 4]], ["VARCHAR", "BIGINT"]), None, "bar"),
    ("integer-id+measure->bar",
     QueryResult(["customer_id", "total"], [[17, 300.0], [4, 120.5], [9, 99.0]]), None, "bar"),
    ("hour-of-day->bar",
     QueryResult(["hour", "orders"], [[h, (h * 7) % 11 + 1] for h in range(24)]), None, "bar"),
    ("month-names->bar",
     QueryResult(["month_name", "orders"], [["March", 3], ["January", 5], ["February", 4]]), None, "bar"),
    ("share-column->pie",
     QueryResult(["channel", "share_pct"], [["web", 0.5], ["store", 0.3], ["phone", 0.2]]), None, "pie"),
    ("share-question->pie",
     QueryResult(["segment", "revenue"], [["consumer", 500], ["corporate", 300], ["home office", 200]]),
     "What is each segment's share of revenue?", "pie"),
    ("one-number->big_number", QueryResult(["count"], [[42]], ["BIGINT"]), None, "big_number"),
    ("one-row-label+number->big_number",
     QueryResult(["region", "max_sales"], [["West", Decimal("1234567.5")]]), None, "big_number"),
    ("two-measures->scatter",
     QueryResult(["price", "quantity"], [[1.0 + i / 2, 40 - i * 3] for i in range(12)]), None, "scatter"),
    ("label+two-measures-many-rows->scatter",
     QueryResult(["country", "gdp", "population"], [[f"c{i}", 1000.0 * i, 5.0 * i + 1] for i in range(40)]),
     None, "scatter"),
    ("category+two-measures->grouped_bar",
     QueryResult(["region", "revenue", "cost"], [["North", 10, 7], ["South", 12, 9], ["East", 8, 8]]),
     None, "grouped_bar"),
    ("category+subcategory+measure->stacked_bar",
     QueryResult(["region", "product", "sales"],
                 [[r, p, (i + 1) * (j + 2)] for i, r in enumerate(["N", "S", "E"]) for j, p in enumerate(["x", "y"])]),
     None, "stacked_bar"),
    ("subcategories-with-negatives->grouped_bar",
     QueryResult(["region", "product", "profit"], [["N", "x", 5], ["N", "y", -3], ["S", "x", 2], ["S", "y", 4]]),
     None, "grouped_bar"),
    ("no-rows->table", QueryResult(["region", "sales"], []), None, "table"),
    ("text-only->table",
     QueryResult(["name", "email"], [["ann", "a@x.org"], ["bob", "b@x.org"]]), None, "table"),
    ("one-row-many-measures->table",
     QueryResult(["orders", "revenue", "customers"], [[10, 99.5, 4]]), None, "table"),
    ("200-categories->table",
     QueryResult(["sku", "units"], [[f"s{i}", i] for i in range(200)]), None, "table"),
]


def shape(name: str) -> QueryResult:
    return next(s[1] for s in SHAPES if s[0] == name)


@pytest.mark.parametrize("result,question,expected", [s[1:] for s in SHAPES], ids=[s[0] for s in SHAPES])
def test_chooser_picks_the_expected_chart_and_the_spec_renders(result, question, expected):
    choice = choose_chart(result, question=question)
    assert isinstance(choice, ChartChoice)
    assert choice.viz_type == expected, choice.reason
    assert choice.reason
    if expected == "table":
        assert choice.viz_config == {}
        return
    spec = choice.viz_config
    json.dumps(spec)  # plain JSON: no Decimal/date left in the inlined data
    assert spec["$schema"].endswith("vega-lite/v5.json")
    assert "url" not in set(walk_keys(spec))
    assert spec["data"]["values"], "data is inlined"
    assert spec["usermeta"]["baton"]["viz_type"] == expected
    root = ET.fromstring(render_svg(spec))
    assert root.tag == f"{SVG_NS}svg"


def test_there_are_at_least_twelve_shapes_covering_every_chart_type():
    assert len(SHAPES) >= 12
    assert {s[3] for s in SHAPES} == set(VIZ_TYPES) - {"text"}


def test_month_strings_become_month_axis_labels_and_decimals_numbers():
    result = shape("month-strings+decimal->line")
    spec = choose_chart(result).viz_config
    assert spec["encoding"]["x"]["type"] == "temporal"
    assert spec["data"]["values"][0] == {"month": "2024-01-01", "revenue": 100.25}
    texts = svg_texts(render_svg(spec))
    assert "Jan 2024" in texts and "Dec 2024" in texts


def test_multi_measure_line_folds_measures_into_series():
    spec = choose_chart(shape("dates+two-measures->multi-line")).viz_config
    assert spec["transform"][0]["fold"] == ["orders", "returns"]
    assert spec["encoding"]["color"]["field"] == "_series"
    texts = svg_texts(render_svg(spec))
    assert "orders" in texts and "returns" in texts  # the legend


def test_null_measures_stay_null_in_chart_data_and_a_null_group_is_labelled():
    spec = choose_chart(shape("iso-date-strings-with-nulls->line")).viz_config
    assert [v["visits"] for v in spec["data"]["values"]] == [10, None, 14, 9]
    spec = choose_chart(shape("pandas-timestamps-nat-and-nan->line")).viz_config
    assert [(v["week"], v["signups"]) for v in spec["data"]["values"]] == [
        ("2024-01-01", 3), (None, 1), ("2024-01-08", None), ("2024-01-15", 5)]
    spec = choose_chart(shape("null-group->bar")).viz_config
    assert [v["region"] for v in spec["data"]["values"]] == ["North", "(null)", "South"]


def test_bar_is_sorted_by_measure_and_long_lists_turn_horizontal():
    small = choose_chart(shape("category+measure->bar")).viz_config
    assert small["encoding"]["x"]["sort"] == "-y"
    texts = svg_texts(render_svg(small))
    assert texts.index("North") < texts.index("East") < texts.index("South") < texts.index("West")
    many = choose_chart(shape("30-categories->horizontal-bar")).viz_config
    assert many["encoding"]["y"]["field"] == "product" and many["encoding"]["x"]["type"] == "quantitative"


def test_month_names_keep_calendar_order():
    spec = choose_chart(shape("month-names->bar")).viz_config
    assert spec["encoding"]["x"]["sort"] == ["January", "February", "March"]


def test_pie_slices_carry_their_share_without_vega_expressions():
    spec = choose_chart(shape("share-question->pie"), question="each segment's share of revenue").viz_config
    shares = [v["_share"] for v in spec["data"]["values"]]
    assert shares == pytest.approx([0.5, 0.3, 0.2])
    assert "calculate" not in json.dumps(spec)


def test_big_number_shows_the_formatted_value_and_its_label():
    spec = choose_chart(shape("one-row-label+number->big_number")).viz_config
    texts = svg_texts(render_svg(spec))
    assert "1,234,567.5" in texts
    assert any("region: West" in t for t in texts)


def test_field_names_with_dots_and_brackets_are_escaped_not_nested():
    result = QueryResult(["t.name", "sum(x[0])"], [["alpha", 3], ["beta", 5]])
    spec = choose_chart(result).viz_config
    assert spec["encoding"]["x"]["field"] == "t\\.name"
    assert spec["data"]["values"][0] == {"t.name": "alpha", "sum(x[0])": 3}
    texts = svg_texts(render_svg(spec))
    assert "alpha" in texts and "beta" in texts


def test_duplicate_column_names_keep_both_columns():
    result = QueryResult(["region", "total", "total"], [["N", 1, 2], ["S", 3, 4]])
    choice = choose_chart(result)
    assert choice.viz_type == "grouped_bar"
    assert choice.viz_config["data"]["values"][0] == {"region": "N", "total": 1, "total_2": 2}


def test_long_results_are_capped_and_say_so():
    rows = [[dt.date(2000, 1, 1) + dt.timedelta(days=i), i % 97] for i in range(MAX_CHART_ROWS + 1000)]
    spec = choose_chart(QueryResult(["day", "n"], rows)).viz_config
    assert len(spec["data"]["values"]) == MAX_CHART_ROWS
    assert spec["title"]["subtitle"] == f"first {MAX_CHART_ROWS:,} of {MAX_CHART_ROWS + 1000:,} rows"
    meta = spec["usermeta"]["baton"]
    assert (meta["rows_shown"], meta["rows_total"], meta["truncated"]) == (MAX_CHART_ROWS, MAX_CHART_ROWS + 1000, True)


def test_question_is_the_title_and_defaults_describe_the_chart():
    assert choose_chart(shape("category+measure->bar"), question="Sales by region?").viz_config["title"]["text"] == "Sales by region?"
    assert choose_chart(shape("category+measure->bar")).viz_config["title"]["text"] == "sales by region"
    assert choose_chart(shape("month-strings+decimal->line")).viz_config["title"]["text"] == "revenue over month"


# --- validation ------------------------------------------------------------------------------

THIRTY = QueryResult(["state", "sales"], [[f"state {i:02d}", 100 + i] for i in range(30)])
FIVE = QueryResult(["state", "sales"], [[f"s{i}", 10 + i] for i in range(5)])
TEXT_ONLY = next(s[1] for s in SHAPES if s[0] == "text-only->table")


def test_a_thirty_category_pie_request_becomes_a_bar():
    assert validate_chart("pie", THIRTY) == "bar"
    choice = choose_chart(THIRTY, question="Show this as a pie chart")
    assert choice.viz_type == "bar"
    assert "pie" in choice.reason and "30 slices" in choice.reason
    assert choice.viz_config["mark"]["type"] == "bar"


def test_a_pie_that_fits_is_kept():
    assert validate_chart("pie", FIVE) == "pie"
    choice = choose_chart(FIVE, question="Show this as a pie chart")
    assert (choice.viz_type, choice.reason) == ("pie", "pie as requested")


@pytest.mark.parametrize(
    "viz_type,result,expected",
    [
        ("3d_donut", FIVE, "bar"),
        ("", FIVE, "bar"),
        ("bogus", TEXT_ONLY, "table"),
        ("pie", TEXT_ONLY, "table"),
        ("pie", QueryResult(["k", "v"], [["a", 5], ["b", -2], ["c", 1]]), "bar"),
        ("pie", QueryResult(["k", "v"], [["a", 5], ["a", 2], ["c", 1]]), "table"),
        ("line", FIVE, "bar"),
        ("scatter", FIVE, "bar"),
        ("big_number", FIVE, "bar"),
        ("stacked_bar", FIVE, "bar"),
        ("line", shape("month-strings+decimal->line"), "line"),
        ("bar", shape("month-strings+decimal->line"), "bar"),
        ("scatter", shape("two-measures->scatter"), "scatter"),
        ("table", THIRTY, "table"),
        ("text", THIRTY, "text"),
    ],
)
def test_validate_chart_keeps_fitting_types_and_corrects_the_rest(viz_type, result, expected):
    assert validate_chart(viz_type, result) == expected


def test_requested_type_overrides_the_natural_choice_only_when_it_fits():
    ts = shape("month-strings+decimal->line")
    assert choose_chart(ts, question="show it as a bar chart").viz_type == "bar"
    assert choose_chart(ts, requested="scatter").viz_type == "bar"  # no two measures: corrected
    assert choose_chart(ts, requested="table").viz_config == {}


@pytest.mark.parametrize(
    "question,expected",
    [("Show this as a pie chart", "pie"), ("plot a line chart of sales", "line"), ("as a table please", "table"),
     ("scatter price against rating", "scatter"), ("stacked by product", "stacked_bar"), ("how many orders?", None),
     (None, None)],
)
def test_requested_type_from_question(question, expected):
    assert requested_type(question) == expected


def test_all_chart_types_are_known():
    assert set(VIZ_TYPES) >= {"line", "bar", "pie", "scatter", "big_number", "table"}
    assert all(re.fullmatch(r"[a-z_]+", t) for t in VIZ_TYPES)
