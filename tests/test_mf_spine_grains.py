"""Metric time at several grains, or at a custom one, over cumulative metrics and offset inputs
(issue 27, ``semantic/spine_keys.py``), offset windows of custom periods (``custom_offsets.py``), and a time dimension's custom grain in a query with no
metric (``distinct_values.py``): MetricFlow's own integration cases and recorded rows, on DuckDB
and PostgreSQL; what is not computed is refused by name."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from baton.semantic.compiler import compile_query
from baton.semantic.layer import SemanticLayer
from baton.semantic.loading import load_model
from baton.semantic.metricflow import load_metricflow
from baton.semantic.mf_query import query_from_params
from baton.semantic.query import SemanticQueryError
from baton.specialists.sql.connection import SQLConnection
from itest_cases import MODELS, all_cases, load_tables, outcomes
from itest_duckdb import duckdb_outcomes
from metricflow_projects import PROJECTS, cases, duckdb_file, load, outcome

ITEST = {"all_time_metric_with_non_default_grains", "window_metric_with_non_default_grains",  # week + quarter; week + month
         "grain_to_date_metric_with_non_default_grains", "derived_cumulative_metric_with_non_default_grains",
         "cumulative_metric_with_custom_granularity",  # period_agg over each alien_day's days
         "derived_metric_with_offset_to_grain_and_multiple_granularities",  # by week: the days, one per period
         "derived_metric_with_offset_window_and_offset_to_grain_and_granularity",  # 1 month by year: the days summed
         "custom_offset_window", "custom_offset_window_with_grain_and_date_part"}  # 1 alien_day (custom_offsets.py)
NO_METRIC = {"test_no_metrics_with_custom_granularity_in_filter_and_group_by"}  # listing__ds__alien_day, filtered on it
PARITY = {"s22", "s23"}  # bookings_1_month_ago, bookings_mom by month: MetricFlow moves whole months

# MetricFlow's SQL for bookings_at_start_of_month (offset_to_grain: month) by metric_time__month: its DuckDB
# snapshot of test_offset_to_grain_metric_filter_and_query_have_different_granularities without that test's
# filter on a day. Joined after aggregation, the month reads its own whole month (not its first day's rows).
START_OF_MONTH = {
    "name": "offset_to_grain_by_its_own_grain", "model": "SIMPLE_MODEL", "file": "test_mf_spine_grains",
    "metrics": ["bookings_at_start_of_month"], "group_bys": ["metric_time__month"],
    "check_query": """
        SELECT s.metric_time__month, b.bookings AS bookings_at_start_of_month
        FROM (
          SELECT {{ render_date_trunc("ds", TimeGranularity.MONTH) }} AS metric_time__month
          FROM {{ source_schema }}.mf_time_spine
          GROUP BY {{ render_date_trunc("ds", TimeGranularity.MONTH) }}
        ) s
        INNER JOIN (
          SELECT {{ render_date_trunc("ds", TimeGranularity.MONTH) }} AS metric_time__month, SUM(1) AS bookings
          FROM {{ source_schema }}.fct_bookings
          GROUP BY {{ render_date_trunc("ds", TimeGranularity.MONTH) }}
        ) b
        ON {{ render_date_trunc("s.metric_time__month", TimeGranularity.MONTH) }} = b.metric_time__month
    """,
}


def _cases() -> list[dict]:
    found = [c for c in all_cases() if c["name"] in ITEST | NO_METRIC]
    assert len(found) == len(ITEST | NO_METRIC)
    return [*found, START_OF_MONTH]


def test_duckdb_metricflow_cases():
    results = duckdb_outcomes(_cases())
    assert [kind for _, kind, _ in results] == ["passed"] * len(results), results


def test_postgres_metricflow_cases(state_db):
    engine = sa.create_engine(state_db)
    load_tables(engine)
    engine.dispose()
    results = outcomes(state_db, state_db, _cases(), "postgres")
    assert [kind for _, kind, _ in results] == ["passed"] * len(results), results


async def _parity(url: str) -> dict[str, tuple[str, str]]:
    layer = SemanticLayer(load_model(PROJECTS["simple_manifest"]),
                          SQLConnection(url, id="simple_manifest", allow_privileged_role=True))
    try:
        return {c["id"]: await outcome(layer, c, "structured") for c in cases()
                if c["id"] in PARITY and c["project"] == "simple_manifest"}
    finally:
        await layer.connection.aclose()


async def test_duckdb_month_offsets_by_month_as_metricflow_recorded(tmp_path):
    answers = await _parity(duckdb_file(tmp_path, "simple_manifest", time_spine=True))
    assert set(answers) == PARITY and all(kind == "exact" for kind, _ in answers.values()), answers


async def test_postgres_month_offsets_by_month_as_metricflow_recorded(state_db):
    engine = sa.create_engine(state_db)
    load(engine, "simple_manifest", time_spine=True)
    engine.dispose()
    answers = await _parity(state_db)
    assert set(answers) == PARITY and all(kind == "exact" for kind, _ in answers.values()), answers


@pytest.mark.parametrize(("params", "refusal"), [
    ({"metrics": ["trailing_2_months_revenue"], "group_by": ["metric_time__month", "metric_time__extract_dow"]},
     "a date part"),
    ({"metrics": ["revenue_all_time"], "group_by": ["metric_time__month", "user__bio_added_ts__month"]},
     "another time dimension"),
    ({"metrics": ["bookings_1_month_ago"], "group_by": ["metric_time__week"]}, "by week"),
    ({"metrics": ["bookings_1_month_ago"], "group_by": ["metric_time__alien_day"]}, "custom grain"),
    ({"metrics": ["bookings_1_month_ago"], "group_by": ["metric_time__month"],  # whole periods and a time range
      "where": ["{{ TimeDimension('metric_time', 'day') }} >= '2020-01-03'"]}, "time constraint"),
    ({"metrics": ["bookings_offset_one_alien_day"], "group_by": ["metric_time__day"],
      "where": ["{{ TimeDimension('metric_time', 'day') }} >= '2020-01-03'"]}, "time constraint"),
    ({"metrics": ["bookings_offset_one_alien_day"], "group_by": ["metric_time__alien_day"]}, "that grain alone"),
])
def test_what_is_not_computed_is_refused_by_name(params, refusal):
    model = load_metricflow(MODELS["SIMPLE_MODEL"])
    with pytest.raises(SemanticQueryError, match=f"{refusal}.*which Baton does not compute yet"):
        compile_query(model, query_from_params(model, params), "duckdb")


def test_a_custom_grain_filter_with_no_metric_is_refused_on_sqlite():
    model = load_metricflow(MODELS["SIMPLE_MODEL"])
    params = {"group_by": ["listing__ds__alien_day"],
              "where": ["CAST({{ TimeDimension('listing__ds', 'alien_day') }} AS TIMESTAMP) >= CAST('2019-12-20' AS TIMESTAMP)"]}
    compile_query(model, query_from_params(model, params), "duckdb")
    with pytest.raises(SemanticQueryError, match="custom grain's periods on sqlite"):
        compile_query(model, query_from_params(model, params), "sqlite")
