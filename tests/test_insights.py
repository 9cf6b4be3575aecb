"""Deterministic insights on constructed data: largest change, top share, outliers, ids."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from baton.response import AIMessage, QueryResult
from baton.viz.insights import find_insights, insight_id

MONTHS = [f"2024-{m:02d}" for m in range(1, 9)]
REVENUE = [100, 104, 101, 107, 160, 158, 161, 165]  # +53 from May is the jump


def of_kind(insights, kind):
    return [i for i in insights if i["kind"] == kind]


def test_largest_change_between_consecutive_periods_with_its_two_rows():
    rows = [[m, Decimal(v)] for m, v in zip(MONTHS, REVENUE)]
    result = QueryResult(["month", "revenue"], list(reversed(rows)))  # order does not matter
    [change] = of_kind(find_insights(result), "largest_change")
    assert change["evidence_rows"] == [["2024-04", Decimal(107)], ["2024-05", Decimal(160)]]
    assert change["columns"] == ["month", "revenue"]
    values = change["values"]
    assert (values["from_period"], values["to_period"], values["change"]) == ("2024-04", "2024-05", 53.0)
    assert values["pct_change"] == pytest.approx(53 / 107)
    assert change["text"] == ("revenue rose by 53 (+49.5%) from April 2024 to May 2024, "
                              "the largest change between consecutive months.")
    assert change["tooltip"] == "107 in April 2024, 160 in May 2024; 7 changes between consecutive months compared"
    assert change["confidence_hint"] >= 0.9  # 53 is far more than twice the next change (7)


def test_largest_change_finds_the_series_that_moved_most_and_falls():
    rows = []
    for d in range(1, 6):
        day = dt.date(2024, 2, d)
        rows.append([day, "eu", 50 + d])
        rows.append([day, "us", 80 if d < 4 else 20])  # us falls by 60 from Feb 3 to Feb 4
    [change] = of_kind(find_insights(QueryResult(["day", "region", "orders"], rows)), "largest_change")
    assert change["values"]["series"] == "us"
    assert change["values"]["change"] == -60
    assert change["evidence_rows"] == [[dt.date(2024, 2, 3), "us", 80], [dt.date(2024, 2, 4), "us", 20]]
    assert "fell by 60" in change["text"] and "for us" in change["text"]


@pytest.mark.parametrize(
    "rows",
    [
        [["2024-01", 1], ["2024-02", 5]],  # two periods: one change is no "largest"
        [["2024-01", 1], ["2024-01", 9], ["2024-02", 5], ["2024-03", 2]],  # repeated period: not a series
        [["2024-01", 3], ["2024-02", 3], ["2024-03", 3]],  # no change at all
    ],
)
def test_no_change_insight_without_a_clean_series(rows):
    assert of_kind(find_insights(QueryResult(["month", "n"], rows)), "largest_change") == []


def test_top_contributor_share_with_evidence_rows():
    rows = [["North", 500], ["South", 200], ["East", 150], ["West", 150]]
    [top] = of_kind(find_insights(QueryResult(["region", "revenue"], rows)), "top_share")
    assert top["evidence_rows"] == [["North", 500]]
    assert top["values"]["share"] == pytest.approx(0.5)
    assert top["values"]["runner_up_share"] == pytest.approx(0.2)
    assert top["text"] == "North accounts for 50.0% of total revenue (500 of 1,000, across 4 region values)."
    assert top["confidence_hint"] == 0.9


def test_top_share_sums_repeated_categories():
    rows = [["a", 10], ["b", 25], ["a", 20]]
    [top] = of_kind(find_insights(QueryResult(["k", "amount"], rows)), "top_share")
    assert top["values"]["category"] == "a" and top["values"]["value"] == 30
    assert top["evidence_rows"] == [["a", 10], ["a", 20]]


@pytest.mark.parametrize(
    "columns,rows",
    [
        (["region", "avg_price"], [["a", 10], ["b", 20], ["c", 30]]),        # averages do not add up
        (["region", "conversion_rate"], [["a", 0.1], ["b", 0.2], ["c", 0.3]]),
        (["region", "profit"], [["a", 10], ["b", -20], ["c", 30]]),          # negatives: no share of a whole
        (["region", "sales"], [["a", 0], ["b", 0]]),
    ],
)
def test_no_share_insight_where_a_share_means_nothing(columns, rows):
    assert of_kind(find_insights(QueryResult(columns, rows)), "top_share") == []


def test_high_and_low_outliers_by_median_and_mad():
    values = [100, 98, 103, 101, 99, 102, 97, 100, 104, 940, 3]
    rows = [[f"store {i}", v] for i, v in enumerate(values)]
    outliers = of_kind(find_insights(QueryResult(["store", "sales"], rows)), "outlier")
    assert [o["evidence_rows"] for o in outliers] == [[["store 9", 940]], [["store 10", 3]]]
    high, low = outliers
    assert high["values"]["method"] == "mad" and high["values"]["robust_z"] > 3.5
    assert low["values"]["robust_z"] < -3.5
    assert high["text"] == "store 9 is far above the other stores in sales (940, where 100 is typical)."
    assert low["text"].startswith("store 10 is far below the other stores")
    assert "z-score" not in high["text"] and high["tooltip"].startswith("robust z-score ")


def test_outliers_when_most_values_are_equal_use_the_mean_absolute_deviation():
    rows = [[f"d{i}", 0] for i in range(12)] + [["d12", 50]]
    [outlier] = of_kind(find_insights(QueryResult(["device", "errors"], rows)), "outlier")
    assert outlier["values"]["method"] == "meanad"
    assert outlier["evidence_rows"] == [["d12", 50]]


@pytest.mark.parametrize(
    "values",
    [list(range(1, 21)), [5, 5, 5, 5, 5, 5, 5, 5, 5], [1, 2, 3, 100]],  # even spread, no spread, too few values
)
def test_no_outliers_without_a_clear_one(values):
    rows = [[f"r{i}", v] for i, v in enumerate(values)]
    assert of_kind(find_insights(QueryResult(["k", "v"], rows)), "outlier") == []


def test_ids_are_stable_across_refreshed_numbers_and_differ_by_identity():
    before = find_insights(QueryResult(["region", "revenue"], [["North", 500], ["South", 200], ["East", 150]]))
    after = find_insights(QueryResult(["region", "revenue"], [["North", 610], ["South", 220], ["East", 140]]))
    other = find_insights(QueryResult(["region", "revenue"], [["North", 100], ["South", 620], ["East", 140]]))
    share = lambda found: of_kind(found, "top_share")[0]["id"]
    assert share(before) == share(after)
    assert share(before) != share(other)
    assert insight_id("outlier", "sales", "store=1") == insight_id("outlier", "sales", "store=1")
    assert insight_id("outlier", "sales", "store=1").startswith("ins_")


def test_truncated_results_lower_confidence_and_say_so():
    rows = [["North", 500], ["South", 200], ["East", 150]]
    full = of_kind(find_insights(QueryResult(["region", "revenue"], rows)), "top_share")[0]
    cut = of_kind(find_insights(QueryResult(["region", "revenue"], rows, truncated=True)), "top_share")[0]
    assert cut["confidence_hint"] < full["confidence_hint"]
    assert "of the rows returned" in cut["text"]


def test_nothing_to_find_in_empty_single_row_or_text_only_results():
    assert find_insights(QueryResult(["a", "b"], [])) == []
    assert find_insights(QueryResult(["n"], [[5]])) == []
    assert find_insights(QueryResult(["name", "email"], [["a", "x"], ["b", "y"]])) == []


def test_insights_survive_the_answer_json_round_trip():
    rows = [[dt.date(2024, 1, d), Decimal(v)] for d, v in zip(range(1, 9), REVENUE)]
    insights = find_insights(QueryResult(["day", "revenue"], rows))
    assert insights
    message = AIMessage(content="x", insights=insights)
    assert AIMessage.from_json(message.to_json()).insights == insights


def test_consecutive_means_adjacent_periods_only():
    # the top 5 months of a year: August and November are not consecutive
    rows = [["2025-12", 980.0], ["2025-11", 900.0], ["2025-08", 400.0], ["2025-03", 390.0], ["2025-02", 300.0]]
    [change] = of_kind(find_insights(QueryResult(["month", "revenue"], rows)), "largest_change")
    assert (change["values"]["from_period"], change["values"]["to_period"]) == ("2025-02", "2025-03")
    assert "August" not in change["text"] and "consecutive months" in change["text"]
    gaps_only = [["2025-01", 1.0], ["2025-03", 50.0], ["2025-05", 2.0], ["2025-07", 80.0]]
    assert of_kind(find_insights(QueryResult(["month", "revenue"], gaps_only)), "largest_change") == []
    years = [[2021, 5], [2022, 90], [2024, 60], [2025, 61]]  # 2022 -> 2024 skips a year: -30 is not compared
    [change] = of_kind(find_insights(QueryResult(["year", "n"], years)), "largest_change")
    assert (change["values"]["from_period"], change["values"]["to_period"], change["values"]["change"]) == ("2021", "2022", 85)


def test_a_share_is_taken_of_the_full_result_total_when_only_some_rows_are_shown():
    top_two = QueryResult(["product", "revenue"], [["Ink Bottle 104", Decimal("3907019.91")], ["Label Printer LW", Decimal("3787664.01")]])
    [share] = of_kind(find_insights(top_two, totals={"revenue": Decimal("15072270.02")}, total_rows=4), "top_share")
    assert share["values"]["share"] == pytest.approx(3907019.91 / 15072270.02)
    assert share["text"] == ("Ink Bottle 104 accounts for 25.9% of total revenue "
                             "(3,907,019.91 of 15,072,270.02, across all 4 product values).")
    assert share["values"]["total_over"] == "full result"
    alone = of_kind(find_insights(top_two), "top_share")[0]  # without the total: the rows shown, and it says 50.8 %
    assert alone["values"]["share"] == pytest.approx(3907019.91 / (3907019.91 + 3787664.01))
    [one] = of_kind(find_insights(QueryResult(["product", "revenue"], [["Ink Bottle 104", 10.0]]),
                                  totals={"revenue": 40.0}, total_rows=4), "top_share")
    assert one["values"]["share"] == 0.25
