"""MetricFlow where filters on metric time (issue 27): ``=``, ``OR``, ranges, ``CAST(...)``, bare
``metric_time__day`` names and ``Dimension('metric_time')``, read as the days they keep. Checked
against MetricFlow's own cases and against MetricFlow's rendering of the filter (``DATE_TRUNC`` of
the time compared with the literal) run over the time spine; what is not read is refused by name."""

from __future__ import annotations

import datetime as dt

import pytest
import sqlalchemy as sa

from baton.semantic.compiler import compile_query
from baton.semantic.metricflow import load_metricflow
from baton.semantic.mf_query import query_from_params
from baton.semantic.query import SemanticQueryError
from itest_cases import MODELS, all_cases, duckdb_copies, params_of, render, same_rows, sqlite_copy
from itest_duckdb import duckdb_outcomes

COMPUTED = {"test_ambiguous_metric_time_in_query_filter", "test_metric_time_in_dimension_jinja", "test_metric_time_in_where",
            "cumulative_metric_with_non_adjustable_filter", "nested_derived_metric_offset_with_where_constraint",
            "cumulative_metric_with_agg_time_dimension",  # a bare revenue_instance__ds__day: the metric's own time
            "semi_additive_measure_query_with_where_time_constraint"}  # the first day among the days the filter keeps


@pytest.fixture(scope="module")
def database(tmp_path_factory):
    return duckdb_copies(tmp_path_factory.mktemp("time_filters"))


@pytest.fixture(scope="module")
def model():
    return load_metricflow(MODELS["SIMPLE_MODEL"])


def test_metricflow_time_filter_cases_pass():
    cases = [c for c in all_cases() if c["name"] in COMPUTED]
    assert len(cases) == len(COMPUTED)

    results = duckdb_outcomes(cases)
    assert all(kind == "passed" for _, kind, _ in results), results


# (grain, operator, literal): each as MetricFlow renders it, DATE_TRUNC(grain, metric time) <op> CAST(literal AS TIMESTAMP)
RENDERED = [
    ("day", "=", "2020-01-03"), ("day", ">=", "2020-01-03 12:00:00"), ("day", ">", "2020-01-03"), ("day", "<=", "2020-01-03"),
    ("week", ">=", "2020-01-08"), ("week", "<", "2020-01-08"), ("week", "=", "2020-01-06"), ("week", ">", "2020-01-06"),
    ("month", ">=", "2020-01-15"), ("month", ">", "2020-01-01"), ("month", "<=", "2020-02-15"), ("month", "=", "2020-02-01"),
    ("quarter", ">", "2020-02-01"), ("quarter", "<", "2020-05-01"), ("year", "<=", "2020-06-30"), ("year", ">=", "2020-01-01"),
]
WINDOW = ("2019-06-01", "2021-06-01")  # the filters below are bounded by it on both sides


@pytest.mark.parametrize(("grain", "operator", "literal"), RENDERED)
def test_the_days_kept_are_those_metricflow_keeps(database, model, grain, operator, literal):
    _, check_url = database
    within = (f"{{{{ TimeDimension('metric_time', 'day') }}}} >= '{WINDOW[0]}' AND "
              f"{{{{ TimeDimension('metric_time', 'day') }}}} < '{WINDOW[1]}'")
    where = f"CAST({{{{ TimeDimension('metric_time', '{grain}') }}}} AS TIMESTAMP) {operator} CAST('{literal}' AS TIMESTAMP)"
    periods = query_from_params(model, {"metrics": ["bookings"], "where": [where, within]}).periods
    ours = set()
    for period in periods:
        day = dt.date.fromisoformat(period.start)
        while day < dt.date.fromisoformat(period.end):
            ours.add(day)
            day += dt.timedelta(days=1)
    check = sa.create_engine(check_url)
    with check.connect() as conn:
        theirs = {row[0] for row in conn.execute(sa.text(
            f"SELECT CAST(ds AS DATE) FROM mf_time_spine WHERE DATE_TRUNC('{grain}', ds) {operator} "
            f"CAST('{literal}' AS TIMESTAMP) AND ds >= '{WINDOW[0]}' AND ds < '{WINDOW[1]}'"))}
    check.dispose()
    assert theirs and ours == theirs


def test_or_and_parentheses_and_between_combine_ranges(model):
    where = ("({{ TimeDimension('metric_time', 'day') }} = CAST('2019-12-20' AS TIMESTAMP) OR metric_time__day BETWEEN "
             "'2020-01-04' AND '2020-01-05') AND {{ Dimension('metric_time') }} < '2020-01-05'")
    query = query_from_params(model, {"metrics": ["bookings"], "where": [where]})
    assert [p.label for p in query.periods] == ["2019-12-20", "2020-01-04"]


@pytest.mark.parametrize("where", [
    "{{ TimeDimension('metric_time', 'day') }} != '2020-01-01'",
    "NOT {{ TimeDimension('metric_time', 'day') }} = '2020-01-01'",
    "EXTRACT(year FROM {{ TimeDimension('metric_time', 'day') }}) = 2020",  # a function of metric time
    "{{ TimeDimension('metric_time', 'day') }} = {{ TimeDimension('metric_time', 'month') }}",  # not a literal
    "{{ TimeDimension('metric_time', 'month') }} = '2020-01-15'",  # starts no month: keeps nothing
    "{{ TimeDimension('metric_time', 'day') }} = '2020-01-01' OR {{ Dimension('booking__is_instant') }}",
    "{{ TimeDimension('metric_time', 'hour') }} = '2020-01-01'",  # a grain the filter does not read
    "{{ TimeDimension('metric_time', 'day', date_part_name='year') }} = 2020",
    "metric_time__day = '2020-01-01T00:00:00+02:00'",  # a time zone
    "{{ TimeDimension('listing__ds', 'day') }} = '2020-01-01'",  # a time dimension that is not metric time
    "listing__ds__day = '2020-01-01'",
])
def test_what_a_time_filter_does_not_read_is_refused_by_name(model, where):
    with pytest.raises(SemanticQueryError, match="time filter"):
        query_from_params(model, {"metrics": ["bookings"], "where": [where]})


def test_on_sqlite_the_periods_answer_as_metricflow_does(tmp_path, database, model):
    case = next(c for c in all_cases() if c["name"] == "test_metric_time_in_where")
    lite = sa.create_engine(sqlite_copy(tmp_path))
    query = query_from_params(model, params_of(case, "duckdb", "main"))
    compiled = compile_query(model, query, "sqlite")
    with lite.connect() as conn:
        ours = [tuple(row) for row in conn.execute(sa.text(compiled.sql))]
    lite.dispose()
    check = sa.create_engine(database[1])
    with check.connect() as conn:
        result = conn.execute(sa.text(render(case["check_query"], "duckdb", "main")))
        columns = list(result.keys())
        theirs = [tuple(row) for row in result]
    check.dispose()
    order = [compiled.columns.index("bookings"), compiled.columns.index("day")]
    assert columns == ["bookings", "metric_time__day"] and len(theirs) > 100
    assert same_rows([tuple(row[i] for i in order) for row in ours], theirs, ordered=False)


@pytest.mark.parametrize("where", [
    "{{ TimeDimension('metric_time', 'day') }} >= CAST('2020-01-03' AS TIMESTAMP)",  # open-ended: every later day
    "CAST(metric_time__month AS TIMESTAMP) < CAST('2020-01-15' AS TIMESTAMP)",  # every earlier day
])
@pytest.mark.parametrize("dialect", ["duckdb", "sqlite"])
def test_an_open_ended_filter_keeps_every_later_or_earlier_row(tmp_path, database, model, where, dialect):
    query = query_from_params(model, {"metrics": ["bookings"], "group_by": ["metric_time__day"], "where": [where]})
    assert len(query.periods) == 1 and query.periods[0].label in ("from 2020-01-03", "before 2020-02-01")
    engine = sa.create_engine(database[0] if dialect == "duckdb" else sqlite_copy(tmp_path))
    compiled = compile_query(model, query, dialect)
    with engine.connect() as conn:
        ours = [(row[compiled.columns.index("bookings")], row[compiled.columns.index("day")])
                for row in conn.execute(sa.text(compiled.sql))]
    engine.dispose()
    operator, bound = (">=", "2020-01-03") if "2020-01-03" in where else ("<", "2020-02-01")
    check = sa.create_engine(database[1])
    with check.connect() as conn:
        theirs = [tuple(row) for row in conn.execute(sa.text(
            f"SELECT SUM(1), ds FROM fct_bookings WHERE ds {operator} CAST('{bound}' AS TIMESTAMP) GROUP BY ds"))]
    check.dispose()
    assert theirs and same_rows(ours, theirs, ordered=False)


def test_an_open_ended_filter_reads_back_from_its_dict_form(model):
    from baton.semantic.query import SemanticQuery

    for where in ("metric_time__day >= '2020-01-03'", "CAST(metric_time__month AS TIMESTAMP) < CAST('2020-01-15' AS TIMESTAMP)"):
        query = query_from_params(model, {"metrics": ["bookings"], "group_by": ["metric_time__day"], "where": [where]})
        assert SemanticQuery.from_dict(query.to_dict()).check(model) == query  # a follow-up, a saved query
