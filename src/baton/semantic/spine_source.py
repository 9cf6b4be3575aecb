"""The time spine's source: the project's table, or a daily spine generated in SQL when it declares none.

MetricFlow reads a day spine table the project builds (``time_spines``). A project that declares
none (or declares it only as a dbt model, ``models: time_spine:``, which Baton does not read) gets
``GENERATED`` as ``SemanticModel.time_spine``'s table: the days are generated per engine
(``MetricSQL.day_series``: ``generate_series``) from the first day of the year of the measures'
earliest time to the last day of the year of their latest, read at query time as a subquery. Whole years: the spine such a
project builds covers its data's years (the dbt tutorial's ``all_days``: 2022), and a cumulative
metric has a row for each spine day after its first row, so the rows end where the spine ends.
Engines without ``generate_series`` (SQLite, MariaDB) are refused by name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from baton.semantic.engine_sql import metric_sql
from baton.semantic.errors import SemanticQueryError
from baton.semantic.expressions import is_identifier
from baton.semantic.model import SemanticModel

if TYPE_CHECKING:
    from sqlglot import exp

GENERATED = "baton_generated_spine"  # SemanticModel.time_spine's table when the project declares no spine
GENERATED_COLUMN = "date_day"


def spine_source(model: SemanticModel, alias: str, dialect: str) -> exp.Expr:
    """The spine aliased ``alias``: the project's table, or the generated days (module docstring)."""
    from sqlglot import exp

    assert model.time_spine is not None  # checked by the callers
    table, column = model.time_spine
    if table != GENERATED:
        return exp.alias_(exp.to_table(table), alias, table=True)
    return exp.alias_(exp.Subquery(this=_generated(model, column, dialect)), alias, table=True)


def _generated(model: SemanticModel, column: str, dialect: str) -> exp.Expr:
    import sqlglot
    from sqlglot import exp

    series = metric_sql(dialect).day_series  # the engine's generate_series of days
    if series is None:
        raise SemanticQueryError(f"a generated time spine (the project declares no time spine table) on {dialect}, "
                                 "which Baton does not compute yet")
    times = []
    for measure in model.measures:
        time = model.time_of(measure.name)
        entity = model.entity(measure.entity)
        if time is None or time.entity or time.format not in ("date", "timestamp", "native") or not is_identifier(time.column):
            continue
        table = exp.Table(this=exp.to_identifier(entity.table), db=exp.to_identifier(entity.schema) if entity.schema else None)
        value = exp.Cast(this=exp.column(time.column), to=exp.DataType.build("TIMESTAMP"))
        for agg in (exp.Min, exp.Max):
            times.append(exp.select(exp.alias_(agg(this=value.copy()), "t")).from_(table.copy()).sql(dialect=dialect))
    if not times:
        raise SemanticQueryError("a generated time spine over measures without a time column, which Baton does not "
                                 "compute yet")
    bounds = (f"SELECT DATE_TRUNC('year', MIN(t)) AS lo, DATE_TRUNC('year', MAX(t)) + INTERVAL '1 year' - INTERVAL '1 day'"
              f" AS hi FROM ({' UNION ALL '.join(dict.fromkeys(times))}) AS b0")
    sql = f"SELECT CAST({series} AS DATE) AS {column} FROM ({bounds}) AS b"
    return sqlglot.parse_one(sql, read=dialect)


__all__ = ["GENERATED", "GENERATED_COLUMN", "spine_source"]
