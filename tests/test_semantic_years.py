"""The years a layer indexes (ask-backs offer "March 2025") are read only of DATE/TIMESTAMP columns.

A MetricFlow project may declare a time dimension over a column that is not a date (the insurance
project's ``fire_claim.year_built``: an INT of years; a text date): formatting it as a date fails
on the engine (DuckDB: ``strftime(BIGINT)``; PostgreSQL: ``multiple decimal points``), so the
layer reads the column's declared type first and leaves such a column out, saying nothing alarming.
"""

from __future__ import annotations

import datetime as dt
import logging

import sqlalchemy as sa

from baton.semantic.layer import SemanticLayer
from baton.semantic.native import model_from_dict
from baton.specialists.sql.connection import SQLConnection


def _model() -> dict:
    def entity(name: str, column: str) -> dict:
        return {"name": name, "table": name, "time": {"column": column, "format": "native"}}

    return {"name": "years", "entities": [entity("claims", "opened"), entity("buildings", "year_built"),
                                          entity("notes", "written")],
            "measures": [{"name": f"{e}_count", "entity": e, "agg": "count", "expr": "id"} for e in ("claims", "buildings", "notes")],
            "metrics": [{"name": f"{e}s", "measure": f"{e}_count"} for e in ("claims", "buildings", "notes")]}


def _fill(url: str) -> None:
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        for table, column, kind, values in (("claims", "opened", "DATE", [dt.date(2021, 3, 1), dt.date(2023, 7, 9)]),
                                            ("buildings", "year_built", "BIGINT", [1995, 2004]),
                                            ("notes", "written", "VARCHAR(32)", ["2019-01-01", "2019-05-05"])):
            conn.exec_driver_sql(f"DROP TABLE IF EXISTS {table}")
            conn.exec_driver_sql(f"CREATE TABLE {table} (id INT, {column} {kind})")
            conn.execute(sa.text(f"INSERT INTO {table} VALUES (:i, :v)"), [{"i": i, "v": v} for i, v in enumerate(values)])
    engine.dispose()


async def _years(url: str, caplog) -> tuple[int, ...]:
    _fill(url)
    layer = SemanticLayer(model_from_dict(_model()), SQLConnection(url, id="years", allow_privileged_role=True))
    try:
        with caplog.at_level(logging.WARNING, logger="baton.semantic.layer"):
            await layer.ready()
    finally:
        await layer.connection.aclose()
    assert not [r for r in caplog.records if r.name == "baton.semantic.layer"], caplog.text
    return layer.years


async def test_duckdb_reads_the_years_of_date_columns_only(tmp_path, caplog):
    assert await _years(f"duckdb:///{tmp_path / 'years.duckdb'}", caplog) == (2021, 2022, 2023)


async def test_postgres_reads_the_years_of_date_columns_only(state_db, caplog):
    assert await _years(state_db, caplog) == (2021, 2022, 2023)

