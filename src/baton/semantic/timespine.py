"""MetricFlow's time spine: a row for every period, whether the data has one or not.

A project declares a daily time spine table (``time_spines`` / ``time_spine_table_configurations``,
read into ``SemanticModel.time_spine``). A metric with ``join_to_timespine`` is answered with a
row for each of the spine's periods (within the query's), LEFT JOINed to the metric's values, a
missing value shown as its ``fill_nulls_with``, as MetricFlow computes it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from baton.semantic.expressions import OFFSET_MARK, parse_metric_expression
from baton.semantic.model import TIME, SemanticModel, TimeColumn
from baton.semantic.query import SemanticQuery, SemanticQueryError
from baton.semantic.timegrain import grain_expression, period_condition

if TYPE_CHECKING:
    from sqlglot import exp


def spined_input(model: SemanticModel, name: str) -> bool:
    """Whether a ratio or derived metric reads a join_to_timespine metric (at any depth)."""
    from sqlglot import exp

    metric = model.metric(name)
    if metric.type == "simple":
        return False
    inputs = ([metric.numerator or "", metric.denominator or ""] if metric.type == "ratio" else
              [c.name.split(OFFSET_MARK)[0] for c in parse_metric_expression(metric.expr or "", name).find_all(exp.Column)])
    return any(model.metric(i).join_to_timespine or spined_input(model, i) for i in inputs)


def on_time_spine(model: SemanticModel, q: SemanticQuery, inner: exp.Select, names: list[str], dialect: str) -> exp.Select:
    """``inner`` with a row for every period of the project's time spine (MetricFlow's
    ``join_to_timespine``): the spine's periods (within the query's), LEFT JOIN the metrics, a
    missing value as the metric's ``fill_nulls_with``. Read when every metric asks for it and the
    query groups by metric time alone; anything else is refused by name."""
    from sqlglot import exp

    if model.time_spine is None or q.by != (TIME,) or not all(model.metric(m).join_to_timespine for m in q.metrics):
        raise SemanticQueryError("join_to_timespine beside other group-bys or metrics (Baton joins the time spine "
                                 "to metrics that all ask for it, grouped by metric time alone)")
    table, column = model.time_spine
    spine_time = TimeColumn(column, "native")
    value = exp.Cast(this=exp.column(column, table="spine"), to=exp.DataType.build("DATE"))  # a spine of timestamps too
    period = grain_expression(value.copy(), spine_time, q.grain or "day", dialect)
    spine = exp.Select().select(exp.alias_(period, names[0]), copy=False).from_(
        exp.alias_(exp.to_table(table), "spine", table=True), copy=False)
    if q.periods:
        ranges = [period_condition(value.copy(), spine_time, p) for p in q.periods]
        spine = spine.where(ranges[0] if len(ranges) == 1 else exp.or_(*ranges), copy=False)
    spine = spine.group_by(period.copy(), copy=False)
    order, limit = inner.args.get("order"), inner.args.get("limit")
    inner.set("order", None)
    inner.set("limit", None)
    select = exp.Select().select(exp.alias_(exp.column(names[0], table="spine_periods"), names[0]), copy=False).from_(
        exp.alias_(exp.Subquery(this=spine), "spine_periods", table=True), copy=False)
    select = select.join(exp.alias_(exp.Subquery(this=inner), "metrics", table=True), on=exp.EQ(
        this=exp.column(names[0], table="spine_periods"), expression=exp.column(names[0], table="metrics")),
        join_type="LEFT", copy=False)
    for name in q.metrics:
        fill = model.metric(name).fill_nulls
        metric_value: exp.Expr = exp.column(name, table="metrics")
        if fill is not None:
            metric_value = exp.Coalesce(this=metric_value, expressions=[exp.Literal.number(fill)])
        select = select.select(exp.alias_(metric_value, name), copy=False)
    if order is not None:
        select.set("order", order)
    if limit is not None:
        select.set("limit", limit)
    return select


__all__ = ["on_time_spine", "spined_input"]
