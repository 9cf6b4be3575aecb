"""MetricFlow's time spine: a row for every period, whether the data has one or not.

A project declares a daily time spine table (``time_spines`` / ``time_spine_table_configurations``,
read into ``SemanticModel.time_spine``). A query grouped by metric time whose metric asks for
``join_to_timespine`` (or reads one that does) is answered with a row for each of the spine's
periods (within the query's), LEFT JOINed to the query's rows, a missing value shown as its
``fill_nulls_with``, as MetricFlow computes it (``on_time_spine``). Cumulative metrics and
``offset_to_grain`` inputs are read over the spine's days too (``cumulative_part``). By metric time
at a sub-daily grain alone, both read the project's spine of that grain instead (``subdaily.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from baton.semantic import subdaily
from baton.semantic.custom_grains import spine_grain
from baton.semantic.custom_offsets import check_custom_offset, moved_spine
from baton.semantic.engine_sql import metric_sql
from baton.semantic.expressions import OFFSET_MARK, parse_metric_expression
from baton.semantic.measure_uses import Use, custom_offset, leaves, stacked_name
from baton.semantic.model import TIME, SemanticModel, TimeColumn
from baton.semantic.percentile import is_percentile, percentile_aggregate
from baton.semantic.period_agg import DAY_COLUMN, over_days, period_aggs
from baton.semantic.query import SemanticQuery, SemanticQueryError
from baton.semantic.spine_keys import (
    check_spine_keys,
    coarse,
    first_days,
    key_value,
    offset_join,
    offset_mode,
    spine_keys,
)
from baton.semantic.spine_source import spine_source
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


def needs_spine(model: SemanticModel, q: SemanticQuery) -> bool:
    """Whether the answer is read over the time spine's periods: grouped by metric time, with a metric
    that asks for ``join_to_timespine`` or reads one that does. Without metric time MetricFlow joins no
    spine (its ``fill_nulls_with`` still fills)."""
    return (TIME in q.by or spine_grain(model, q) is not None or subdaily.subdaily_group(q) is not None) and any(
        model.metric(m).join_to_timespine or spined_input(model, m) for m in q.metrics)


def on_time_spine(model: SemanticModel, q: SemanticQuery, inner: exp.Select, names: list[str], uses: list,
                  tree: Callable[[str, Callable[[Use], exp.Expr]], exp.Expr], dialect: str) -> exp.Select:
    """The answer over the project's time spine (MetricFlow's ``join_to_timespine``): every spine period
    (within the query's), LEFT JOIN ``inner`` (the query's rows, each measure also as its
    ``stacked_name`` column), the metrics computed again over them by ``tree`` — a join_to_timespine
    metric's measure NULL where the period has no data, so its ``fill_nulls_with`` shows. Other metrics
    keep their own periods too (MetricFlow joins each metric's rows FULL OUTER): a period outside the
    spine where one of them has a value is a row, the spined measures NULL there. A where filter on a
    grouped-by dimension is applied again over the spine's rows (as MetricFlow re-applies it).
    Beside other group-bys only one simple metric is read; more is refused by name."""
    from sqlglot import exp

    found = [leaf for name in q.metrics for leaf in leaves(model, name)]
    spined = {use for leaf, use in found if model.metric(leaf).join_to_timespine}
    plain = {use for leaf, use in found if not model.metric(leaf).join_to_timespine}
    custom = spine_grain(model, q)  # metric time by a custom grain: the spine's own column (custom_grains.py)
    sub = subdaily.subdaily_group(q)  # by a sub-daily grain: the spine of that grain, or finer (subdaily.py)
    time_name = custom[0] if custom else sub.name if sub else names[q.by.index(TIME)]
    others = [n for n in names if n != time_name]
    if model.time_spine is None or spined & plain or any(offset for _, offset, _ in spined) or (
            others and (len(q.metrics) > 1 or model.metric(q.metrics[0]).type != "simple" or q.metric_filters
                        or any(name in q.by for name, _ in q.where))):
        raise SemanticQueryError("join_to_timespine beside other group-bys and other metrics, on an offset input, or with one "
                                 "measure read with and without it, which Baton does not compute yet")
    table, column = model.time_spine if sub is None else subdaily.spine_for(model, sub.grain or "")
    spine_time = TimeColumn(column, "native")
    value = exp.Cast(this=exp.column(column, table="spine"), to=exp.DataType.build("DATE" if sub is None else "TIMESTAMP"))
    period = exp.column(custom[1], table="spine") if custom else grain_expression(
        value.copy(), spine_time, (sub.grain if sub else q.grain) or "day", dialect)
    source = spine_source(model, "spine", dialect) if sub is None else exp.alias_(exp.to_table(table), "spine", table=True)
    periods = exp.Select().select(exp.alias_(period, time_name), exp.alias_(exp.Literal.number(1), "baton_in_spine"),
                                  copy=False).from_(source, copy=False)
    if q.periods:
        ranges = [period_condition(value.copy(), spine_time, p) for p in q.periods]
        periods = periods.where(ranges[0] if len(ranges) == 1 else exp.or_(*ranges), copy=False)
    periods = periods.group_by(period.copy(), copy=False)
    order, limit = inner.args.get("order"), inner.args.get("limit")
    inner.set("order", None)
    inner.set("limit", None)
    spine_row = exp.column("baton_in_spine", table="spine_periods")
    if plain:  # the other metrics' own periods too (MetricFlow's FULL OUTER JOIN of each metric's rows)
        present = exp.or_(*(exp.Not(this=exp.Is(this=exp.column(stacked_name(u), table="metrics"), expression=exp.Null()))
                            for u in plain))
        data = exp.Select().select(exp.column(time_name, table="metrics"), exp.alias_(exp.Literal.number(0), "baton_in_spine"),
                                   copy=False).from_(exp.alias_(exp.Subquery(this=inner.copy()), "metrics", table=True),
                                                     copy=False).where(present, copy=False)
        both = exp.union(periods, data, distinct=False)
        periods = exp.Select().select(exp.column(time_name, table="both_periods"), exp.alias_(
            exp.Max(this=exp.column("baton_in_spine", table="both_periods")), "baton_in_spine"), copy=False).from_(
            exp.alias_(exp.Subquery(this=both), "both_periods", table=True), copy=False).group_by(
            exp.column(time_name, table="both_periods"), copy=False)

    def value_of(use: Use) -> exp.Expr:
        measure = exp.column(stacked_name(use), table="metrics")
        if use in plain or not plain:
            return measure
        return exp.Case().when(exp.EQ(this=spine_row.copy(), expression=exp.Literal.number(1)), measure)

    select = exp.Select().select(exp.alias_(exp.column(time_name, table="spine_periods"), time_name), copy=False).from_(
        exp.alias_(exp.Subquery(this=periods), "spine_periods", table=True), copy=False)
    select = select.join(exp.alias_(exp.Subquery(this=inner), "metrics", table=True), on=exp.EQ(
        this=exp.column(time_name, table="spine_periods"), expression=exp.column(time_name, table="metrics")),
        join_type="LEFT", copy=False)
    for name in names:
        if name != time_name:
            select = select.select(exp.alias_(exp.column(name, table="metrics"), name), copy=False)
    for name in q.metrics:
        select = select.select(exp.alias_(tree(name, value_of), name), copy=False)
    again = [_on_output(condition) for condition in q.conditions if _grouped(condition, q)]
    if again:
        select = select.where(exp.and_(*again), copy=False)
    if order is not None:
        select.set("order", order)
    if limit is not None:
        select.set("limit", limit)
    return select


def _grouped(condition: str, q: SemanticQuery) -> bool:
    """Whether every dimension a query condition names is grouped by (MetricFlow re-applies those)."""
    from baton.semantic.expressions import dimensions_of

    return all(name in q.by and name != TIME for name in dimensions_of(condition, "query filter"))


def _on_output(condition: str) -> exp.Expr:
    """A query condition over the grouped-by dimensions, on the answer's own columns."""
    from sqlglot import exp

    from baton.semantic.expressions import parse_fragment

    def visit(node):
        if isinstance(node, exp.Column) and node.table == "dimension":
            return exp.column(node.name, table="metrics")
        return node

    return parse_fragment(condition, "query filter", dimensions=True).copy().transform(visit)


def over_spine(q: SemanticQuery, cumulative: str) -> bool:
    """Whether a cumulative measure use is read over the spine's days (``cumulative_part``): an
    all-time one in a query without metric time or periods is every row's plain aggregate, as
    MetricFlow computes it (``revenue_all_time`` alone: the sum of all revenue)."""
    return bool(cumulative) and not (cumulative == "all" and TIME not in q.by and not q.periods and not q.times)


def check_cumulative(model: SemanticModel, q: SemanticQuery, uses: list, dialect: str) -> None:
    """What a cumulative metric is computed for (else ``SemanticQueryError`` naming it): metric
    time by day, or week to year or a custom grain (MetricFlow's ``period_agg`` of the days,
    ``period_agg.py``), at one grain or several (``spine_keys.py``), DuckDB or PostgreSQL (date
    arithmetic written for them), a time spine. An ``offset_window`` over one moves its rows
    (``row_time``): the window ending at the day the offset earlier."""
    uses = [use for use in uses if over_spine(q, use[2])]
    if not uses:
        return
    subdaily.check(model, q, uses, dialect)  # by a sub-daily grain: over the spine of that grain (subdaily.py)
    if subdaily.subdaily_group(q) is not None:
        return
    if model.time_spine is None or not metric_sql(dialect).spine_arithmetic:
        offsets = all(c.startswith("to_grain:") for _, _, c in uses)  # read over the spine as cumulative ones are
        what = ("an offset_to_grain, or an offset_window of months, years or custom periods," if offsets
                else "a cumulative metric")
        if model.time_spine is None:
            raise SemanticQueryError(f"{what} in a semantic model without a time spine (its days are what it is read over)")
        raise SemanticQueryError(f"{what} on {dialect}, which Baton does not compute yet (it does on DuckDB and "
                                 "PostgreSQL: the time spine's date arithmetic is written for them)")
    customs = [c.partition(":")[2] for _, _, c in uses if custom_offset(c.partition(":")[2])]
    check_spine_keys(model, q, parts=len(customs) == len(uses))
    keys = spine_keys(model, q)
    for spec in customs:
        check_custom_offset(model, q, keys, spec)
    if not keys:
        raise SemanticQueryError("a cumulative metric not grouped by metric time by day, week, month, quarter, year or a "
                                 "custom grain, which Baton does not compute yet")
    if q.periods and any(offset_mode(keys, c.partition(":")[2]) == "periods" for _, _, c in uses if c.startswith("to_grain:")):
        raise SemanticQueryError("an offset_to_grain or months offset_window input by a grain coarser than day with a time "
                                 "constraint, which Baton does not compute yet (MetricFlow constrains whole periods)")
    cumulative = [use for use in uses if not use[2].startswith("to_grain:")]
    if coarse(keys) and cumulative and (q.periods or any(offset for _, offset, _ in cumulative)):
        raise SemanticQueryError("a cumulative metric by a grain coarser than day with a time constraint or an offset, "
                                 "which Baton does not compute yet (MetricFlow widens the constraint to whole periods)")
    period_aggs(model, q)


def cumulative_part(model: SemanticModel, q: SemanticQuery, source: exp.Expr, joins: list, row_time: exp.Expr,
                    dims: list[str], names: list[str], dim_values: list[exp.Expr], conditions: list[exp.Expr],
                    values: dict, stacked: list, dialect: str, offset: int = 0) -> exp.Select:
    """One branch of a cumulative metric, as MetricFlow computes it: each day of the time spine
    (within the query's periods) with the measure aggregated over the rows of the window ending
    that day (``window``), since the start of its period (``grain_to_date``), or ever (``all``)."""
    from sqlglot import exp

    rows = exp.Select().from_(source, copy=False)
    for join in joins:
        rows = rows.join(join, copy=False)
    sub = subdaily.subdaily_group(q)  # metric time by a sub-daily grain alone: its spine's periods (subdaily.py)
    row_period = (exp.Cast(this=row_time, to=exp.DataType.build("DATE")) if sub is None else exp.func(
        "DATE_TRUNC", exp.Literal.string(sub.grain or ""), exp.Cast(this=row_time, to=exp.DataType.build("TIMESTAMP"))))
    rows = rows.select(exp.alias_(row_period, "baton_row_day"), copy=False)
    keys = spine_keys(model, q) if sub is None else []
    for dim, value, name in zip(dims, dim_values, names):
        if all(k.name != dim for k in keys) and (sub is None or dim != sub.name):  # metric time is the spine's, below
            rows = rows.select(exp.alias_(value.copy(), name), copy=False)
    for i, (_, value) in enumerate(values.values()):
        rows = rows.select(exp.alias_(value.copy(), f"baton_v{i}"), copy=False)
    if conditions:
        rows = rows.where(exp.and_(*conditions), copy=False)
    table, column = model.time_spine if sub is None else subdaily.spine_for(model, sub.grain or "", exact=True)  # type: ignore[misc]
    day = exp.Cast(this=exp.column(column, table="spine"), to=exp.DataType.build("DATE" if sub is None else "TIMESTAMP"))
    row_day = exp.column("baton_row_day", table="baton_rows")
    on: list[exp.Expr] = [exp.LTE(this=row_day.copy(), expression=day.copy())]
    kind, _, spec = next(iter(values))[2].partition(":")
    if kind == "window":
        count, unit = spec.split()
        start = exp.Sub(this=day.copy(), expression=exp.Interval(this=exp.Literal.string(count), unit=exp.Var(this=unit.upper())))
        on.append(exp.GT(this=row_day.copy(), expression=start))
    elif kind == "to_grain" and subdaily.earlier(spec):  # offset_window of hours: that period less them
        count, unit = subdaily.earlier(spec)  # type: ignore[misc]
        on = [exp.EQ(this=row_day.copy(), expression=exp.Sub(this=day.copy(), expression=exp.Interval(
            this=exp.Literal.string(str(count)), unit=exp.Var(this=unit.upper()))))]
    elif kind == "to_grain" and sub is not None:  # offset_to_grain of a sub-daily grain: its period's start
        on = [exp.EQ(this=row_day.copy(), expression=exp.func("DATE_TRUNC", exp.Literal.string(spec), day.copy()))]
    elif kind == "to_grain":  # offset_to_grain, or an offset_window of months: spine_keys.offset_join
        on = [offset_join(keys, spec, day, row_day)]
    elif kind == "to_date":
        on.append(exp.GTE(this=row_day.copy(), expression=exp.func("DATE_TRUNC", exp.Literal.string(spec), day.copy())))
    spine_time = TimeColumn(column, "native")
    if sub is not None:  # the spine of exactly the query's sub-daily grain
        spine = exp.alias_(exp.to_table(table), "spine", table=True)
    elif kind == "to_grain" and custom_offset(spec):  # a custom offset_window: each day moved (custom_offsets.py)
        spine = moved_spine(model, spec, "spine", dialect)
    else:
        spine = spine_source(model, "spine", dialect)
    part = exp.Select().from_(spine, copy=False).join(
        exp.alias_(exp.Subquery(this=rows), "baton_rows", table=True), on=exp.and_(*on), join_type="INNER", copy=False)
    if sub is None and kind == "to_grain" and (first := first_days(keys, spec, day)) is not None:  # one spine day per period
        part = part.where(first, copy=False)
    group = []
    for dim, name in zip(dims, names):
        key = next((k for k in keys if k.name == dim), None)  # metric time: the spine day's (spine_keys.py)
        if sub is not None and dim == sub.name:
            value = grain_expression(day.copy(), spine_time, sub.grain or "", dialect)
        else:
            value = exp.column(name, table="baton_rows") if key is None else key_value(key, day, "spine", spine_time, dialect)
        part = part.select(exp.alias_(value, name), copy=False)
        group.append(value.copy())
    by_days = kind != "to_grain" and coarse(keys)  # each day's value, then the period's (period_agg.py)
    if by_days:
        part = part.select(exp.alias_(day.copy(), DAY_COLUMN), copy=False)
        group.append(day.copy())
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
    if q.periods:  # an offset one's own day too: MetricFlow constrains the cumulative days before moving them
        days = [day.copy()] + ([exp.Cast(this=exp.Sub(this=day.copy(), expression=exp.Interval(
            this=exp.Literal.string(str(offset)), unit=exp.Var(this="DAY"))), to=exp.DataType.build("DATE"))] if offset else [])
        for value in days:
            ranges = [period_condition(value, spine_time, p) for p in q.periods]
            part = part.where(ranges[0] if len(ranges) == 1 else exp.or_(*ranges), copy=False)
    part = part.group_by(*group, copy=False)
    if by_days:
        aggs = period_aggs(model, q)
        return over_days(part, names, [(column_name, aggs.get(use, "first") if use in mine else None)
                                       for use, column_name in stacked])
    return part


__all__ = ["check_cumulative", "cumulative_part", "needs_spine", "on_time_spine", "over_spine", "spined_input"]
