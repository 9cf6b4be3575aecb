"""A semi-additive measure (MetricFlow's ``non_additive_dimension``): a balance is taken on one day.

Only the rows at the first or last day of the measure's time column count, per the keys of its
``window_groupings`` and, when the query groups by metric time, per period — a correlated
``MIN``/``MAX`` on the measure's own table, portable to every engine.
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
                  time_on: Callable[[str], exp.Expr], q: SemanticQuery, dialect: str) -> exp.Expr:
    """The condition on ``root``'s rows (of ``table``): its time column at the min or max among the rows of
    the same keys (``window_groupings``) and, grouped by metric time, of the same period
    (``time_on(alias)``: the measure's time on an alias's rows)."""
    from sqlglot import exp

    column, choice, keys = non_additive
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


__all__ = ["semi_additive"]
