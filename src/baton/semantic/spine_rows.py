"""A query with no metric over metric time: the days of the project's time spine, as MetricFlow reads them.

MetricFlow answers ``mf query --group-by metric_time__month,user__home_state`` (no metric) by
CROSS JOINing its time spine to the dimensions' rows: ``FROM listings CROSS JOIN spine FULL OUTER
JOIN users ON ...`` — every period beside each row of the first semantic model, the rows the FULL
OUTER JOIN adds with no period (NULL). Baton reads the same: the spine joined right after the
first table of ``distinct_values.py``'s FROM, metric time's groups (``time`` at the query's
grain, ``TimeGroup``s of metric time: another grain, a date part) read from the spine's day, and
the query's periods a condition on it. Metric time alone (one or more of its groups, no
dimension) reads the spine alone; by a sub-daily grain, the project's spine of that grain
(``subdaily.spine_for``), its periods truncated to the grain.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from baton.semantic.expressions import render_sql
from baton.semantic.model import TIME, SemanticModel, TimeColumn
from baton.semantic.query import SemanticQuery
from baton.semantic.spine_source import spine_source
from baton.semantic.subdaily import spine_for, subdaily_group
from baton.semantic.timegrain import grain_expression, period_condition
from baton.semantic.timegroup import group_value

if TYPE_CHECKING:
    from sqlglot import exp


def is_spine_item(q: SemanticQuery, name: str) -> bool:
    """Whether a group-by item is metric time (``time``, or a ``TimeGroup`` of it)."""
    group = q.time_group(name)
    return name == TIME or (group is not None and group.dimension == TIME)


def _spine(model: SemanticModel, dialect: str) -> tuple[exp.Expr, exp.Expr, TimeColumn]:
    """The spine table (aliased ``spine``), its day as a DATE, and that day's kind."""
    from sqlglot import exp

    assert model.time_spine is not None  # checked by SemanticQuery.check
    _, column = model.time_spine
    day = exp.Cast(this=exp.column(column, table="spine"), to=exp.DataType.build("DATE"))  # a spine of timestamps too
    return spine_source(model, "spine", dialect), day, TimeColumn(column, "native")


def with_spine(model: SemanticModel, q: SemanticQuery, select: exp.Select | None, value: Callable[[str], exp.Expr],
               dialect: str) -> tuple[exp.Select, Callable[[str], exp.Expr], list[exp.Expr]]:
    """``select`` (the dimensions' FROM, or None: metric time alone) with the spine CROSS JOINed
    right after its first table; each item's value (metric time's from the spine's day); the
    conditions of the query's periods."""
    from sqlglot import exp

    table, day, kind = _spine(model, dialect)
    group = subdaily_group(q)
    if group is not None:  # metric time by a sub-daily grain alone: its spine's (subdaily.py)
        spine, column = spine_for(model, group.grain or "")
        table, day = exp.alias_(exp.to_table(spine), "spine", table=True), exp.Cast(
            this=exp.column(column, table="spine"), to=exp.DataType.build("TIMESTAMP"))
    if select is None:
        select = exp.Select().from_(table, copy=False)
    else:
        select.set("joins", [exp.Join(this=table, kind="CROSS"), *(select.args.get("joins") or [])])

    def spine_value(name: str) -> exp.Expr:
        group = q.time_group(name)
        if name == TIME:
            return grain_expression(day.copy(), kind, q.grain or "day", dialect)
        if group is not None and group.dimension == TIME:
            return group_value(group, kind, day.copy(), dialect)
        return value(name)

    ranges = [period_condition(day.copy(), kind, p) for p in q.periods]
    return select, spine_value, ([ranges[0] if len(ranges) == 1 else exp.Paren(this=exp.or_(*ranges))] if ranges else [])


def spine_only_sql(model: SemanticModel, q: SemanticQuery, dialect: str) -> str:
    """Metric time's groups alone: the spine's distinct periods (or date parts), ordered and limited."""
    from sqlglot import exp

    select, value, conditions = with_spine(model, q, None, lambda name: exp.column(name), dialect)
    for name in q.by:
        select = select.select(exp.alias_(value(name), name), copy=False)
    return grouped_sql(select, q, value, conditions, dialect)


def grouped_sql(select, q: SemanticQuery, value: Callable, conditions: list, dialect: str) -> str:
    """A query with no metric finished: its conditions, grouped by what it names, ordered, limited."""
    from sqlglot import exp

    if conditions:
        select = select.where(exp.and_(*conditions), copy=False)
    select = select.group_by(*[value(name) for name in q.by], copy=False)
    for name, desc in q.order:
        select = select.order_by(exp.Ordered(this=exp.column(name), desc=desc), copy=False)
    if q.limit is not None:
        select = select.limit(q.limit, copy=False)
    return render_sql(select, dialect)


__all__ = ["grouped_sql", "is_spine_item", "spine_only_sql", "with_spine"]
