"""Sub-daily metric time in metric definitions and time constraints (issue 27, ``semantic/subdaily.py``):
MetricFlow's own cases on DuckDB and PostgreSQL against their check queries' rows; the SQL's shape
and ranges; what is not computed refused by name."""

from __future__ import annotations

import datetime as dt
from dataclasses import replace

import pytest
import sqlalchemy as sa

from baton.semantic.compiler import compile_query
from baton.semantic.metricflow import load_metricflow
from baton.semantic.mf_query import query_from_params
from baton.semantic.periods import Period
from baton.semantic.query import SemanticQueryError
from itest_cases import MODELS, all_cases, load_tables, outcomes
from itest_duckdb import duckdb_outcomes

COMPUTED = {
    "subdaily_cumulative_window_metric", "subdaily_cumulative_grain_to_date_metric",  # window: 3 hours; grain_to_date: hour
    "subdaily_offset_window_metric", "subdaily_offset_grain_to_date_metric",  # offset_window: 1 hour; offset_to_grain: hour
    "subdaily_metric_default_granularity",  # time_granularity: hour
    "sub_daily_metric_time", "test_subdaily_time_constraint",  # no metric: the spine of hours, of seconds
    "test_subdaily_time_constraint_with_metric", "test_subdaily_time_constraint_adjusted",  # a time of day
    "subdaily_join_to_time_spine_metric",
}
_HOUR = "{{ TimeDimension('metric_time', 'hour') }}"


@pytest.fixture(scope="module")
def model():
    return load_metricflow(MODELS["SIMPLE_MODEL"])


def _cases() -> list[dict]:
    cases = [c for c in all_cases() if c["name"] in COMPUTED]
    assert len(cases) == len(COMPUTED)
    return cases


def test_duckdb_answers_the_subdaily_cases_as_metricflow():
    results = duckdb_outcomes(_cases())
    assert all(kind == "passed" for _, kind, _ in results), results


def test_postgres_answers_the_subdaily_cases_as_metricflow(state_db):
    engine = sa.create_engine(state_db)
    load_tables(engine)
    engine.dispose()
    results = outcomes(state_db, state_db, _cases(), "postgres")
    assert all(kind == "passed" for _, kind, _ in results), results


def test_the_project_declares_its_subdaily_spines(model):
    assert ("hour", "mf_time_spine_hour", "ts") in model.subdaily_spines
    assert {g for g, _, _ in model.subdaily_spines} == {"hour", "minute", "second", "millisecond"}


def test_a_subdaily_window_reads_the_spine_of_its_grain(model):
    query = query_from_params(model, {"metrics": ["subdaily_cumulative_window_metric"], "group_by": ["metric_time__hour"]})
    sql = compile_query(model, query, "postgres").sql
    assert "mf_time_spine_hour" in sql and "INTERVAL '3 HOUR'" in sql.upper().replace("'3' HOUR", "'3 HOUR'")
    assert "DATE_TRUNC('HOUR'" in sql.upper()


def test_a_time_of_day_filter_keeps_whole_periods_of_its_grain(model):
    where = [f"{_HOUR} >= '2020-01-01 02:00:25' AND {_HOUR} <= '2020-01-03 05:00:53'"]
    query = query_from_params(model, {"metrics": ["archived_users"], "group_by": ["metric_time__hour"], "where": where})
    assert [(p.start, p.end, p.grain) for p in query.periods] == [("2020-01-01 03:00:00", "2020-01-03 06:00:00", "hour")]
    between = [f"{_HOUR} BETWEEN '2020-01-01 02:00:00' AND '2020-01-01 04:00:00'"]
    query = query_from_params(model, {"metrics": ["archived_users"], "group_by": ["metric_time__hour"], "where": between})
    assert query.periods == (Period.between(dt.datetime(2020, 1, 1, 2), dt.datetime(2020, 1, 1, 5)),)


def test_a_range_of_times_reads_back_from_its_label():
    period = Period.between(dt.datetime(2020, 1, 1, 0, 0, 2), dt.datetime(2020, 1, 1, 0, 0, 9))
    assert period.label == "2020-01-01 00:00:02 to 2020-01-01 00:00:09" and period.grain == "second"
    assert Period.parse(period.label) == period
    with pytest.raises(SemanticQueryError):
        Period.between(dt.datetime(2020, 1, 2), dt.datetime(2020, 1, 1))


@pytest.mark.parametrize(("params", "dialect", "refusal"), [
    ({"metrics": ["subdaily_cumulative_window_metric"], "group_by": ["metric_time__day"]}, "duckdb", "sub-daily cumulative"),
    ({"metrics": ["subdaily_offset_window_metric"], "group_by": ["metric_time__hour"]}, "sqlite", "sub-daily grain on sqlite"),
    ({"metrics": ["subdaily_cumulative_window_metric"], "group_by": ["metric_time__hour", "user__home_state"]}, "duckdb",
     "beside other group-bys"),
    ({"metrics": ["archived_users"], "group_by": ["metric_time__day"], "where": [f"{_HOUR} >= '2020-01-01 02:00:00' "
                                                                                 f"AND {_HOUR} < '2020-01-02 00:00:00'"]},
     "duckdb", "sub-daily grain with metric time grouped by a day"),
    ({"metrics": ["archived_users"], "group_by": ["metric_time__hour"], "where": [f"{_HOUR} >= '2020-01-01 02:00:00'"]},
     "duckdb", "open-ended"),
    ({"metrics": ["bookings"], "group_by": ["listing"], "where": [f"{_HOUR} >= '2020-01-01 02:00:00' AND "
                                                                  f"{_HOUR} < '2020-01-02 00:00:00'"]},
     "duckdb", "kept by day"),
])
def test_what_is_not_computed_is_refused_by_name(model, params, dialect, refusal):
    with pytest.raises(SemanticQueryError, match=refusal):
        compile_query(model, query_from_params(model, params), dialect)


def test_without_a_spine_of_the_grain_it_is_refused_by_name(model):
    daily = replace(model, subdaily_spines=())
    for params in ({"group_by": ["metric_time__hour"]},
                   {"metrics": ["subdaily_offset_grain_to_date_metric"], "group_by": ["metric_time__hour"]}):
        with pytest.raises(SemanticQueryError, match="does not declare"):
            compile_query(daily, query_from_params(daily, params), "duckdb")


def test_an_offset_of_days_by_a_subdaily_grain_is_refused_by_name(model):
    from baton.semantic.model import Metric
    from baton.semantic.query import SemanticQuery

    moved = replace(model, metrics=(*model.metrics, Metric("archived_users_day_before", "derived",
                                                           expr="archived_users__offset_1")))
    query = query_from_params(moved, {"metrics": ["archived_users_day_before"], "group_by": ["metric_time__hour"]})
    assert isinstance(query, SemanticQuery)
    with pytest.raises(SemanticQueryError, match="offset_window of days or more by a sub-daily grain"):
        compile_query(moved, query, "duckdb")
