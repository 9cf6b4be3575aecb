"""A project that declares no daily time spine table: Baton generates the days (spine_source.py).

The dbt tutorial declares its spine only as a dbt model (``all_days``: 2022, built by dbt, not
among its tables); MetricFlow answered its cumulative metrics over that table
(``fixtures/metricflow/oracle/tutorial.json``: a row per day from the first transaction to
2022-12-31). Baton's generated spine (the data's whole years) gives the same rows.
"""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from baton.semantic.errors import SemanticQueryError
from baton.semantic.layer import SemanticLayer
from baton.semantic.loading import load_model
from baton.semantic.spine_source import GENERATED, spine_source
from baton.specialists.sql.connection import SQLConnection
from metricflow_projects import PROJECTS, cases, load, outcome

SPINED = ("t37", "t38", "t39", "t43")  # cumulative (all time, 7-day window), by day, alone, as a saved query


async def _outcomes(url: str) -> dict[str, tuple[str, str]]:
    layer = SemanticLayer(load_model(PROJECTS["tutorial"]), SQLConnection(url, id="tutorial", allow_privileged_role=True))
    try:
        return {c["id"]: await outcome(layer, c, "structured") for c in cases() if c["id"] in SPINED}
    finally:
        await layer.connection.aclose()


def _load(url: str) -> None:
    engine = sa.create_engine(url)
    load(engine, "tutorial")  # its tables only: no spine table
    engine.dispose()


def test_a_project_without_a_spine_table_gets_the_generated_one():
    model = load_model(PROJECTS["tutorial"])
    assert model.time_spine is not None and model.time_spine[0] == GENERATED
    assert not [r for r in model.refused if "time spine" in r.construct]


async def test_duckdb_cumulative_over_the_generated_spine_as_metricflow(tmp_path):
    url = f"duckdb:///{tmp_path / 'tutorial.duckdb'}"
    _load(url)
    assert await _outcomes(url) == {case: ("exact", "") for case in SPINED}


async def test_postgres_cumulative_over_the_generated_spine_as_metricflow(state_db):
    _load(state_db)
    assert await _outcomes(state_db) == {case: ("exact", "") for case in SPINED}


@pytest.mark.parametrize("dialect", ["sqlite", "mysql"])
def test_the_generated_spine_is_refused_by_name_without_generate_series(dialect):
    with pytest.raises(SemanticQueryError, match="a generated time spine"):
        spine_source(load_model(PROJECTS["tutorial"]), "spine", dialect)
