"""Follow-up SQL: the previous answer's query rewritten with sqlglot, never by string pasting.

A follow-up answer keeps a **view** of the query it shows (``View``): the *base* query (the
answer the conversation started from, or a re-grouping / comparison of it) and what was done
on top of it: a share-of-total column, a filter, a sort, a limit. Each follow-up changes the
view and the SQL is built again from the base, so follow-ups compose ("top 2", then "as a
share of the total", then "sort by product") and every figure is computed over the FULL
base result:

    SELECT * FROM (
      SELECT *, SUM(m) OVER () AS __baton_total_m, COUNT(*) OVER () AS __baton_rows,
             100.0 * m / NULLIF(SUM(m) OVER (), 0) AS share_pct       -- window: over every row
      FROM (<base>) AS base
    ) AS shown WHERE <filter> ORDER BY <sort> LIMIT <n>

The window runs before the filter and the limit, so after "Show only the top 2" the total
(and the share) is still the total of every product, not of the two rows shown. Columns
named ``__baton_*`` are taken off the result before it is shown (``strip_hidden``).

Re-grouping (month -> quarter -> year; day -> month ...) re-aggregates the base with the
same function its SQL used for each measure, and only when that function adds up (SUM,
COUNT): an average of averages is not an average, so those need a model. Comparison with the
previous period adds ``previous_<m>`` and ``change_<m>`` (``LAG`` over the periods,
partitioned by the other dimensions); a period whose previous row is not the adjacent period
gets no comparison (``followups.py`` blanks it).

Every SQL built here is run by the specialist that answered, through the same safety check,
pre-validation and read-only engine as any other query (``baton.workspace.followups``). It
lives at the top of the package, beside ``baton.verified.sql``, because the suggestions
(``baton.viz.suggest``, below the workspace) offer only what these rewrites can answer.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, replace
from typing import Any

import sqlglot
from sqlglot import exp

HIDDEN = "__baton_"
TOTAL = HIDDEN + "total_"
ROWS = HIDDEN + "rows"
SHARE = "share_pct"
UNIT_ORDER = ("year", "quarter", "month", "day")
_ADDITIVE = (exp.Sum, exp.Count)


class RewriteError(ValueError):
    """The follow-up cannot be answered by rewriting this SQL (the reason says why)."""


@dataclass(frozen=True)
class View:
    """What a follow-up answer shows of its base query (module docstring)."""

    base: str
    dialect: str | None = None
    measures: tuple[str, ...] = ()  # additive measures whose total is kept (share, insights)
    share: str | None = None
    filter: tuple[str, Any] | None = None
    rank: tuple[str, bool] | None = None  # (column, descending): which rows a limit keeps
    limit: int | None = None
    sort: tuple[str, bool] | None = None  # (column, descending): the order they are shown in
    grain: dict[str, str] = field(default_factory=dict)  # what re-grouping produced: {"column": ..., "unit": ...}

    def to_dict(self) -> dict[str, Any]:
        return {"base": self.base, "dialect": self.dialect, "measures": list(self.measures), "share": self.share,
                "filter": list(self.filter) if self.filter else None, "rank": list(self.rank) if self.rank else None,
                "limit": self.limit, "sort": list(self.sort) if self.sort else None, "grain": dict(self.grain)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> View:
        return cls(str(data["base"]), data.get("dialect"), tuple(data.get("measures") or ()), data.get("share"),
                   tuple(data["filter"]) if data.get("filter") else None,
                   (str(data["rank"][0]), bool(data["rank"][1])) if data.get("rank") else None, data.get("limit"),
                   (str(data["sort"][0]), bool(data["sort"][1])) if data.get("sort") else None, dict(data.get("grain") or {}))

    def changed(self, **changes: Any) -> View:
        return replace(self, **changes)


def _parse(sql: str, dialect: str | None) -> exp.Query:
    try:
        tree = sqlglot.parse_one(sql, read=dialect or None)
    except (sqlglot.errors.ParseError, sqlglot.errors.TokenError) as exc:
        raise RewriteError(f"the previous query cannot be read: {exc}") from None
    if not isinstance(tree, exp.Query):
        raise RewriteError("the previous answer's SQL is not a query")
    return tree


@functools.lru_cache(maxsize=64)
def _read(sql: str, dialect: str | None) -> exp.Query:
    """``_parse``, remembered, for the inspectors that only look (``aggregate_of``,
    ``decimals_of``): a follow-up asks them about each measure of one query. Never modify
    the tree it returns; builders take their own from ``_parse``."""
    return _parse(sql, dialect)


def _col(name: str, table: str | None = None) -> exp.Column:
    return exp.column(name, table=table, quoted=True)


def _sub(tree: exp.Expr, alias: str) -> exp.Subquery:
    return exp.Subquery(this=tree, alias=exp.TableAlias(this=exp.to_identifier(alias)))


def build(view: View, *, hidden: bool = True) -> str:
    """The SQL of ``view`` (module docstring). ``hidden=False``: the same rows without the
    ``__baton_*`` totals, the SQL a person is shown and may edit (internal columns never
    appear there; they are what the run needs for insights over the full result)."""
    inner = _parse(view.base, view.dialect)
    windowed = exp.select("*").from_(_sub(inner, "base"))
    for measure in view.measures if hidden else ():
        windowed = windowed.select(exp.alias_(exp.Window(this=exp.Sum(this=_col(measure))), TOTAL + measure, quoted=True))
    if view.measures and hidden:
        windowed = windowed.select(exp.alias_(exp.Window(this=exp.Count(this=exp.Star())), ROWS, quoted=True))
    if view.share:
        total = exp.Window(this=exp.Sum(this=_col(view.share)))
        ratio = exp.Div(this=exp.Mul(this=exp.Literal.number("100.0"), expression=_col(view.share)),
                        expression=exp.Nullif(this=total, expression=exp.Literal.number(0)))
        share = _rounded(ratio, 1)
        windowed = windowed.select(exp.alias_(share, SHARE, quoted=True))
    outer = exp.select("*").from_(_sub(windowed, "shown"))
    if view.filter is not None:
        column, value = view.filter
        literal = exp.Literal.number(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else exp.Literal.string(str(value))
        outer = outer.where(exp.EQ(this=_col(column), expression=literal))
    if view.limit is not None and view.rank is not None:
        outer = outer.order_by(exp.Ordered(this=_col(view.rank[0]), desc=view.rank[1], nulls_first=False)).limit(view.limit)
        if view.sort is not None and view.sort != view.rank:  # the same rows, shown in another order
            outer = exp.select("*").from_(_sub(outer, "kept"))
    if view.sort is not None and (view.limit is None or view.rank is None or view.sort != view.rank):
        outer = outer.order_by(exp.Ordered(this=_col(view.sort[0]), desc=view.sort[1], nulls_first=False))
    elif view.sort is None and (view.limit is None or view.rank is None):
        # keep the base's order: a derived table's ORDER BY may be dropped (MariaDB does)
        kept = base_order(inner)
        if kept:
            outer = outer.order_by(*[exp.Ordered(this=_col(name), desc=desc) for name, desc in kept])
    return outer.sql(dialect=view.dialect or None)


def base_order(tree: exp.Query) -> list[tuple[str, bool]]:
    """The outermost ORDER BY of ``tree`` as (output column, descending), when every key is
    one of its output columns (by name, alias or identical expression); else []."""
    order = tree.args.get("order")
    select = tree if isinstance(tree, exp.Select) else None
    if order is None or select is None:
        return []
    outputs = {p.alias_or_name: (p.this if isinstance(p, exp.Alias) else p) for p in select.expressions}
    kept = []
    for ordered in order.expressions:
        key = ordered.this
        name = key.name if isinstance(key, exp.Column) and key.name in outputs else None
        if name is None:
            name = next((n for n, body in outputs.items() if body == key), None)
        if name is None:
            return []
        kept.append((name, bool(ordered.args.get("desc"))))
    return kept


def strip_hidden(columns: list[str], rows: list[list[Any]]) -> tuple[list[int], dict[str, Any]]:
    """Indexes of the columns to keep, and the hidden values of the first row (totals)."""
    keep = [i for i, c in enumerate(columns) if not str(c).startswith(HIDDEN)]
    hidden = {str(c): (rows[0][i] if rows else None) for i, c in enumerate(columns) if str(c).startswith(HIDDEN)}
    return keep, hidden


# --- what the base query's measures are ------------------------------------------------------


def _projection(tree: exp.Query, name: str) -> exp.Expr | None:
    select = tree if isinstance(tree, exp.Select) else tree.find(exp.Select)
    if select is None:
        return None
    for projection in select.expressions:
        if projection.alias_or_name == name:
            return projection.this if isinstance(projection, exp.Alias) else projection
    return None


def decimals_of(sql: str, dialect: str | None, column: str) -> int | None:
    """The decimals the base rounds ``column`` to (``ROUND(x, 2)``), if it rounds it."""
    try:
        body = _projection(_read(sql, dialect), column)
    except RewriteError:
        return None
    if isinstance(body, exp.Round) and isinstance(body.args.get("decimals"), exp.Literal):
        try:
            return int(body.args["decimals"].this)
        except ValueError:
            return None
    return None


def _rounded(expression: exp.Expr, decimals: int | None) -> exp.Expr:
    """``expression`` rounded to ``decimals`` (a sum of rounded values, rounded the same way:
    no 2461706.1399999997). Cast to DECIMAL(38, 6) first: PostgreSQL has no ROUND of a
    double precision to a number of places."""
    if decimals is None:
        return expression
    exact = exp.Cast(this=expression, to=exp.DataType.build("DECIMAL(38, 6)"))
    return exp.Round(this=exact, decimals=exp.Literal.number(decimals))


def aggregate_of(sql: str, dialect: str | None, column: str) -> type | None:
    """``exp.Sum``/``exp.Count`` when the base computes ``column`` by adding up (possibly
    rounded, or scaled by a constant: ``ROUND(SUM(x) / 100.0, 2)``); None otherwise."""
    try:
        tree = _read(sql, dialect)
    except RewriteError:
        return None
    body = _projection(tree, column)
    if body is None:
        return None
    while isinstance(body, (exp.Round, exp.Paren, exp.Cast)):
        body = body.this
    if isinstance(body, (exp.Div, exp.Mul)) and isinstance(body.expression, exp.Literal):
        body = body.this
        while isinstance(body, (exp.Round, exp.Paren, exp.Cast)):
            body = body.this
    if isinstance(body, _ADDITIVE):
        return type(body)
    return None


# --- re-grouping and comparison -----------------------------------------------------------------


def _period_expression(column: str, unit: str, dialect: str | None) -> exp.Expr:
    """The period label of ``column``'s ISO text ('YYYY-MM', 'YYYY-MM-DD ...', or a date)."""
    text = exp.Cast(this=_col(column, "base"), to=exp.DataType.build("text"))
    year = exp.Substring(this=text, start=exp.Literal.number(1), length=exp.Literal.number(4))
    if unit == "year":
        return year
    if unit == "month":
        return exp.Substring(this=text.copy(), start=exp.Literal.number(1), length=exp.Literal.number(7))
    if unit == "day":
        return exp.Substring(this=text.copy(), start=exp.Literal.number(1), length=exp.Literal.number(10))
    month = exp.Cast(this=exp.Substring(this=text.copy(), start=exp.Literal.number(6), length=exp.Literal.number(2)),
                     to=exp.DataType.build("int"))
    quarter = exp.Cast(this=exp.Floor(this=exp.Div(this=exp.Paren(this=exp.Add(this=month, expression=exp.Literal.number(2))),
                                                   expression=exp.Literal.number(3))),
                       to=exp.DataType.build("int"))
    return exp.Concat(expressions=[year, exp.Literal.string("-Q"), exp.Cast(this=quarter, to=exp.DataType.build("text"))])


def regroup_sql(base: str, dialect: str | None, time_column: str, unit: str, dimensions: list[str], measures: list[str]) -> str:
    """``base`` re-aggregated by ``unit`` periods of ``time_column`` (and ``dimensions``)."""
    functions = {m: aggregate_of(base, dialect, m) for m in measures}
    cannot = [m for m, f in functions.items() if f is None]
    if cannot:
        raise RewriteError(f"{', '.join(cannot)} is not a sum or a count in the query, so it cannot be added up by {unit}")
    period = _period_expression(time_column, unit, dialect)
    select = exp.select(exp.alias_(period, unit, quoted=True))
    for d in dimensions:
        select = select.select(_col(d, "base"))
    for m in measures:
        total = _rounded(exp.Sum(this=_col(m, "base")), decimals_of(base, dialect, m))
        select = select.select(exp.alias_(total, m, quoted=True))
    select = select.from_(_sub(_parse(base, dialect), "base"))
    keys = [period.copy(), *[_col(d, "base") for d in dimensions]]
    select = select.group_by(*keys).order_by(*[exp.Ordered(this=k.copy()) for k in keys])
    return select.sql(dialect=dialect or None)


def compare_sql(base: str, dialect: str | None, time_column: str, dimensions: list[str], measures: list[str]) -> str:
    """``base`` with ``previous_<m>`` and ``change_<m>`` per period (LAG over the periods)."""
    select = exp.select("*").from_(_sub(_parse(base, dialect), "base"))
    for m in measures:
        lag = exp.Window(this=exp.Anonymous(this="LAG", expressions=[_col(m)]),
                         partition_by=[_col(d) for d in dimensions] or None,
                         order=exp.Order(expressions=[exp.Ordered(this=_col(time_column))]))
        select = select.select(exp.alias_(lag, f"previous_{m}", quoted=True))
        change = _rounded(exp.Sub(this=_col(m), expression=lag.copy()), decimals_of(base, dialect, m))
        select = select.select(exp.alias_(change, f"change_{m}", quoted=True))
    select = select.order_by(*[exp.Ordered(this=_col(d)) for d in dimensions], exp.Ordered(this=_col(time_column)))
    return select.sql(dialect=dialect or None)


def coarser(current: str | None, wanted: str) -> bool:
    """True when ``wanted`` periods can be made from ``current`` ones (month -> quarter)."""
    return current in UNIT_ORDER and wanted in UNIT_ORDER and UNIT_ORDER.index(wanted) < UNIT_ORDER.index(current)


__all__ = ["HIDDEN", "RewriteError", "SHARE", "TOTAL", "View", "aggregate_of", "build", "coarser", "compare_sql",
           "decimals_of", "regroup_sql", "strip_hidden"]
