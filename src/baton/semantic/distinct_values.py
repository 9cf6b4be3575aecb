"""A query with no metric: the distinct values of its dimensions (MetricFlow's group-by-only query).

MetricFlow answers ``mf query --group-by user__home_state`` with each value the dimension's own
semantic model holds (NULL among them), filtered by the query's where and ordered and limited as
asked. Baton reads it from that one table: ``SELECT d FROM t WHERE ... GROUP BY d``. Dimensions of
several semantic models (MetricFlow joins them FULL OUTER), metric time (its time spine) and a
``Metric(...)`` filter are refused by ``SemanticQuery.check`` before this runs. Metric time
alone is the periods of the project's time spine (MetricFlow's ``--group-by metric_time``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from baton.semantic.custom_grains import custom_join, is_custom
from baton.semantic.engine_sql import metric_sql
from baton.semantic.expressions import parse_fragment, render_sql
from baton.semantic.joined_values import joined_rows, metric_filtered, one_holder
from baton.semantic.model import TIME, SemanticModel, TimeColumn
from baton.semantic.query import SemanticQuery, SemanticQueryError
from baton.semantic.spine_rows import grouped_sql, is_spine_item, spine_only_sql, with_spine
from baton.semantic.spine_source import spine_source
from baton.semantic.timegrain import grain_expression, period_condition
from baton.semantic.timegroup import own_rows_value, time_dimension

if TYPE_CHECKING:
    from sqlglot import exp


def columns_of(q: SemanticQuery) -> tuple[str, ...]:
    """The output columns: each dimension (metric time by its grain), or ``x__min``, ``x__max``."""
    names = tuple(q.grain or "day" if name == TIME else name for name in q.by)
    return (f"{names[0]}__min", f"{names[0]}__max") if q.min_max else names


def distinct_values_sql(model: SemanticModel, q: SemanticQuery, dialect: str,
                        literal: Callable[[str, str], exp.Expr], compile_metric: Callable[[SemanticQuery], Any] | None = None) -> str:
    """The SELECT of ``q`` (checked: no metric); ``compile_metric`` compiles a Metric(...) filter's metric."""
    import sqlglot
    from sqlglot import exp

    if q.min_max:  # MetricFlow's min_max_only: the least and greatest of the distinct values
        inner = distinct_values_sql(model, replace(q, min_max=False, order=(), limit=None), dialect, literal, compile_metric)
        name = columns_of(q)[0].rsplit("__", 1)[0]
        rows = exp.alias_(exp.Subquery(this=sqlglot.parse_one(inner, read=dialect)), "distinct_values", table=True)
        select = exp.Select().from_(rows, copy=False)
        for function, suffix in ((exp.Min, "min"), (exp.Max, "max")):
            select = select.select(exp.alias_(function(this=exp.column(name, table="distinct_values")),
                                              f"{name}__{suffix}"), copy=False)
        return render_sql(select, dialect)
    if q.by == (TIME,):
        return _spine_periods(model, q, dialect)
    if all(is_spine_item(q, b) for b in q.by):  # metric time's groups alone (spine_rows.py)
        return spine_only_sql(model, q, dialect)
    lead = next(b for b in q.by if not is_spine_item(q, b))
    first = q.time_group(lead)  # a time dimension's group (timegroup.py): one semantic model, checked
    entity = model.entity(time_dimension(model, first.dimension).entity if first else model.dimension(lead).entity)
    alias = entity.name
    conditions_of = [parse_fragment(text, "query filter", dimensions=True) for text in q.conditions]
    filtered = {n.name for tree in conditions_of for n in tree.find_all(exp.Column) if n.table == "dimension"}
    names = [*(b for b in q.by if q.time_group(b) is None and b != TIME), *(name for name, _ in q.where),
             *(n for n in filtered if q.time_group(n) is None)]
    names += [dimension for _, dimension, _, _ in q.metric_filters]  # the rows must hold what the metric joins on

    def on_rows(tree: exp.Expr) -> exp.Expr:
        return tree.transform(lambda n: exp.column(n.name, table=alias) if isinstance(n, exp.Column) and not n.table else n)

    spine_joins: dict[str, tuple[exp.Join, exp.Expr]] = {}  # a custom grain's period: the time spine LEFT JOINed on the day (custom_grains.py)

    def own_value(name: str) -> exp.Expr:
        group = q.time_group(name)
        if group is not None and is_custom(model, group.grain):
            if name in filtered and not metric_sql(dialect).timestamp_comparisons:  # as custom_grains.check_filtered
                raise SemanticQueryError(f"a filter on a custom grain's periods on {dialect}, which Baton does not "
                                         "compute (it does on DuckDB and PostgreSQL)")
            if name not in spine_joins:
                spine_joins[name] = custom_join(model, group, alias, len(spine_joins), dialect)
            return spine_joins[name][1].copy()
        if group is not None:
            return own_rows_value(model, group, alias, dialect)
        dimension = model.dimension(name)
        return on_rows(parse_fragment(dimension.local_expr(alias) or dimension.expr, f"dimension {name}"))

    table = exp.Table(this=exp.to_identifier(entity.table), db=exp.to_identifier(entity.schema) if entity.schema else None)
    select = exp.Select().from_(exp.alias_(table, alias, table=True), copy=False)
    value: Callable[[str], exp.Expr] = own_value
    if len({model.dimension(name).entity for name in names}) > 1:  # joined_values.py: FULL OUTER JOIN, as MetricFlow
        select, value = joined_rows(model, names, dialect)
    else:  # MetricFlow's pick among the models holding them all (joined_values.py)
        holder = one_holder(model, names, alias, pinned=first is not None)
        if holder != alias:
            entity, alias = model.entity(holder), holder
            table = exp.Table(this=exp.to_identifier(entity.table), db=exp.to_identifier(entity.schema) if entity.schema else None)
            select = exp.Select().from_(exp.alias_(table, alias, table=True), copy=False)
    conditions: list[exp.Expr] = []
    if any(is_spine_item(q, b) for b in q.by):  # the time spine CROSS JOINed, as MetricFlow (spine_rows.py)
        select, value, conditions = with_spine(model, q, select, value, dialect)
    for name in q.by:
        select = select.select(exp.alias_(value(name), name), copy=False)
    for name, values in q.where:
        literals = [literal(name, v) for v in values]
        conditions.append(exp.EQ(this=value(name), expression=literals[0]) if len(literals) == 1
                          else exp.In(this=value(name), expressions=literals))
    for tree in conditions_of:
        conditions.append(tree.transform(
            lambda n: value(n.name) if isinstance(n, exp.Column) and n.table == "dimension" else n))
    for join, _ in spine_joins.values():
        select = select.join(join, copy=False)
    if q.metric_filters:  # joined_values.py: FULL OUTER JOIN the metric by its dimension, as MetricFlow
        select = metric_filtered(q, select, value, conditions, dialect, compile_metric)
    return grouped_sql(select, q, value, conditions, dialect)


def _spine_periods(model: SemanticModel, q: SemanticQuery, dialect: str) -> str:
    """Metric time alone: the periods of the project's time spine (within the query's), as
    MetricFlow reads them with no metric."""
    from sqlglot import exp

    assert model.time_spine is not None and q.grain is not None  # checked by SemanticQuery.check
    _, column = model.time_spine
    spine_time = TimeColumn(column, "native")
    value = exp.Cast(this=exp.column(column, table="spine"), to=exp.DataType.build("DATE"))
    period = grain_expression(value.copy(), spine_time, q.grain, dialect)
    select = exp.Select().select(exp.alias_(period, q.grain), copy=False).from_(
        spine_source(model, "spine", dialect), copy=False)
    if q.periods:
        ranges = [period_condition(value.copy(), spine_time, p) for p in q.periods]
        select = select.where(ranges[0] if len(ranges) == 1 else exp.or_(*ranges), copy=False)
    select = select.group_by(period.copy(), copy=False)
    for _, desc in q.order:
        select = select.order_by(exp.Ordered(this=exp.column(q.grain), desc=desc), copy=False)
    if q.limit is not None:
        select = select.limit(q.limit, copy=False)
    return render_sql(select, dialect)


__all__ = ["columns_of", "distinct_values_sql"]
