"""A semi-additive measure (MetricFlow's ``non_additive_dimension``): a balance is taken on one day.

Only the rows at the first or last day of the measure's time column count, per the keys of its
``window_groupings`` and, when the query groups by metric time, per period — a correlated
``MIN``/``MAX`` on the measure's own table, portable to every engine. Filtered (a where filter,
the measure's or an input's filter), the day is the first or last among the rows the filters
keep, as MetricFlow takes it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from baton.semantic.model import TIME, TimeColumn
from baton.semantic.query import SemanticQuery, SemanticQueryError
from baton.semantic.timegrain import grain_expression

if TYPE_CHECKING:
    from sqlglot import exp


def semi_additive(root: str, table: str, non_additive: tuple[str, str, tuple[str, ...]], time: TimeColumn | None,
                  time_on: Callable[[str], exp.Expr], q: SemanticQuery, dialect: str,
                  filtered: tuple[exp.Expr, list, list] | None = None) -> exp.Expr:
    """The condition on ``root``'s rows (of ``table``): its time column at the min or max among the rows of
    the same keys (``window_groupings``) and, grouped by metric time, of the same period
    (``time_on(alias)``: the measure's time on an alias's rows). ``filtered``: the branch's source, joins and
    row conditions (a where filter, the measure's own filter), when there are any: the day is the first or
    last among the rows they keep, as MetricFlow filters before it takes the day (``_among_filtered``)."""
    from sqlglot import exp

    column, choice, keys = non_additive
    if filtered is not None and filtered[2]:
        return _among_filtered(root, non_additive, time, time_on, q, dialect, filtered)
    other = "baton_semi"
    value = exp.Max if choice == "max" else exp.Min
    inner = exp.Select().select(value(this=exp.column(column, table=other)), copy=False).from_(
        exp.alias_(exp.to_table(table), other, table=True), copy=False)
    same = [exp.EQ(this=exp.column(k, table=other), expression=exp.column(k, table=root)) for k in keys]
    if TIME in q.by:
        if time is None or time.entity is not None:
            raise SemanticQueryError("a semi-additive measure timed by another entity's column, which Baton does not "
                                     "compute yet")
        same.append(exp.EQ(this=grain_expression(time_on(other), time, q.grain or "day", dialect),
                           expression=grain_expression(time_on(root), time, q.grain or "day", dialect)))
    if same:
        inner = inner.where(exp.and_(*same), copy=False)
    return exp.EQ(this=exp.column(column, table=root), expression=exp.Subquery(this=inner))


def _among_filtered(root: str, non_additive: tuple[str, str, tuple[str, ...]], time: TimeColumn | None,
                    time_on: Callable[[str], exp.Expr], q: SemanticQuery, dialect: str,
                    filtered: tuple[exp.Expr, list, list]) -> exp.Expr:
    """``(keys, period, day) IN (SELECT keys, period, MIN/MAX(day) FROM <the branch's rows> WHERE <its
    conditions> GROUP BY keys, period)``: the same FROM, joins and conditions, in a subquery of their own
    (the same aliases, uncorrelated), so the day is taken among the rows the filters keep."""
    from sqlglot import exp

    column, choice, keys = non_additive
    source, joins, conditions = filtered
    subject: list[exp.Expr] = [exp.column(k, table=root) for k in keys]
    if TIME in q.by:
        if time is None or time.entity is not None:
            raise SemanticQueryError("a semi-additive measure timed by another entity's column, which Baton does not "
                                     "compute yet")
        subject.append(grain_expression(time_on(root), time, q.grain or "day", dialect))
    inner = exp.Select().from_(source.copy(), copy=False)
    for join in joins:
        inner = inner.join(join.copy(), copy=False)
    inner = inner.select(*[s.copy() for s in subject], copy=False)
    inner = inner.select((exp.Max if choice == "max" else exp.Min)(this=exp.column(column, table=root)), copy=False)
    inner = inner.where(exp.and_(*[c.copy() for c in conditions]), copy=False)
    if subject:
        inner = inner.group_by(*[s.copy() for s in subject], copy=False)
    this = exp.Tuple(expressions=[*subject, exp.column(column, table=root)]) if subject else exp.column(column, table=root)
    return exp.In(this=this, query=exp.Subquery(this=inner))


__all__ = ["semi_additive"]
