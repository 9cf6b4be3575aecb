"""MetricFlow conversion metrics (issue 27): each buy credited to the user's latest visit within the
window, on real engines against MetricFlow's own cases; what is not computed is refused by name."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from baton.semantic.compiler import compile_query
from baton.semantic.conversion import compile_conversion
from baton.semantic.metricflow import load_metricflow
from baton.semantic.mf_query import query_from_params
from baton.semantic.query import SemanticQuery, SemanticQueryError
from itest_cases import MODELS, all_cases, duckdb_copies
from itest_duckdb import duckdb_outcomes


@pytest.fixture(scope="module")
def database(tmp_path_factory):
    return duckdb_copies(tmp_path_factory.mktemp("conversion"))


def test_metricflow_conversion_cases_pass():
    cases = [c for c in all_cases() if c["file"] == "itest_conversion_metric.yaml"]
    assert len(cases) == 6

    results = duckdb_outcomes(cases)
    assert all(kind == "passed" for _, kind, _ in results), results


def test_the_conversion_count_fills_nulls_and_reads_no_visit_after_the_buy(database):
    url, _ = database
    model = load_metricflow(MODELS["SIMPLE_MODEL"])
    compiled = compile_conversion(model, SemanticQuery(("visit_buy_conversions",)), "duckdb")
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        (ours,) = conn.execute(sa.text(compiled.sql)).one()
        # a buy counts when the same user visited in the 7 days up to it (the latest visit is credited, once)
        (theirs,) = conn.execute(sa.text(
            "SELECT COUNT(*) FROM fct_buys b WHERE EXISTS (SELECT 1 FROM fct_visits v WHERE v.user_id = b.user_id "
            "AND v.ds <= b.ds AND v.ds > b.ds - INTERVAL 7 DAY)")).one()
    engine.dispose()
    assert ours == theirs


@pytest.mark.parametrize("params", [
    {"metrics": ["visit_buy_conversion_rate", "visits"]},  # beside another metric
    {"metrics": ["visit_buy_conversion_rate"], "where": ["{{ Dimension('visit__referrer_id') }} = 'fb_ad_1'"]},
    # compared by month (buys_month's grain) and grouped by a visit's dimension: MetricFlow's pick among a month's visits
    {"metrics": ["visit_buy_conversion_rate_with_monthly_conversion"], "group_by": ["visit__referrer_id"]},
    {"metrics": ["visit_buy_conversion_rate_with_filter"]},  # a metric filter
    {"metrics": ["visit_buy_conversion_rate_7days_fill_nulls_with_0"]},  # join_to_timespine
])
def test_what_is_not_computed_is_refused_by_name(params):
    model = load_metricflow(MODELS["SIMPLE_MODEL"])
    with pytest.raises(SemanticQueryError, match="conversion"):
        compile_conversion(model, query_from_params(model, params), "duckdb")


def test_a_window_of_a_month_is_computed_on_duckdb_and_postgres_only():
    model = load_metricflow(MODELS["SIMPLE_MODEL"])
    query = query_from_params(model, {"metrics": ["visit_buy_conversion_rate_with_monthly_conversion"]})
    for dialect in ("duckdb", "postgres"):
        assert "INTERVAL" in compile_conversion(model, query, dialect).sql.upper()
    with pytest.raises(SemanticQueryError, match="conversion window or grain of month on sqlite"):
        compile_conversion(model, query, "sqlite")


def test_the_general_compiler_never_reads_a_conversion_metric_as_its_base_measure():
    model = load_metricflow(MODELS["SIMPLE_MODEL"])
    with pytest.raises(SemanticQueryError, match="conversion"):
        compile_query(model, SemanticQuery(("visit_buy_conversion_rate",)), "duckdb")
