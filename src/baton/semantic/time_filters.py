"""A MetricFlow filter on metric time, read as the days it keeps (then a query's periods).

MetricFlow renders ``{{ TimeDimension('metric_time', 'month') }}`` as metric time truncated to
its grain and applies the filter's SQL to the rows (to the time spine's days for a cumulative
metric, to the moved time for an offset one: where Baton applies a query's periods). On metric
time such a filter keeps a set of days, computed here exactly:

- ``t_G >= L`` keeps the days from the first period start at or after ``L``; ``t_G > L`` from
  the start of the period after the one holding ``L``; ``<`` and ``<=`` the days before those;
- ``t_G = L`` keeps the period starting at ``L`` (none when ``L`` starts no period: refused, as a
  filter that keeps nothing is more likely a mistake than a question);
- ``AND``, ``OR``, parentheses, ``BETWEEN`` and ``CAST(... AS TIMESTAMP | DATE)`` on either side
  combine and wrap them. ``L`` is a date or a timestamp literal.

Anything else over metric time (a function of it, ``NOT``, ``!=``, a comparison with a column) is
a ``SemanticQueryError`` naming it. The kept days become whole periods (``periods_of``); an
open-ended range (``>= '2020-01-03'`` alone) one period with an open bound. Metric time at an
hour, minute or second keeps a range of times instead (``subdaily_bounds``: a ``Period.between``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import TYPE_CHECKING

from baton.semantic.model import GRAINS
from baton.semantic.periods import Period
from baton.semantic.query import SemanticQueryError

if TYPE_CHECKING:
    from sqlglot import exp

Range = tuple[dt.date | None, dt.date | None]  # [start, end) of days; None: unbounded
Ranges = list[Range]
# a column of a filter -> its grain ("" when the filter names none) when it is metric time, else None
TimeRef = Callable[["exp.Column"], str | None]
EVERY_DAY: Ranges = [(None, None)]
_FLIP = {"GTE": "LTE", "GT": "LT", "LT": "GT", "LTE": "GTE", "EQ": "EQ"}


def _floor(day: dt.date, grain: str) -> dt.date:
    if grain == "week":
        return day - dt.timedelta(days=day.weekday())
    if grain == "month":
        return day.replace(day=1)
    if grain == "quarter":
        return day.replace(month=3 * ((day.month - 1) // 3) + 1, day=1)
    if grain == "year":
        return day.replace(month=1, day=1)
    return day


def _next(start: dt.date, grain: str) -> dt.date:
    if grain in ("day", "week"):
        return start + dt.timedelta(days=1 if grain == "day" else 7)
    months = {"month": 1, "quarter": 3, "year": 12}[grain]
    index = start.year * 12 + start.month - 1 + months
    return dt.date(index // 12, index % 12 + 1, 1)


def _literal(node: exp.Expr) -> dt.datetime | None:
    """A date or timestamp literal (``'2020-01-01'``, ``CAST('2020-01-01' AS TIMESTAMP)``), else None."""
    from sqlglot import exp

    if isinstance(node, exp.Cast) and node.to.this in (exp.DataType.Type.TIMESTAMP, exp.DataType.Type.DATE,
                                                       exp.DataType.Type.DATETIME):
        node = node.this
    if not isinstance(node, exp.Literal) or not node.is_string:
        return None
    try:
        value = dt.datetime.fromisoformat(node.this.strip())
    except ValueError:
        return None
    return value if value.tzinfo is None and 1900 <= value.year <= 2200 else None


def _subject(node: exp.Expr, ref: TimeRef) -> str | None:
    """The grain of metric time when ``node`` is it (bare or in a CAST to a time type), else None."""
    from sqlglot import exp

    if isinstance(node, exp.Cast) and node.to.this in (exp.DataType.Type.TIMESTAMP, exp.DataType.Type.DATE,
                                                       exp.DataType.Type.DATETIME):
        node = node.this
    return ref(node) if isinstance(node, exp.Column) else None


def _atom(operator: str, grain: str, literal: dt.datetime) -> Ranges:
    day = literal.date()
    floor = _floor(day, grain)
    starts_period = literal == dt.datetime.combine(floor, dt.time())
    ceil = floor if starts_period else _next(floor, grain)  # the first period start at or after the literal
    after = _next(floor, grain)  # the first period start after the literal
    if operator == "GTE":
        return [(ceil, None)]
    if operator == "GT":
        return [(after, None)]
    if operator == "LT":
        return [(None, ceil)]
    if operator == "LTE":
        return [(None, after)]
    return [(floor, after)] if starts_period else []


def intersect(a: Ranges, b: Ranges) -> Ranges:
    out: Ranges = []
    for lo1, hi1 in a:
        for lo2, hi2 in b:
            lo = lo1 if lo2 is None else lo2 if lo1 is None else max(lo1, lo2)
            hi = hi1 if hi2 is None else hi2 if hi1 is None else min(hi1, hi2)
            if lo is None or hi is None or lo < hi:
                out.append((lo, hi))
    return _union(out, [])


def _union(a: Ranges, b: Ranges) -> Ranges:
    """The ranges of ``a`` and ``b`` merged, sorted, none overlapping or touching."""
    items = sorted(a + b, key=lambda r: (r[0] is not None, r[0] or dt.date.min))
    out: Ranges = []
    for lo, hi in items:
        if out and (out[-1][1] is None or (lo is not None and lo <= out[-1][1])):
            last_lo, last_hi = out[-1]
            out[-1] = (last_lo, None if last_hi is None or hi is None else max(last_hi, hi))
            continue
        out.append((lo, hi))
    return out


def mentions_time(tree: exp.Expr, ref: TimeRef) -> bool:
    """Whether a filter part names metric time anywhere."""
    from sqlglot import exp

    return any(ref(column) is not None for column in tree.find_all(exp.Column))


def day_ranges(tree: exp.Expr, ref: TimeRef, default_grain: str, text: str) -> Ranges:
    """The days a filter over metric time keeps (module docstring), or ``SemanticQueryError``."""
    from sqlglot import exp

    def refuse(what: str) -> SemanticQueryError:
        return SemanticQueryError(f"the time filter {text!r}: {what} (Baton reads metric time compared with dates, "
                                  "joined by AND and OR)")

    def grain_of(name: str) -> str:
        grain = name or default_grain
        if grain not in GRAINS:
            raise refuse(f"metric time by {grain}")
        return grain

    def visit(node: exp.Expr) -> Ranges:
        if isinstance(node, exp.Paren):
            return visit(node.this)
        if isinstance(node, exp.And):
            return intersect(visit(node.this), visit(node.expression))
        if isinstance(node, exp.Or):
            return _union(visit(node.this), visit(node.expression))
        if isinstance(node, exp.Between):
            grain, low, high = _subject(node.this, ref), _literal(node.args["low"]), _literal(node.args["high"])
            if grain is None or low is None or high is None:
                raise refuse(f"{node.sql()!r}")
            return intersect(_atom("GTE", grain_of(grain), low), _atom("LTE", grain_of(grain), high))
        operator = type(node).__name__
        if operator not in _FLIP:
            raise refuse(f"{node.sql()!r}")
        left, right = node.this, node.expression
        grain, literal = _subject(left, ref), _literal(right)
        if grain is None:
            grain, literal, operator = _subject(right, ref), _literal(left), _FLIP[operator]
        if grain is None or literal is None:
            raise refuse(f"{node.sql()!r}")
        return _atom(operator, grain_of(grain), literal)

    return visit(tree)


Bounds = tuple[dt.datetime | None, dt.datetime | None]  # [start, end) of times at a sub-daily grain; None: unbounded
_STEP = {"hour": dt.timedelta(hours=1), "minute": dt.timedelta(minutes=1), "second": dt.timedelta(seconds=1)}


def _floor_time(value: dt.datetime, grain: str) -> dt.datetime:
    value = value.replace(microsecond=0)
    return value.replace(minute=0, second=0) if grain == "hour" else value.replace(second=0) if grain == "minute" else value


def subdaily_bounds(tree: exp.Expr, ref: TimeRef, text: str) -> Bounds | None:
    """The times a filter part over metric time at a sub-daily grain (hour, minute, second) keeps, as
    MetricFlow compares metric time truncated to that grain with a timestamp (``t_G >= L``: from the
    first period start at or after ``L``; ``t_G <= L``: up to the end of the period holding it), ``AND``
    and ``BETWEEN`` of them; None when the part names no such grain; else ``SemanticQueryError``."""
    from sqlglot import exp

    grains = {ref(c) for c in tree.find_all(exp.Column)} - {None}
    if not grains & set(_STEP) and not grains & {"millisecond"}:
        return None
    if len(grains) != 1 or "millisecond" in grains:
        raise SemanticQueryError(f"the time filter {text!r}: metric time at a sub-daily grain beside another grain or by "
                                 "millisecond, which Baton does not compute yet")
    grain = str(next(iter(grains)))

    def atom(operator: str, literal: dt.datetime) -> Bounds:
        floor = _floor_time(literal, grain)
        ceil = floor if floor == literal else floor + _STEP[grain]
        after = floor + _STEP[grain]
        return {"GTE": (ceil, None), "GT": (after, None), "LT": (None, ceil), "LTE": (None, after)}[operator]

    def both(a: Bounds, b: Bounds) -> Bounds:
        lo = a[0] if b[0] is None else b[0] if a[0] is None else max(a[0], b[0])
        hi = a[1] if b[1] is None else b[1] if a[1] is None else min(a[1], b[1])
        return lo, hi

    def visit(node: exp.Expr) -> Bounds:
        if isinstance(node, exp.Paren):
            return visit(node.this)
        if isinstance(node, exp.And):
            return both(visit(node.this), visit(node.expression))
        if isinstance(node, exp.Between):
            low, high = _literal(node.args["low"]), _literal(node.args["high"])
            if _subject(node.this, ref) is None or low is None or high is None:
                raise SemanticQueryError(f"the time filter {text!r}: {node.sql()!r} at a sub-daily grain")
            return both(atom("GTE", low), atom("LTE", high))
        operator = type(node).__name__
        left, right = node.this, node.args.get("expression")
        subject, literal = _subject(left, ref), _literal(right) if right is not None else None
        if subject is None and right is not None:
            subject, literal, operator = _subject(right, ref), _literal(left), _FLIP.get(operator, operator)
        if operator not in ("GTE", "GT", "LT", "LTE") or subject is None or literal is None:
            raise SemanticQueryError(f"the time filter {text!r}: {node.sql()!r} at a sub-daily grain (Baton reads "
                                     ">=, >, <, <= and BETWEEN with timestamps, joined by AND)")
        return atom(operator, literal)

    return visit(tree)


def periods_of(ranges: Ranges, text: str, make: Callable[[str, str], tuple[Period, ...]]) -> tuple[Period, ...]:
    """The kept days as whole periods (``make``: a bounded range as its periods); an open-ended range
    as one period ``from 2020-01-03`` / ``before 2020-01-03`` (``Period.parse``: open bounds that sort
    after / before every date); every day kept: no period."""
    if not ranges:
        raise SemanticQueryError(f"the time filter {text!r} keeps no day (a date that starts no period of its grain)")
    periods: list[Period] = []
    for lo, hi in ranges:
        if lo is None and hi is None:
            return ()
        if lo is None or hi is None:  # Period.parse reads its label back (a saved query, a follow-up)
            periods.append(Period.parse(f"from {lo.isoformat()}" if lo else f"before {hi.isoformat()}"))  # type: ignore[union-attr]
            continue
        periods.extend(make(lo.isoformat(), hi.isoformat()))
    return tuple(periods)


__all__ = ["EVERY_DAY", "Bounds", "Ranges", "TimeRef", "day_ranges", "intersect", "mentions_time", "periods_of",
           "subdaily_bounds"]
