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
from baton.semantic.percentile import is_percentile, percentile_aggregate
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
        raise SemanticQueryError("join_to_timespine beside other group-bys or metrics, which Baton does not compute yet "
                                 "(it joins the time spine to metrics that all ask for it, grouped by metric time alone)")
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


_CUMULATIVE_DIALECTS = ("duckdb", "postgres")


def check_cumulative(model: SemanticModel, q: SemanticQuery, uses: list, dialect: str) -> None:
    """What a cumulative metric is computed for (else ``SemanticQueryError`` naming it): metric
    time by day (a coarser grain takes MetricFlow's ``period_agg`` of the days, not built yet),
    no offset on it, DuckDB or PostgreSQL (date arithmetic written for them), a time spine."""
    if model.time_spine is None or dialect not in _CUMULATIVE_DIALECTS:
        raise SemanticQueryError(f"a cumulative metric on {dialect}, which Baton does not compute yet (it does on DuckDB "
                                 "and PostgreSQL)")
    if TIME not in q.by or (q.grain != "day" and not all(c.startswith("to_grain:") for _, _, c in uses if c)):
        raise SemanticQueryError("a cumulative metric not grouped by metric time by day, which Baton does not compute yet (other grains take "
                                 "MetricFlow's period_agg of the days)")
    if any(offset and cumulative for _, offset, cumulative in uses):
        raise SemanticQueryError("an offset_window over a cumulative metric, which Baton does not compute yet")


def cumulative_part(model: SemanticModel, q: SemanticQuery, source: exp.Expr, joins: list, row_time: exp.Expr,
                    dims: list[str], names: list[str], dim_values: list[exp.Expr], conditions: list[exp.Expr],
                    values: dict, stacked: list, dialect: str) -> exp.Select:
    """One branch of a cumulative metric, as MetricFlow computes it: each day of the time spine
    (within the query's periods) with the measure aggregated over the rows of the window ending
    that day (``window``), since the start of its period (``grain_to_date``), or ever (``all``)."""
    from sqlglot import exp

    rows = exp.Select().from_(source, copy=False)
    for join in joins:
        rows = rows.join(join, copy=False)
    rows = rows.select(exp.alias_(exp.Cast(this=row_time, to=exp.DataType.build("DATE")), "baton_row_day"), copy=False)
    for dim, value, name in zip(dims, dim_values, names):
        if dim != TIME:
            rows = rows.select(exp.alias_(value.copy(), name), copy=False)
    for i, (_, value) in enumerate(values.values()):
        rows = rows.select(exp.alias_(value.copy(), f"baton_v{i}"), copy=False)
    if conditions:
        rows = rows.where(exp.and_(*conditions), copy=False)
    table, column = model.time_spine  # type: ignore[misc]  # checked by check_cumulative
    day = exp.Cast(this=exp.column(column, table="spine"), to=exp.DataType.build("DATE"))
    row_day = exp.column("baton_row_day", table="baton_rows")
    on: list[exp.Expr] = [exp.LTE(this=row_day.copy(), expression=day.copy())]
    kind, _, spec = next(iter(values))[2].partition(":")
    if kind == "window":
        count, unit = spec.split()
        start = exp.Sub(this=day.copy(), expression=exp.Interval(this=exp.Literal.string(count), unit=exp.Var(this=unit.upper())))
        on.append(exp.GT(this=row_day.copy(), expression=start))
    elif kind == "to_grain":  # offset_to_grain: the rows of the first day of the spine day's period
        on = [exp.EQ(this=row_day.copy(), expression=exp.Cast(this=exp.func("DATE_TRUNC", exp.Literal.string(spec), day.copy()),
                                                             to=exp.DataType.build("DATE")))]
    elif kind == "to_date":
        on.append(exp.GTE(this=row_day.copy(), expression=exp.func("DATE_TRUNC", exp.Literal.string(spec), day.copy())))
    spine_time = TimeColumn(column, "native")
    part = exp.Select().from_(exp.alias_(exp.to_table(table), "spine", table=True), copy=False).join(
        exp.alias_(exp.Subquery(this=rows), "baton_rows", table=True), on=exp.and_(*on), join_type="INNER", copy=False)
    label = grain_expression(day.copy(), spine_time, q.grain or "day", dialect)
    if kind == "to_grain" and q.grain not in (None, "day"):  # a coarser period: its first day's value (MetricFlow's)
        first = exp.Cast(this=exp.func("DATE_TRUNC", exp.Literal.string(q.grain), day.copy()), to=exp.DataType.build("DATE"))
        part = part.where(exp.EQ(this=first, expression=day.copy()), copy=False)
    keys = []
    for dim, name in zip(dims, names):
        value = label.copy() if dim == TIME else exp.column(name, table="baton_rows")
        part = part.select(exp.alias_(value, name), copy=False)
        keys.append(value.copy())
    mine = {use: i for i, use in enumerate(values)}
    for use, column_name in stacked:
        if use in mine:
            agg, _ = values[use]
            inner = exp.column(f"baton_v{mine[use]}", table="baton_rows")
            value = (percentile_aggregate(agg, inner, dialect) if is_percentile(agg) else
                     exp.Count(this=exp.Distinct(expressions=[inner])) if agg == "count_distinct" else exp.Count(this=inner)
                     if agg == "count" else {"sum": exp.Sum, "avg": exp.Avg, "min": exp.Min, "max": exp.Max}[agg](this=inner))
        else:
            value = exp.Null()
        part = part.select(exp.alias_(value, column_name), copy=False)
    if q.periods:
        ranges = [period_condition(day.copy(), spine_time, p) for p in q.periods]
        part = part.where(ranges[0] if len(ranges) == 1 else exp.or_(*ranges), copy=False)
    return part.group_by(*keys, copy=False)


__all__ = ["check_cumulative", "cumulative_part", "on_time_spine", "spined_input"]
