"""Time in a MetricFlow query's group-by (issue 27): time dimensions other than metric time, metric
time at several grains, date parts, sub-daily grains, partitions, no-metric queries over time.

The expected rows are MetricFlow's: each case's ``check_query`` (``fixtures/metricflow_itest``),
run on DuckDB beside Baton's answer. Date parts and sub-daily grains are checked on the four
engines against MetricFlow's definitions (``render_extract``: ISO day of week, Monday 1 .. Sunday 7;
``DATE_TRUNC`` to the grain).
"""

from __future__ import annotations

import pytest
from sqlglot import exp

from baton.semantic.metricflow import load_metricflow
from baton.semantic.mf_query import query_from_params
from baton.semantic.model import TIME, TimeColumn
from baton.semantic.query import SemanticQuery, SemanticQueryError
from baton.semantic.timegrain import DATE_PARTS, SUBDAILY, date_part_expression, grain_expression
from itest_cases import MODELS, all_cases
from itest_duckdb import duckdb_outcomes
from sql_test_databases import KINDS, make_db  # noqa: F401  (fixture)

CASES = [  # this cluster's cases Baton computes
    "local_partition_dimension", "metric_time_date_part", "query_dimensions_only", "query_dimensions_with_time_constraint",
    "query_non_default_time_dimension_without_granularity", "query_time_dimension_without_granularity",
    "min_max_only_time", "min_max_only_time_month", "sub_daily_time_dimension",
    "metrics_with_different_time_granularities_and_no_metric_time", "query_granularity_for_joined_dundered_dimension_day",
    "query_granularity_for_joined_dundered_dimension_month", "derived_metric_offset_window_and_date_part",
    "derived_metric_with_window_and_multiple_granularities", "nested_derived_metric_outer_offset_with_agg_time_dimension",
    "offset_metric_with_agg_time_dim_date_part", "simple_distinct_query_with_date_part", "simple_fill_nulls_with_0_agg_time_dim",
    "simple_fill_nulls_with_0_with_non_metric_time", "simple_metric_with_sub_daily_dimension", "simple_query_with_date_part",
    "simple_query_with_date_part_not_metric_time", "simple_query_with_multiple_date_parts", "constraint_with_partitions",
    "partition_rollup", "partitioned_join_groupby_partition", "simple_query_non_ds",
]


def test_the_cluster_answers_as_metricflow_on_duckdb():
    cases = [c for c in all_cases() if c["name"] in CASES]
    assert {c["name"] for c in cases} == set(CASES)

    assert [f"{name}: {kind} {detail}" for name, kind, detail in duckdb_outcomes(cases) if kind != "passed"] == []


def test_time_groups_as_metricflow_names_them():
    model = load_metricflow(MODELS["SIMPLE_MODEL"])
    query = query_from_params(model, {"metrics": ["bookings"], "group_by": [
        "metric_time__day", "metric_time__month", "TimeDimension('metric_time', date_part_name='dow')",
        "listing__ds__month"]})
    assert query.by[0] == TIME and query.grain == "day"
    assert [(t.name, t.dimension, t.grain, t.date_part) for t in query.times] == [
        ("metric_time__month", TIME, "month", None), ("metric_time__extract_dow", TIME, None, "dow"),
        ("listing__ds__month", "listings_latest__ds", "month", None)]
    users = query_from_params(model, {"metrics": ["new_users"], "group_by": ["user__bio_added_ts"]})
    assert [(t.name, t.grain) for t in users.times] == [("user__bio_added_ts__second", "second")]  # its time_granularity
    own = query_from_params(model, {"metrics": ["bookings"], "group_by": ["Dimension('booking__ds__day')"]})
    assert own.by == (TIME,) and own.grain == "day" and not own.times  # the measure's own time: metric time
    with pytest.raises(SemanticQueryError, match="named twice"):
        query_from_params(model, {"metrics": ["bookings"], "group_by": ["metric_time__month", "metric_time__month"]})


def test_the_dict_form_keeps_time_groups_and_the_native_form():
    model = load_metricflow(MODELS["SIMPLE_MODEL"])
    query = query_from_params(model, {"metrics": ["bookings"], "group_by": ["metric_time__week", "listing__ds__year"]})
    again = SemanticQuery.from_dict(query.to_dict())
    assert again.times == query.times and again.by == query.by and again.grain == "week"
    native = SemanticQuery.from_dict({"metrics": ["bookings"], "by": ["time"], "grain": "month"})
    assert native.by == (TIME,) and native.grain == "month" and native.times == ()
    with pytest.raises(SemanticQueryError):
        SemanticQuery.from_dict({"metrics": ["bookings"], "by": ["x"], "times": [{"name": "y", "dimension": "time",
                                                                                 "grain": "day"}]})


@pytest.mark.parametrize("params, refusal", [
    ({"group_by": ["metric_time__hour", "user__home_state"]}, "sub-daily grain beside"),  # its spine alone: computed
    ({"group_by": ["user__home_state", "metric_time__month"], "where": ["{{ Dimension('listing__country_latest') }} = 'us'"]},
     "no_dedupe"),
    ({"metrics": ["trailing_2_months_revenue"], "group_by": ["metric_time__month", "metric_time__extract_dow"]}, "date part"),
    ({"metrics": ["bookings"], "group_by": ["metric_time__month"], "where": ["{{ Dimension('booking__is_instant') }}"]}, None),
])
def test_what_is_not_computed_is_refused_by_name(params, refusal):
    from baton.semantic.compiler import compile_query

    model = load_metricflow(MODELS["SIMPLE_MODEL"])
    if refusal is None:  # a control: the same shapes compile when nothing refused is in them
        compile_query(model, query_from_params(model, params), "duckdb")
        return
    with pytest.raises(SemanticQueryError, match=refusal):
        compile_query(model, query_from_params(model, params), "duckdb")


# ISO dow: 2020-01-05 is a Sunday (7), 2020-12-31 a Thursday (4), the 366th day of a leap year
_ROWS = {"2020-01-05 13:45:12.345": {"year": 2020, "quarter": 1, "month": 1, "day": 5, "dow": 7, "doy": 5,
                                     "hour": "2020-01-05 13:00:00", "minute": "2020-01-05 13:45:00",
                                     "second": "2020-01-05 13:45:12", "millisecond": "2020-01-05 13:45:12.345"},
         "2020-12-31 23:59:59.999": {"year": 2020, "quarter": 4, "month": 12, "day": 31, "dow": 4, "doy": 366,
                                     "hour": "2020-12-31 23:00:00", "minute": "2020-12-31 23:59:00",
                                     "second": "2020-12-31 23:59:59", "millisecond": "2020-12-31 23:59:59.999"}}


@pytest.mark.parametrize("kind", KINDS)
def test_date_parts_and_sub_daily_grains_on_every_engine(kind, make_db):
    column = {"mysql": "DATETIME(3)", "sqlite": "TEXT"}.get(kind, "TIMESTAMP")
    db = make_db(kind, f"CREATE TABLE t (id INTEGER, ts {column})",
                 *(f"INSERT INTO t VALUES ({i}, '{ts}')" for i, ts in enumerate(_ROWS)))
    dialect = {"mysql": "mysql", "postgres": "postgres"}.get(kind, kind)
    time = TimeColumn("ts", "native")
    ts = exp.column("ts", table="t")
    values = [exp.alias_(date_part_expression(ts, time, part, dialect), part) for part in DATE_PARTS]
    values += [exp.alias_(grain_expression(ts, time, grain, dialect), grain) for grain in SUBDAILY]
    sql = exp.select(*values).from_(exp.alias_(exp.to_table("t"), "t", table=True)).order_by("t.id").sql(dialect)
    engine = db.admin()
    with engine.connect() as conn:
        rows = [dict(row._mapping) for row in conn.exec_driver_sql(sql.replace("%", "%%") if kind == "mysql" else sql)]
    engine.dispose()
    expected = list(_ROWS.values())
    assert [{k: (int(v) if k in DATE_PARTS else v) for k, v in row.items()} for row in rows] == expected
