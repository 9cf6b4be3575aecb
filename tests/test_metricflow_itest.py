"""MetricFlow's own integration cases on DuckDB (issue 27): never a wrong answer, and the ones
Baton computes stay computed. The whole set on DuckDB and PostgreSQL: ``bench/metricflow_itest.py``."""

from __future__ import annotations

from collections import Counter

import pytest
import sqlalchemy as sa

from baton.semantic.metricflow import load_metricflow
from baton.semantic.mf_query import query_from_params
from baton.semantic.query import SemanticQuery, SemanticQueryError
from itest_cases import MODELS, all_cases, duckdb_copies
from itest_duckdb import duckdb_outcomes

PASSED_AT_LEAST = 260  # DuckDB's figure when this floor was set; raise it as constructs are computed


@pytest.fixture(scope="module")
def database(tmp_path_factory):
    return duckdb_copies(tmp_path_factory.mktemp("itest"))


def test_every_case_is_passed_or_refused_by_name():
    cases = all_cases()
    results = duckdb_outcomes(cases)  # kept: the focused modules' cases are not asked again
    tally = Counter(kind for _, kind, _ in results)
    bad = [f"{case['file']} {name}: {kind} {detail}" for case, (name, kind, detail) in zip(cases, results, strict=True)
           if kind in ("wrong", "errored")]
    assert not bad, "\n".join(bad)
    assert not [name for name, kind, detail in results if kind == "refused" and not detail.strip()]
    assert sum(tally.values()) == 266
    assert tally["passed"] >= PASSED_AT_LEAST, tally


HOSTILE_CONDITIONS = [
    "dimension.is_instant OR (SELECT 1) = 1",  # a subquery
    "is_instant",  # a table's own column, not a dimension
    "fct_bookings.is_instant",
    "dimension.time >= '2020-01-01'",  # metric time is a period, not a condition
    "dimension.is_instant; DROP TABLE fct_bookings",
    "pg_sleep(10) IS NULL",
    "dimension.no_such_dimension = 1",
]


@pytest.mark.parametrize("condition", HOSTILE_CONDITIONS)
def test_a_query_condition_names_dimensions_only(condition, database):
    url, _ = database
    model = load_metricflow(MODELS["SIMPLE_MODEL"])
    with pytest.raises(SemanticQueryError):
        SemanticQuery.from_dict({"metrics": ["bookings"], "conditions": [condition]}).check(model)
    engine = sa.create_engine(url)
    with engine.connect() as conn:  # nothing happened: the table is there, whole
        assert conn.execute(sa.text("SELECT COUNT(*) FROM fct_bookings")).scalar() > 0
    engine.dispose()


def test_metricflow_filters_beyond_value_lists_are_conditions():
    model = load_metricflow(MODELS["SIMPLE_MODEL"])
    query = query_from_params(model, {"metrics": ["bookings"], "where": [
        "NOT {{ Dimension('booking__is_instant') }} AND {{ Dimension('listing__capacity_latest') }} >= 4"]})
    assert query.conditions == ("NOT dimension.is_instant", "dimension.capacity_latest >= 4")
    for refused in ("{{ Metric('bookings', group_by=['listing']) }} > 2 OR {{ Dimension('booking__is_instant') }}",
                    "{{ TimeDimension('metric_time', 'day') }} != CAST('2020-01-01' AS TIMESTAMP)"):
        with pytest.raises(SemanticQueryError):
            query_from_params(model, {"metrics": ["bookings"], "where": [refused]})


HOSTILE_TIME_FILTERS = [  # read as the days they keep (time_filters.py): anything but dates and metric time refused
    "{{ TimeDimension('metric_time', 'day') }} >= '2020-01-01' AND {{ TimeDimension('metric_time', 'day') }} < '2020-02-01' "
    "OR (SELECT 1) = 1",
    "metric_time__day >= CAST((SELECT MAX(ds) FROM fct_bookings) AS TIMESTAMP) AND metric_time__day < '2021-01-01'",
    "metric_time__day = '2020-01-01'; DROP TABLE fct_bookings",
    "metric_time__day = pg_sleep(10) OR metric_time__day = '2020-01-01'",
    "metric_time__day = '2020-01-01' OR 1 = 1",
    "CAST(fct_bookings.ds AS TIMESTAMP) = '2020-01-01'",  # a table's column, not metric time
    "metric_time__day = '2020-01-01' OR ds = '2020-01-02'",
    "{{ TimeDimension('metric_time', 'day') }} = '2020-01-01'' OR ''1''=''1'",
    # a custom grain's period is a condition over its time group (custom_grains.py): the allowed SQL subset only
    "CAST({{ TimeDimension('metric_time', 'alien_day') }} AS TIMESTAMP) >= (SELECT MAX(ds) FROM fct_bookings)",
    "{{ TimeDimension('metric_time', 'alien_day') }} >= '2020-01-01' OR pg_sleep(10) IS NULL",
    "metric_time__alien_day >= '2020-01-01' OR fct_bookings.ds IS NULL",
]


@pytest.mark.parametrize("where", HOSTILE_TIME_FILTERS)
def test_a_time_filter_compares_metric_time_with_dates_only(where):
    model = load_metricflow(MODELS["SIMPLE_MODEL"])
    with pytest.raises(SemanticQueryError):
        query_from_params(model, {"metrics": ["bookings"], "group_by": ["metric_time__day"], "where": [where]})


HOSTILE_METRIC_FILTERS = [
    ["bookings", "listing", "> 0 OR 1=1 --", "2"],  # an operator that is not one
    ["bookings", "listing", ">", "2; DROP TABLE fct_bookings"],  # a number that is not one
    ["bookings", "listing", ">", "nan"],
    ["no_such_metric", "listing", ">", "2"],
    ["bookings", "no_such_dimension", ">", "2"],
]


@pytest.mark.parametrize("metric_filter", HOSTILE_METRIC_FILTERS)
def test_a_metric_filter_is_a_metric_a_dimension_an_operator_and_a_number(metric_filter):
    model = load_metricflow(MODELS["SIMPLE_MODEL"])
    with pytest.raises(SemanticQueryError):
        SemanticQuery.from_dict({"metrics": ["listings"], "metric_filters": [metric_filter]}).check(model)


def test_a_metric_in_a_where_filter_is_a_metric_filter():
    model = load_metricflow(MODELS["SIMPLE_MODEL"])
    query = query_from_params(model, {"metrics": ["listings"],
                                      "where": ["{{ Metric('bookings', group_by=['listing']) }} > 2"]})
    assert query.metric_filters == (("bookings", "listing", ">", "2"),)
    with pytest.raises(SemanticQueryError):  # compared with a column, not a number
        query_from_params(model, {"metrics": ["listings"],
                                  "where": ["{{ Metric('bookings', group_by=['listing']) }} > capacity"]})


def test_a_query_with_no_metric_is_the_distinct_values_of_one_semantic_model(database):
    url, _ = database
    model = load_metricflow(MODELS["SIMPLE_MODEL"])
    query = query_from_params(model, {"group_by": ["user__home_state"], "where": [
        "{{ Dimension('user__home_state') }} = 'CA'"], "order_by": ["-user__home_state"], "limit": 5})
    assert query.metrics == () and query.limit == 5
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        from baton.semantic.compiler import compile_query

        rows = conn.execute(sa.text(compile_query(model, query, "duckdb").sql)).all()
    engine.dispose()
    assert rows == [("CA",)]
    for refused in ({"group_by": ["metric_time__day"], "where": ["{{ Dimension('user__home_state') }} = 'CA'"]},
                    {"group_by": ["user__home_state"], "where": ["{{ Dimension('user__home_state') }} = 'CA'; DROP TABLE x"]},
                    {"group_by": []}):
        with pytest.raises(SemanticQueryError):
            query_from_params(model, refused)


def test_metric_time_alone_is_the_periods_of_the_time_spine(database):
    url, _ = database
    model = load_metricflow(MODELS["SIMPLE_MODEL"])
    from baton.semantic.compiler import compile_query

    query = query_from_params(model, {"group_by": ["metric_time__year"]})
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        ours = [str(r[0])[:4] for r in conn.execute(sa.text(compile_query(model, query, "duckdb").sql))]
        spine = [str(r[0]) for r in conn.execute(sa.text(
            "SELECT DISTINCT EXTRACT(year FROM ds) AS y FROM mf_time_spine ORDER BY y"))]
    engine.dispose()
    assert ours == spine and len(ours) > 1
    beside = query_from_params(model, {"group_by": ["metric_time__day", "user__home_state"]})  # spine_rows.py
    assert "CROSS JOIN" in compile_query(model, beside, "duckdb").sql  # MetricFlow's (test_mf_time_groups.py)


def test_min_max_only_is_the_least_and_greatest_value_of_one_dimension(database):
    url, _ = database
    model = load_metricflow(MODELS["SIMPLE_MODEL"])
    from baton.semantic.compiler import compile_query

    compiled = compile_query(model, query_from_params(model, {"group_by": ["user__home_state"], "min_max_only": True}),
                             "duckdb")
    assert compiled.columns == ("home_state__min", "home_state__max")
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        ours = conn.execute(sa.text(compiled.sql)).one()
        theirs = conn.execute(sa.text("SELECT MIN(home_state), MAX(home_state) FROM dim_users")).one()
    engine.dispose()
    assert tuple(ours) == tuple(theirs)
    for refused in ({"group_by": ["user__home_state", "user__ds__day"], "min_max_only": True},
                    {"metrics": ["bookings"], "group_by": ["metric_time__day"], "min_max_only": True}):
        with pytest.raises(SemanticQueryError):
            query_from_params(model, refused)
