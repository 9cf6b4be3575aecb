"""MetricFlow metric definitions computed for issue 27 (cluster M): percentile and median measures,
filters on ratio and derived metrics and on their inputs, derived expressions with NULLIF and the
like, join_to_timespine beside other metrics — against MetricFlow's own cases (their check queries give the rows); what an engine lacks is
refused by name."""

from __future__ import annotations

import asyncio

import pytest
import sqlalchemy as sa

from baton.semantic.compiler import compile_query
from baton.semantic.errors import SemanticModelError
from baton.semantic.layer import SemanticLayer
from baton.semantic.metricflow import load_metricflow
from baton.semantic.mf_query import query_from_params
from baton.semantic.query import SemanticQueryError
from baton.specialists.sql.connection import SQLConnection
from itest_cases import MODELS, ROW_CAP, all_cases, ask, sqlite_copy
from itest_duckdb import duckdb_outcomes

COMPUTED = {
    # percentile and median measures
    "continuous_percentile_agg", "discrete_percentile_agg", "approximate_continuous_percentile_agg", "median_agg",
    # filters on ratio and derived metrics' inputs, and on a ratio metric itself
    "ratio_with_numerator_constraint_on_local_dimension", "ratio_with_numerator_constraint_on_join_dimension",
    "expr_with_constraint_on_join_dimension", "ratio_with_constraint_and_repeated_measure",
    "expr_with_single_constrained_and_aliased_measure", "derived_metric_ratio",
    # join_to_timespine beside other metrics and group-bys, under a derived metric, without metric time
    "fill_nulls_with_0_multi_metric_query", "derived_fill_nulls_for_one_input_metric",
    "fill_nulls_with_0_multi_metric_query_with_nesting", "simple_join_to_time_spine_with_queried_filter",
    "simple_fill_nulls_with_0_with_categorical_dimension", "join_to_time_spine_with_time_constraint",
    # an all-time cumulative metric without metric time; offset_window over a cumulative metric; months offsets
    "cumulative_metric_without_ds", "cumulative_metric_in_where_filter", "derived_metric_offset_with_cumulative_metric",
    "cumulative_time_offset_metric_with_time_constraint", "derived_metric_with_offset_window_and_offset_to_grain",
    # semi-additive measures filtered: the day among the rows the filters keep
    "semi_additive_measure_query_with_where_filter", "semi_additive_measure_query_with_join_linkable_specs",
    "ratio_with_constraints_on_semi_additive_measures",
    # a Metric(...) filter in a metric's own filter (simple and ratio)
    "metric_with_metric_in_where_filter", "test_filter_defined_on_ratio_metric",
}
SQLITE = ("semi_additive_measure_query_with_where_filter", "semi_additive_measure_query_with_join_linkable_specs")


@pytest.fixture(scope="module")
def model():
    return load_metricflow(MODELS["SIMPLE_MODEL"])


def test_metricflow_cases_pass():
    cases = [c for c in all_cases() if c["name"] in COMPUTED]
    assert len(cases) == len(COMPUTED)
    assert {c["model"] for c in cases} == {"SIMPLE_MODEL"}

    results = duckdb_outcomes(cases)
    assert [r for r in results if r[1] != "passed"] == []


@pytest.mark.parametrize(("metric", "dialect", "refusal"), [
    ("booking_value_p99", "sqlite", "the percentile aggregation on sqlite"),
    ("median_booking_value", "mysql", "the percentile aggregation on mysql"),  # MariaDB: percentiles as window functions only
    ("approximate_continuous_booking_value_p99", "postgres", "an approximate percentile on postgres"),
])
def test_an_engine_without_the_percentile_refuses_it_by_name(model, metric, dialect, refusal):
    with pytest.raises(SemanticQueryError, match=refusal):
        compile_query(model, query_from_params(model, {"metrics": [metric], "group_by": ["metric_time__day"]}), dialect)


def test_an_approximate_discrete_percentile_is_refused_when_the_project_loads(model):
    refusal = model.refusal("approximate_discrete_booking_value_p99", "metric")
    assert refusal is not None and "approximate discrete percentile" in refusal.construct


def test_percentiles_render_as_ordered_set_aggregates(model):
    query = query_from_params(model, {"metrics": ["discrete_booking_value_p99", "median_booking_value"]})
    assert "PERCENTILE_DISC(0.99) WITHIN GROUP (ORDER BY" in compile_query(model, query, "postgres").sql
    assert "QUANTILE_CONT(" in compile_query(model, query, "duckdb").sql


def test_a_filtered_input_is_computed_but_never_offered(model):
    names = {m.name for m in model.metrics}
    assert "instant_booking_value_ratio" in names
    copies = [m.name for m in model.internal_metrics]
    assert copies and not names & set(copies)
    ratio = model.metric("instant_booking_value_ratio")
    numerator = model.metric(ratio.numerator or "")
    assert numerator.name in copies and model.measure(numerator.measure or "").filter  # the is_instant rows only
    assert model.metric(ratio.denominator or "").name == "booking_value"  # the unfiltered one


def test_a_derived_expression_is_still_checked(model):
    from baton.semantic.expressions import parse_metric_expression

    parse_metric_expression("bookings / NULLIF(views, 0) + COALESCE(views, 0)", "derived metric")
    for text in ("pg_sleep(1) + bookings", "(SELECT 1) + bookings", "bookings || 'x'"):
        with pytest.raises(SemanticModelError):
            parse_metric_expression(text, "derived metric")


@pytest.mark.parametrize("params", [
    {"metrics": ["bookings_fill_nulls_with_0", "views"], "group_by": ["metric_time__day", "listing"]},
    {"metrics": ["bookings_fill_nulls_with_0", "bookings"], "group_by": ["metric_time__day"]},  # one measure both ways
])
def test_join_to_timespine_beyond_what_is_built_is_refused_by_name(model, params):
    with pytest.raises(SemanticQueryError, match="join_to_timespine .* which Baton does not compute yet"):
        compile_query(model, query_from_params(model, params), "duckdb")


@pytest.mark.parametrize(("params", "dialect"), [
    ({"metrics": ["trailing_2_months_revenue"]}, "duckdb"),  # a window without metric time: not a plain aggregate
    ({"metrics": ["bookings_month_start_compared_to_1_month_prior"], "group_by": ["metric_time__day"]}, "sqlite"),
    # by week MetricFlow would compare week starts a month apart (spine_keys.offset_mode)
    ({"metrics": ["bookings_1_month_ago"], "group_by": ["metric_time__week"]}, "duckdb"),
])
def test_cumulative_and_month_offsets_beyond_what_is_built_are_refused_by_name(model, params, dialect):
    with pytest.raises(SemanticQueryError, match="which Baton does not compute yet"):
        compile_query(model, query_from_params(model, params), dialect)


def test_a_month_offset_reads_the_day_months_earlier_month_ends_clamped(model):
    sql = compile_query(model, query_from_params(model, {"metrics": ["bookings_month_start_compared_to_1_month_prior"],
                                                         "group_by": ["metric_time__day"]}), "postgres").sql
    assert "INTERVAL '1 MONTH'" in sql.upper() or "INTERVAL '1' MONTH" in sql.upper()


def test_a_filtered_semi_additive_measure_is_portable_to_sqlite(tmp_path):
    """The day among the filtered rows is a row-value IN over the same rows: SQLite answers as MetricFlow."""
    url = sqlite_copy(tmp_path)
    engine = sa.create_engine(url)
    cases = [c for c in all_cases() if c["name"] in SQLITE]

    async def run() -> list[tuple[str, str, str]]:
        connection = SQLConnection(url, id="semi_sqlite", allow_privileged_role=True, row_cap=ROW_CAP)
        layer = SemanticLayer(load_metricflow(MODELS["SIMPLE_MODEL"]), connection)
        try:
            return [(case["name"], *await ask(layer, case, "duckdb", engine)) for case in cases]  # plain SQL checks
        finally:
            await connection.aclose()

    results = asyncio.run(run())
    engine.dispose()
    assert len(results) == 2 and [r for r in results if r[1] != "passed"] == []


def test_a_metric_filter_in_a_metric_definition_is_the_measure_copy_s_own(model):
    measure = model.measure(model.metric("active_listings").measure or "")
    assert measure.metric_filters == (("bookings", "listing", ">", "2"),) and measure.filter is None
