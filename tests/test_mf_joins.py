"""MetricFlow's joins (issue 27): slowly changing dimensions, one path per multi-hop target, entity-prefixed
names, and queries with no metric over several semantic models (FULL OUTER JOIN), against MetricFlow's own
cases (the rows of their check queries); what is not computed is refused by name."""

from __future__ import annotations

import asyncio
import shutil
import uuid

import pytest
import sqlalchemy as sa

from baton.semantic.compiler import compile_query
from baton.semantic.layer import SemanticLayer
from baton.semantic.metricflow import load_metricflow
from baton.semantic.mf_query import query_from_params
from baton.semantic.query import SemanticQueryError
from baton.specialists.sql.connection import SQLConnection
from itest_cases import MODELS, all_cases, duckdb_copies, render, sqlite_copy
from itest_duckdb import duckdb_outcomes

COMPUTED = {
    "simple_scd_grouped_metric", "basic_scd_constrained_metric", "scd_constrained_metric_with_nulls",
    "scd_multi_hop_groupby_to_scd",  # SCD validity window
    "scd_multi_hop_groupby_through_scd", "scd_grouped_metric_with_second_dim",  # an entity path, not the shortest join
    "multihop_join_two_dims_different_sources", "mixed_length_joins",  # a path per multi-hop target
    "one_hop_dundered_identifier", "test_metric_filter_with_local_entity_prefix",
    "test_metric_filter_with_inner_query_multi_hop_join",  # entity-prefixed names
    "query_dimensions_from_different_tables", "query_dimension_with_constraint_from_diff_source",
    "test_constraints_on_joined_group_by_items",  # no metric, several semantic models
    "distinct_values_query_with_metric_filter",  # no metric, a Metric(...) filter: FULL OUTER JOIN of the metric
}


@pytest.fixture(scope="module")
def database(tmp_path_factory):
    return duckdb_copies(tmp_path_factory.mktemp("joins"))


def test_metricflow_join_cases_pass():
    cases = [c for c in all_cases() if c["name"] in COMPUTED]
    assert len(cases) == len(COMPUTED)

    results = duckdb_outcomes(cases)
    assert all(kind == "passed" for _, kind, _ in results), results


def test_each_multi_hop_target_joins_its_own_path():
    """The bridge holds account a0 twice (customers 0 and 1): MetricFlow's two copies of the path give
    a0's transactions once per (name, country) pair, as its check query does."""
    model = load_metricflow(MODELS["UNPARTITIONED_MULTI_HOP_JOIN_MODEL"])
    query = query_from_params(model, {"metrics": ["txn_count"], "group_by": ["account_id__customer_id__customer_name",
                                                                              "account_id__customer_id__country"]})
    sql = compile_query(model, query, "duckdb").sql
    assert sql.count("JOIN bridge_table") == 2, sql


def test_scd_row_is_the_one_valid_at_the_measure_day():
    sql = compile_query(*_scd_query({"metrics": ["bookings"], "group_by": ["metric_time__day", "listing__capacity"]}),
                        "postgres").sql
    assert "CAST(bookings_source.ds AS DATE) >= listings.active_from" in sql, sql
    assert "listings.active_to IS NULL" in sql, sql


def test_an_entity_path_is_followed_where_it_is_not_the_shortest_join():
    """Bookings reach the users by their own ``user`` (the guest) in one join; ``listing__user__`` is the
    listing's user: through the listings (SCD), then the users."""
    model, query = _scd_query({"metrics": ["bookings"], "group_by": ["listing__user__home_state_latest"]})
    assert query.paths == (("users_latest", ("listing", "user")),)
    sql = compile_query(model, query, "duckdb").sql
    assert "users_latest.user_id = listings.user_id" in sql, sql


@pytest.mark.parametrize(("params", "words"), [
    ({"metrics": ["bookings"], "group_by": ["listing__user__home_state_latest"],
      "where": ["{{ Dimension('listing__capacity') }} > 2"]}, "an entity path other than the shortest join beside filters"),
    ({"metrics": ["bookings"], "where": ["{{ Dimension('listing__user__home_state_latest') }} = 'CA'"]},
     "through the entity path listing/user"),
])
def test_an_entity_path_beside_filters_is_refused_by_name(params, words):
    with pytest.raises(SemanticQueryError, match=words):
        _scd_query(params)


def _scd_query(params):
    model = load_metricflow(MODELS["SCD_MODEL"])
    return model, query_from_params(model, params)


_CUMULATIVE = """---
metric:
  name: bookings_to_date
  type: cumulative
  type_params:
    measure: bookings
"""


@pytest.mark.parametrize(("params", "dialect", "words"), [
    ({"metrics": ["bookings"], "group_by": ["listing__capacity"]}, "sqlite", "on SQLite"),
    ({"metrics": ["bookings_to_date"], "group_by": ["metric_time__day", "listing__capacity"]}, "duckdb",
     "under an offset or cumulative metric"),
])
def test_scd_not_computed_is_refused_by_name(tmp_path, params, dialect, words):
    project = tmp_path / "scd"
    shutil.copytree(MODELS["SCD_MODEL"], project)
    (project / "cumulative.yaml").write_text(_CUMULATIVE)
    model = load_metricflow(project)
    with pytest.raises(SemanticQueryError, match=f"slowly changing dimension .*{words}"):
        compile_query(model, query_from_params(model, params), dialect)


@pytest.mark.parametrize(("group_by", "dialect", "words"), [
    (["user__home_state_latest", "listing__is_lux_latest"], "mysql", "no FULL OUTER JOIN"),
    (["listing"], "mysql", "filtered by a Metric.* no FULL OUTER JOIN"),
    # bookings, views and listings all hold the listing and reach the users: MetricFlow's pick decides the rows
    (["listing", "user__home_state_latest"], "duckdb", "where more than one of them reaches the others"),
])
def test_no_metric_over_several_models_refused_by_name(group_by, dialect, words):
    model = load_metricflow(MODELS["SIMPLE_MODEL"])
    where = ["{{ Metric('bookings', group_by=['listing']) }} > 2"] if "Metric" in words else []
    query = query_from_params(model, {"group_by": group_by, "where": where})
    with pytest.raises(SemanticQueryError, match=words):
        compile_query(model, query, dialect)


def test_an_entity_several_models_hold_is_read_where_metricflow_reads_it():
    """``--group-by listing``: the listings, bookings, views and the listing mapping hold its key; MetricFlow
    reads the one with the fewest elements (its check query of distinct_values_query_with_metric_filter
    reads dim_lux_listing_id_mapping); beside a dimension only the listings have, the listings."""
    model = load_metricflow(MODELS["SIMPLE_MODEL"])
    assert model.entity("lux_listing_mapping").elements == (3, 3)
    sql = compile_query(model, query_from_params(model, {"group_by": ["listing"]}), "duckdb").sql
    assert "FROM dim_lux_listing_id_mapping" in sql, sql
    sql = compile_query(model, query_from_params(model, {"group_by": ["listing", "listing__country_latest"]}), "duckdb").sql
    assert "FROM dim_listings_latest" in sql, sql


def test_no_metric_over_several_models_on_sqlite(tmp_path, database):
    """SQLite (3.39 and later) joins FULL OUTER too: the rows of MetricFlow's check query."""
    case = next(c for c in all_cases() if c["name"] == "query_dimensions_from_different_tables")
    sqlite_url = sqlite_copy(tmp_path)
    check = sa.create_engine(database[1])
    with check.connect() as conn:
        expected = {tuple(row) for row in conn.execute(sa.text(render(case["check_query"], "duckdb", "main")))}
    check.dispose()

    async def run():
        connection = SQLConnection(sqlite_url, id="joins_sqlite", allow_privileged_role=True)
        try:
            layer = SemanticLayer(load_metricflow(MODELS["SIMPLE_MODEL"]), connection)
            query = query_from_params(layer.model, {"group_by": case["group_bys"]})
            compiled, report = await layer.run(query)
            assert report.result is not None, report.attempt.error
            order = [compiled.columns.index(n) for n in ("home_state_latest", "is_lux_latest")]
            return {tuple(row[i] for i in order) for row in report.result.rows}
        finally:
            await connection.aclose()

    assert len(expected) > 3
    assert {(s, None if lux is None else bool(lux)) for s, lux in asyncio.run(run())} == expected


def test_scd_on_mariadb(mysql_url, database):
    """MariaDB compares a DATE with a DATETIME as MetricFlow's engines do: the SCD join gives the rows of
    MetricFlow's check query (simple_scd_grouped_metric), in a database of its own."""
    from itest_cases import _TYPES, _snapshots, _typed

    case = next(c for c in all_cases() if c["name"] == "simple_scd_grouped_metric")
    check = sa.create_engine(database[1])
    with check.connect() as conn:
        expected = {(str(day)[:10], capacity, bookings)
                    for day, capacity, bookings in conn.execute(sa.text(render(case["check_query"], "duckdb", "main")))}
    check.dispose()
    admin = sa.create_engine(mysql_url)
    name = f"baton_joins_{uuid.uuid4().hex[:8]}"
    with admin.connect() as conn:
        conn.exec_driver_sql(f"CREATE DATABASE {name}")
    try:
        url = sa.make_url(mysql_url).set(database=name).render_as_string(hide_password=False)
        engine = sa.create_engine(url)
        with engine.begin() as conn:
            for snapshot in (s for s in _snapshots() if s["table_name"] in ("fct_bookings", "dim_listings")):
                columns = {c["name"]: _TYPES[c["type"]].replace("TIMESTAMP", "DATETIME")
                           for c in snapshot["column_definitions"]}
                conn.exec_driver_sql(f"CREATE TABLE {snapshot['table_name']} "
                                     f"({', '.join(f'{c} {t}' for c, t in columns.items())})")
                conn.execute(sa.text(f"INSERT INTO {snapshot['table_name']} VALUES "
                                     f"({', '.join(f':p{i}' for i in range(len(columns)))})"),
                             [{f"p{i}": _typed(v, t) for i, (v, t) in enumerate(zip(row, columns.values()))}
                              for row in snapshot["rows"]])
        engine.dispose()

        async def run():
            connection = SQLConnection(url, id="joins_mariadb", allow_privileged_role=True)
            try:
                model = load_metricflow(MODELS["SCD_MODEL"])
                layer = SemanticLayer(model, connection)
                compiled, report = await layer.run(query_from_params(model, {"metrics": ["bookings"], "group_by": [
                    "metric_time__day", "listing__capacity"]}))
                assert report.result is not None, report.attempt.error
                return {(str(day)[:10], capacity, bookings) for day, capacity, bookings in report.result.rows}
            finally:
                await connection.aclose()

        assert len(expected) > 10
        assert asyncio.run(run()) == expected
    finally:
        with admin.connect() as conn:
            conn.exec_driver_sql(f"DROP DATABASE {name}")
        admin.dispose()
