"""MetricFlow custom granularities (issue 27): ``alien_day``, a column of the project's time spine,
as a grain of metric time and of time dimensions (``booking__ds__alien_day``,
``listing__ds__alien_day``), against MetricFlow's own cases on DuckDB and on SQLite; what is not
computed around a custom grain is refused by name. A filter on a custom grain's period is SQL over
the spine's column, as MetricFlow applies it (an offset metric's: on its moved time)."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from baton.semantic.compiler import compile_query
from baton.semantic.metricflow import load_metricflow
from baton.semantic.mf_query import query_from_params
from baton.semantic.query import SemanticQueryError
from itest_cases import MODELS, all_cases, duckdb_copies, params_of, render, same_rows, sqlite_copy
from itest_duckdb import duckdb_outcomes

COMPUTED = {"simple_metric_with_custom_granularity", "simple_metric_with_custom_granularity_and_join",
            "derived_offset_metric_with_custom_granularity", "multiple_metrics_with_custom_granularity",
            "simple_metric_with_custom_granularity_filter", "simple_metric_with_custom_granularity_in_filter_and_group_by",
            "test_offset_metric_with_custom_granularity_filter_not_in_group_by",
            "test_conversion_metric_with_custom_granularity", "test_windowed_conversion_metric_with_custom_granularity",
            "test_conversion_metric_with_custom_granularity_filter",
            "test_conversion_metric_with_custom_granularity_filter_not_in_group_by",
            "test_join_to_time_spine_metric_grouped_by_custom_grain"}


@pytest.fixture(scope="module")
def database(tmp_path_factory):
    return duckdb_copies(tmp_path_factory.mktemp("custom_grains"))


@pytest.fixture(scope="module")
def model():
    return load_metricflow(MODELS["SIMPLE_MODEL"])


def test_the_time_spine_declares_alien_day(model):
    assert model.custom_grains == (("alien_day", "alien_day"),)


def test_metricflow_custom_grain_cases_pass():
    cases = [c for c in all_cases() if c["name"] in COMPUTED]
    assert len(cases) == len(COMPUTED)

    results = duckdb_outcomes(cases)
    assert all(kind == "passed" for _, kind, _ in results), results


@pytest.mark.parametrize("name", ["simple_metric_with_custom_granularity_and_join", "derived_offset_metric_with_custom_granularity"])
def test_on_sqlite_a_custom_grain_answers_as_metricflow_does(tmp_path, database, model, name):
    case = next(c for c in all_cases() if c["name"] == name)
    lite = sa.create_engine(sqlite_copy(tmp_path))
    compiled = compile_query(model, query_from_params(model, params_of(case, "duckdb", "main")), "sqlite")
    with lite.connect() as conn:
        ours = [tuple(row) for row in conn.execute(sa.text(compiled.sql))]
    lite.dispose()
    check = sa.create_engine(database[1])
    with check.connect() as conn:
        result = conn.execute(sa.text(render(case["check_query"], "duckdb", "main")))
        columns = [c.lower() for c in result.keys()]
        theirs = [tuple(row) for row in result]
    check.dispose()
    order = [compiled.columns.index(c) for c in columns]
    assert theirs and same_rows([tuple(row[i] for i in order) for row in ours], theirs, ordered=False)


@pytest.mark.parametrize("params", [
    {"metrics": ["bookings"], "group_by": ["metric_time__martian_day"]},  # not a grain of the spine
    {"metrics": ["bookings"], "group_by": ["TimeDimension('metric_time', 'martian_day')"]},
    {"metrics": ["bookings_1_month_ago"], "group_by": ["metric_time__alien_day"]},  # a month offset by custom periods
    {"metrics": ["bookings_join_to_time_spine"], "group_by": ["metric_time__alien_day", "metric_time__month"]},
    {"metrics": ["bookings_offset_one_alien_day"], "group_by": ["metric_time__alien_day"]},  # by its own grain alone
])
def test_what_is_not_computed_around_a_custom_grain_is_refused_by_name(model, params):
    with pytest.raises(SemanticQueryError, match="martian_day|custom grain|custom periods|join_to_timespine|alien_day"):
        compile_query(model, query_from_params(model, params), "duckdb")


FILTER = "CAST({{ TimeDimension('listing__ds', 'alien_day') }} AS TIMESTAMP) >= CAST('2019-12-20' AS TIMESTAMP)"


def test_a_custom_grain_filter_is_a_condition_over_its_time_group(model):
    query = query_from_params(model, {"metrics": ["bookings"], "where": [FILTER]})
    assert query.conditions == ("CAST(dimension.listing__ds__alien_day AS TIMESTAMP) >= CAST('2019-12-20' AS TIMESTAMP)",)
    assert [(t.name, t.grain) for t in query.times] == [("listing__ds__alien_day", "alien_day")] and query.by == ()


@pytest.mark.parametrize("dialect", ["sqlite", "mysql"])
def test_a_custom_grain_filter_is_refused_by_name_where_dates_are_text(model, dialect):
    with pytest.raises(SemanticQueryError, match=f"custom grain's periods on {dialect}"):
        compile_query(model, query_from_params(model, {"metrics": ["bookings"], "where": [FILTER]}), dialect)


def test_a_custom_grain_filter_beside_another_time_in_one_condition_is_refused_by_name(model):
    where = FILTER + " OR {{ TimeDimension('metric_time', 'day') }} = '2020-01-01'"
    with pytest.raises(SemanticQueryError, match="a custom grain beside another time"):
        query_from_params(model, {"metrics": ["bookings"], "where": [where]})


def test_a_conversion_metric_filtered_otherwise_is_still_refused_by_name(model):
    for where in ("{{ Dimension('visit__referrer_id') }} = 'ref_id_01'",
                  FILTER.replace("listing__ds", "metric_time") + " OR {{ Dimension('visit__referrer_id') }} = 'x'"):
        with pytest.raises(SemanticQueryError, match="a conversion metric"):
            compile_query(model, query_from_params(model, {"metrics": ["visit_buy_conversion_rate"], "where": [where]}), "duckdb")


def test_a_custom_grain_reads_back_from_its_dict_form_and_is_checked_against_the_spine(model):
    from baton.semantic.query import SemanticQuery

    for params in ({"metrics": ["bookings"], "group_by": ["metric_time__alien_day"]},
                   {"metrics": ["bookings"], "where": [FILTER]}):
        query = query_from_params(model, params)
        assert SemanticQuery.from_dict(query.to_dict()).check(model) == query  # a follow-up, a saved query
    unknown = {"metrics": ["bookings"], "by": ["t"], "times": [{"name": "t", "dimension": "time", "grain": "martian_day"}]}
    with pytest.raises(SemanticQueryError, match="no grain 'martian_day'"):
        SemanticQuery.from_dict(unknown).check(model)
