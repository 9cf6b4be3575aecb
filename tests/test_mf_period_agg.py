"""Cumulative metrics by a grain coarser than day (MetricFlow's ``period_agg``, issue 27): each
period's value of the daily ones, against MetricFlow's own rows (``fixtures/metricflow/oracle``);
what is not computed is refused by name."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from baton.semantic.compiler import compile_query
from baton.semantic.layer import SemanticLayer
from baton.semantic.loading import load_model
from baton.semantic.mf_query import query_from_params
from baton.semantic.query import SemanticQueryError
from baton.specialists.sql.connection import SQLConnection
from metricflow_projects import PROJECTS, cases, duckdb_file, load, outcome

# s66: trailing_2_months_revenue (period_agg: average) by month; s69: bookings_all_time (first) by month
PERIOD_AGG = {"s66", "s69"}


async def _answers(url: str) -> dict[str, tuple[str, str]]:
    layer = SemanticLayer(load_model(PROJECTS["simple_manifest"]),
                          SQLConnection(url, id="simple_manifest", allow_privileged_role=True))
    try:
        return {c["id"]: await outcome(layer, c, "structured") for c in cases() if c["id"] in PERIOD_AGG
                and c["project"] == "simple_manifest"}
    finally:
        await layer.connection.aclose()


async def test_duckdb_period_agg_as_metricflow(tmp_path):
    answers = await _answers(duckdb_file(tmp_path, "simple_manifest", time_spine=True))
    assert set(answers) == PERIOD_AGG
    assert all(kind == "exact" for kind, _ in answers.values()), answers


async def test_postgres_period_agg_as_metricflow(state_db):
    engine = sa.create_engine(state_db)
    load(engine, "simple_manifest", time_spine=True)
    engine.dispose()
    answers = await _answers(state_db)
    assert all(kind == "exact" for kind, _ in answers.values()), answers


@pytest.mark.parametrize(("params", "dialect"), [
    ({"metrics": ["trailing_2_months_revenue"], "group_by": ["metric_time__month"]}, "sqlite"),
    ({"metrics": ["bookings_all_time"], "group_by": ["metric_time__month"]}, "mysql"),
    ({"metrics": ["trailing_2_months_revenue"], "group_by": ["metric_time__month"],  # a time range: whole periods
      "where": ["{{ TimeDimension('metric_time', 'day') }} >= '2020-01-03'"]}, "duckdb"),
])
def test_what_is_not_computed_is_refused_by_name(params, dialect):
    model = load_model(PROJECTS["simple_manifest"])
    with pytest.raises(SemanticQueryError, match="does not compute yet"):
        compile_query(model, query_from_params(model, params), dialect)
