"""A cumulative metric at a grain coarser than day: MetricFlow's ``period_agg`` of its days.

MetricFlow computes a cumulative metric for each day of the time spine, then shows for a week,
month, quarter or year the value of the period's first day (``first``, the default), its last
(``last``) or the mean of its days (``average``) — the days that have a value, within each group
of the other group-bys. ``timespine.cumulative_part`` builds the daily rows (with ``baton_day``);
``over_days`` takes the period's value of them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from baton.semantic.measure_uses import Use, leaves
from baton.semantic.model import SemanticModel
from baton.semantic.query import SemanticQuery, SemanticQueryError

if TYPE_CHECKING:
    from sqlglot import exp

COARSER = ("week", "month", "quarter", "year")
DAY_COLUMN = "baton_day"


def period_aggs(model: SemanticModel, q: SemanticQuery) -> dict[Use, str]:
    """Each cumulative measure use the query reads, with its metric's ``period_agg``; one use read by
    metrics asking different ones (the same column) is refused by name."""
    found: dict[Use, str] = {}
    for name in q.metrics:
        for leaf, use in leaves(model, name):
            agg = model.metric(leaf).period_agg
            if use[2] and found.setdefault(use, agg) != agg:
                raise SemanticQueryError("one cumulative measure read by metrics with different period_agg, which Baton "
                                         "does not compute yet")
    return found


def over_days(daily: exp.Select, keys: list[str], columns: list[tuple[str, str | None]]) -> exp.Select:
    """Each period's row of ``daily`` (one row per day and group, its day as ``baton_day``): every
    ``columns`` entry (name, period_agg) taken over the days of its group (``keys``); a column with
    no period_agg (another branch's measure) stays NULL."""
    from sqlglot import exp

    def partition() -> list[exp.Expr]:
        return [exp.column(k, table="baton_daily") for k in keys]

    order = exp.Order(expressions=[exp.Ordered(this=exp.column(DAY_COLUMN, table="baton_daily"), nulls_first=False)])
    whole = exp.WindowSpec(kind="ROWS", start="UNBOUNDED", start_side="PRECEDING", end="UNBOUNDED", end_side="FOLLOWING")
    middle = exp.Select().from_(exp.alias_(exp.Subquery(this=daily), "baton_daily", table=True), copy=False)
    for key in keys:
        middle = middle.select(exp.alias_(exp.column(key, table="baton_daily"), key), copy=False)
    outer = exp.Select()
    for name, agg in columns:
        if agg is None:
            continue
        value = exp.column(name, table="baton_daily")
        if agg == "average":
            window = exp.Window(this=exp.Avg(this=value), partition_by=partition(), over="OVER")
        else:
            fn = exp.FirstValue if agg == "first" else exp.LastValue
            window = exp.Window(this=fn(this=value), partition_by=partition(), order=order.copy(), spec=whole.copy(),
                                over="OVER")
        middle = middle.select(exp.alias_(window, name), copy=False)
    for key in keys:
        outer = outer.select(exp.alias_(exp.column(key, table="baton_periods"), key), copy=False)
    for name, agg in columns:
        taken: exp.Expr = exp.Max(this=exp.column(name, table="baton_periods")) if agg is not None else exp.Null()
        outer = outer.select(exp.alias_(taken, name), copy=False)
    outer = outer.from_(exp.alias_(exp.Subquery(this=middle), "baton_periods", table=True), copy=False)
    return outer.group_by(*[exp.column(k, table="baton_periods") for k in keys], copy=False)


__all__ = ["COARSER", "DAY_COLUMN", "over_days", "period_aggs"]
