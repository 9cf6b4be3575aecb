"""A MetricFlow query's ``where`` (its list of filters) as what a ``SemanticQuery`` holds.

Each filter is SQL with MetricFlow's Jinja calls in it (``mf_filters``). Read here: value lists
(``{{ Dimension(...) }} = 'value'``, ``IN (...)``), ranges on metric time that are whole periods,
``Metric(...)`` filters compared with a number, and other conditions over dimensions as SQL over
``dimension.<name>``. Anything else is a ``SemanticQueryError`` naming what is not read.

How a call names an element (a dimension, metric time) is the query reader's (``mf_query``): it
passes its readers in as ``Names``, so that the group-by and the filters read names one way.
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Callable
from dataclasses import dataclass

from baton.semantic.custom_grains import is_custom
from baton.semantic.errors import SemanticModelError
from baton.semantic.mf_filters import JinjaCall, calls_in
from baton.semantic.model import TIME, SemanticModel
from baton.semantic.periods import Period
from baton.semantic.query import SemanticQueryError, measures_of_metrics
from baton.semantic.time_filters import EVERY_DAY, Bounds, day_ranges, intersect, mentions_time, periods_of, subdaily_bounds
from baton.semantic.timegroup import ALL_GRAINS, TimeGroup

METRIC_TIME = "metric_time"


@dataclass(frozen=True, slots=True)
class Names:
    """The query reader's ways of naming elements: a group-by text as a call, a call as the
    model's dimension, a time call as its time group (metric time when the metrics' own)."""

    element: Callable[[str], JinjaCall]
    dimension: Callable[[SemanticModel, JinjaCall, tuple[str, ...]], str]
    # a time call as the time group it names (metric time or a time dimension, at a grain), None if no time
    time_item: Callable[[SemanticModel, JinjaCall, tuple[str, ...]], TimeGroup | None]


def _periods(start: str | None, end: str | None) -> tuple[Period, ...]:
    """A half-open range of dates as the whole periods it is, or ``SemanticQueryError``."""
    if start is None or end is None:
        raise SemanticQueryError("an open-ended time range (Baton reads whole days, months, quarters and years)")
    try:
        lo, hi = dt.date.fromisoformat(start[:10]), dt.date.fromisoformat(end[:10])
    except ValueError:
        raise SemanticQueryError(f"the time range {start!r} to {end!r}") from None
    for label in (f"{lo.year}", f"{lo.year}-Q{(lo.month - 1) // 3 + 1}", f"{lo.year}-{lo.month:02d}", lo.isoformat()):
        period = Period.parse(label)
        if period.start == lo.isoformat() and period.end == hi.isoformat():
            return (period,)
    months = (hi.year - lo.year) * 12 + hi.month - lo.month
    if lo.day == 1 and hi.day == 1 and 0 < months <= 100:  # whole months: data kept by month is filtered by its own grain
        return tuple(Period.parse(f"{(lo.year * 12 + lo.month - 1 + i) // 12}-{(lo.month - 1 + i) % 12 + 1:02d}")
                     for i in range(months))
    days = (hi - lo).days
    if 0 < days <= 100:  # the days of a range, at most as many values as a query's filter takes
        return tuple(Period.parse((lo + dt.timedelta(days=i)).isoformat()) for i in range(days))
    if 100 < days <= 3660:  # the days up to the first whole month, the whole months, the days after the last
        first = lo if lo.day == 1 else dt.date(lo.year + lo.month // 12, lo.month % 12 + 1, 1)
        last = hi.replace(day=1)
        if first < last:
            head = _periods(lo.isoformat(), first.isoformat()) if lo < first else ()
            tail = _periods(last.isoformat(), hi.isoformat()) if last < hi else ()
            return (*head, *_periods(first.isoformat(), last.isoformat()), *tail)
    raise SemanticQueryError(f"the time range {start!r} to {end!r} (not whole periods)")


def where_of(model: SemanticModel, texts: list[str], measures: tuple[str, ...], names: Names):
    """A query's ``where`` as (value lists, periods of metric time, conditions, metric filters, and the
    time groups the conditions name as ``dimension.<group>``: a custom grain's, ``custom_grains.py``)."""
    import sqlglot
    from sqlglot import exp

    values: list[tuple[str, tuple[str, ...]]] = []
    conditions: list[str] = []
    metric_filters: list[tuple[str, str, str, str]] = []
    kept = EVERY_DAY  # the days the filters on metric time keep (time_filters.py)
    timed: list[str] = []
    bounds: Bounds | None = None  # the times filters on metric time at a sub-daily grain keep (time_filters.py)
    groups: dict[str, TimeGroup] = {}
    default_grain = model.finest_grain(measures) or "day"
    for text in texts:
        placeholders: dict[str, JinjaCall] = {}
        condition = text
        try:
            found = calls_in(text, "where")
        except SemanticModelError as exc:
            raise SemanticQueryError(str(exc)) from None
        for i, (block, call) in enumerate(found):
            placeholders[f"baton_p{i}"] = call
            condition = condition.replace(block, f"baton_p{i}")
        try:
            tree = sqlglot.parse_one(condition)
        except sqlglot.errors.ParseError:
            raise SemanticQueryError(f"the filter {text!r}") from None
        ref = functools.partial(_metric_time_ref, model, placeholders, measures, names, text)
        for part in tree.flatten() if isinstance(tree, exp.And) else [tree]:
            if _custom_grains_in(model, part, placeholders):  # SQL over the spine's periods, as MetricFlow applies it
                conditions.append(_condition(model, part, placeholders, measures, text, names, groups))
                continue
            times = subdaily_bounds(part, ref, text) if mentions_time(part, ref) else None
            if times is not None:  # metric time at an hour, minute or second: a range of times
                bounds = times if bounds is None else (max(filter(None, (bounds[0], times[0])), default=None),
                                                       min(filter(None, (bounds[1], times[1])), default=None))
                continue
            if mentions_time(part, ref):
                kept = intersect(kept, day_ranges(part, ref, default_grain, text))
                timed.append(text)
                continue
            subject = part.this if isinstance(part, (exp.EQ, exp.In, exp.GTE, exp.GT, exp.LT, exp.LTE)) else None
            element = placeholders.get(subject.name) if isinstance(subject, exp.Column) else None
            if element is not None and element.function == "Metric":
                metric_filters.append(_metric_filter(model, element, part, measures, text, names))
                continue
            if element is None or (element.function in ("Dimension", "Entity") and not _simple(part)):
                conditions.append(_condition(model, part, placeholders, measures, text, names))
                continue
            name = names.dimension(model, element, measures)
            if isinstance(part, exp.EQ) and isinstance(part.expression, exp.Literal):
                values.append((name, (part.expression.this,)))
            elif isinstance(part, exp.In) and all(isinstance(v, exp.Literal) for v in part.expressions):
                values.append((name, tuple(v.this for v in part.expressions)))
            else:
                raise SemanticQueryError(f"the filter {text!r} (Baton reads = and IN on dimensions)")
    periods = periods_of(kept, " AND ".join(dict.fromkeys(timed)), _periods) if timed else ()
    if bounds is not None:
        if timed or bounds[0] is None or bounds[1] is None:
            raise SemanticQueryError("a filter on metric time at a sub-daily grain open-ended or beside a filter on it at "
                                     "a day or coarser, which Baton does not compute yet")
        periods = (Period.between(bounds[0], bounds[1]),)
    return tuple(values), periods, tuple(conditions), tuple(metric_filters), tuple(groups.values())


def _time_call(placeholders: dict[str, JinjaCall], column) -> JinjaCall | None:
    """The time a filter's column names: a ``TimeDimension``/metric-time call, or a bare
    ``metric_time[__<grain>]`` or ``revenue_instance__ds__day`` (MetricFlow reads those names in a
    where too); else None."""
    if column.table:
        return None
    call = placeholders.get(column.name)
    if call is None:  # a bare name: metric_time[__<grain>], or <entity>__<time dimension>__<grain>
        parts = column.name.lower().split("__")
        if parts[0] == METRIC_TIME and len(parts) <= 2:
            return JinjaCall("TimeDimension", METRIC_TIME, grain=parts[1] if len(parts) == 2 else None)
        if len(parts) >= 3 and parts[-1] in ALL_GRAINS:
            return JinjaCall("TimeDimension", "__".join(parts[:-1]), grain=parts[-1])
        return None
    if call.function == "Metric" or not (call.function == "TimeDimension" or call.grain or call.date_part
                                         or call.path[-1] == METRIC_TIME):
        return None
    return call


def _custom_grains_in(model: SemanticModel, part, placeholders: dict[str, JinjaCall]) -> bool:
    from sqlglot import exp

    return any(call is not None and is_custom(model, call.grain)
               for call in (_time_call(placeholders, column) for column in part.find_all(exp.Column)))


def _metric_time_ref(model: SemanticModel, placeholders: dict[str, JinjaCall], measures: tuple[str, ...], names: Names,
                     text: str, column) -> str | None:
    """A filter's column as metric time (its grain, "" when it names none), else None: a
    ``TimeDimension``/``Dimension`` call of metric time or of the metrics' own time, or a bare
    ``metric_time``/``metric_time__<grain>`` (MetricFlow reads those names in a where too). A
    time dimension that is not the metrics' own time (``Names.time_item``) is refused by name."""
    call = _time_call(placeholders, column)
    if call is None:
        return None
    if call.date_part:
        raise SemanticQueryError(f"the time filter {text!r}: date_part {call.date_part!r} of metric time")
    group = names.time_item(model, call, measures)  # as the group-by reads it: metric time, or another time dimension
    if group is None or group.dimension != TIME:
        raise SemanticQueryError(f"the time filter {text!r} on {call.name!r}, a time dimension that is not the metrics' "
                                 "own time (metric_time), at a standard grain, which Baton does not compute yet")
    return call.grain.lower() if call.grain else ""


def _metric_filter(model: SemanticModel, call: JinjaCall, part, measures: tuple[str, ...], text: str, names: Names):
    """``{{ Metric('bookings', group_by=['listing']) }} > 2`` as (metric, dimension, operator, number)."""
    from sqlglot import exp

    operators = {exp.GT: ">", exp.GTE: ">=", exp.LT: "<", exp.LTE: "<=", exp.EQ: "=", exp.NEQ: "!="}
    operator = operators.get(type(part))
    number = part.expression if operator else None
    if isinstance(number, exp.Neg) and isinstance(number.this, exp.Literal):
        value = f"-{number.this.this}"
    elif isinstance(number, exp.Literal) and not number.is_string:
        value = str(number.this)
    else:
        raise SemanticQueryError(f"the filter {text!r} (Baton reads a Metric(...) compared with a number)")
    if len(call.group_by) != 1:
        raise SemanticQueryError("a Metric(...) filter grouped by other than one entity or dimension")
    metric = call.name
    dimension = names.dimension(model, names.element(call.group_by[0]), measures)
    names.dimension(model, names.element(call.group_by[0]), measures_of_metrics(model, (metric,)))
    return metric, dimension, operator, value


def _simple(part) -> bool:
    """``dimension = 'literal'`` or ``dimension IN ('a', 'b')``: a value list of the query."""
    from sqlglot import exp

    if isinstance(part, exp.EQ):
        return isinstance(part.expression, exp.Literal)
    return isinstance(part, exp.In) and bool(part.expressions) and all(isinstance(v, exp.Literal) for v in part.expressions)


def _condition(model: SemanticModel, part, placeholders: dict[str, JinjaCall], measures: tuple[str, ...], text: str,
               names: Names, groups: dict[str, TimeGroup] | None = None) -> str:
    """A filter part beyond value lists as SQL over ``dimension.<name>``: every column in it must
    be a call to a dimension or entity, or (``groups`` given) a time at a custom grain, named by its
    time group; metric time at other grains, other time dimensions, a metric: refused by name."""
    from sqlglot import exp

    def swap(node):
        if isinstance(node, exp.Column):
            time = _time_call(placeholders, node) if groups is not None else None
            if time is not None:
                group = names.time_item(model, time, measures)
                if group is None or not is_custom(model, group.grain) or group.date_part:
                    raise SemanticQueryError(f"the time filter {text!r}: a custom grain beside another time "
                                             f"({node.sql()!r}) in one condition, which Baton does not compute yet")
                groups[group.name] = group  # type: ignore[index]  # groups is not None here
                return exp.column(group.name, table="dimension")
            call = placeholders.get(node.name) if not node.table else None
            if call is None:
                raise SemanticQueryError(f"the filter {text!r} names {node.sql()!r}, which is not a MetricFlow call")
            if call.function == "Metric":
                raise SemanticQueryError("a Metric(...) filter (rows filtered by another metric's value)")
            if call.function == "TimeDimension" or call.grain or call.date_part or call.path[-1] == METRIC_TIME:
                raise SemanticQueryError(f"the time filter {text!r} (Baton reads >= start AND < end on metric time)")
            return exp.column(names.dimension(model, call, measures), table="dimension")
        return node

    return part.copy().transform(swap).sql()


__all__ = ["Names", "where_of"]
