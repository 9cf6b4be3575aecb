"""A MetricFlow query (``mf query`` / a saved query's ``query_params``) as a ``SemanticQuery``.

MetricFlow names what a query groups by as ``metric_time__month``, ``customer__country``,
``customer`` (an entity), or as calls: ``TimeDimension('metric_time', 'day')``,
``Dimension('customer__country')``, ``Entity('customer')``. Its ``where`` is a list of
filters with the same calls; ``order_by`` names outputs, ``-`` first for descending.

Read here: group-by on ``metric_time`` at day, week, month, quarter or year (without a grain,
the finest the metrics are kept by, as MetricFlow does) and on every dimension and entity
the model has (by its own name or any of MetricFlow's qualified names); filters of the forms
``{{ Dimension(...) }} = 'value'`` and ``IN ('a', 'b')``, and ranges on metric time that are
whole days, months, quarters or years (``>= '2022-01-01' AND < '2022-04-01'``). Anything else
is a ``SemanticQueryError`` saying what is not read — never a query that quietly means less.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from baton.semantic.errors import SemanticModelError
from baton.semantic.mf_filters import JinjaCall, calls_in, filters_of, parse_call
from baton.semantic.model import GRAINS, TIME, SemanticModel
from baton.semantic.query import Period, SemanticQuery, SemanticQueryError, measures_of_metrics

METRIC_TIME = "metric_time"


def _element(text: str) -> JinjaCall:
    text = text.strip()
    if "(" in text:
        try:
            return parse_call(text)
        except ValueError as exc:
            raise SemanticQueryError(f"group by {text!r}: {exc}") from None
    parts = text.split("__")
    if parts[-1] in (*GRAINS, "hour", "minute", "second", "millisecond") and len(parts) > 1:
        return JinjaCall("TimeDimension", "__".join(parts[:-1]), grain=parts[-1])
    return JinjaCall("Dimension", text)


def _dimension(model: SemanticModel, call: JinjaCall, measures: tuple[str, ...]) -> str:
    """The model's dimension a MetricFlow element names (by name or qualified name). A multi-hop
    name (``listing__user__home_state``) says the path: Baton must reach the dimension from every
    measure in as many joins, or it would be another dimension (the listing's user is not the guest)."""
    path = call.path
    wanted = {"__".join(path[-2:]), "__".join(path)} if len(path) > 1 else {path[0]}
    for dimension in model.dimensions:
        if wanted & set(dimension.qualified) or (len(path) == 1 and dimension.name == path[0]):
            for measure in measures:
                entity = model.measure(measure).entity
                if dimension.local_expr(entity) is not None:
                    continue
                route = model.path(entity, dimension.entity)
                if len(path) > 2 and route is not None and len(route) not in (len(path) - 1, 0):
                    raise SemanticQueryError(f"{call.name!r} through the entity path {'/'.join(path[:-1])}: Baton joins "
                                             f"{model.measure(measure).entity} to it another way")
            return dimension.name
    for name in wanted:
        refusal = model.refusal(name, "dimension")
        if refusal is not None:
            raise SemanticQueryError(refusal.message)
    raise SemanticQueryError(f"no dimension or entity {call.name!r} in the model")


def _is_metric_time(model: SemanticModel, call: JinjaCall, measures: tuple[str, ...]) -> bool:
    """``metric_time``, or a time dimension that is every measure's own time (``booking__ds``)."""
    if call.path[-1] == METRIC_TIME:
        return True
    if call.function == "Dimension" and not call.grain:
        return False
    column = call.path[-1]
    times = {model.time_of(m) for m in measures}
    owners = {_prefixes(model, model.measure(m).entity) for m in measures}
    own = len(call.path) == 1 or (len(call.path) == 2 and all(call.path[0] in prefixes for prefixes in owners))
    if own and len(times) == 1 and None not in times and next(iter(times)).column == column:  # type: ignore[union-attr]
        return True
    raise SemanticQueryError(f"grouping by the time dimension {call.name!r}, which is not the metrics' own time "
                             "(metric_time)")


def _default_grain(model: SemanticModel, metrics: tuple[str, ...], measures: tuple[str, ...]) -> str:
    """Metric time's grain when a query names none, as MetricFlow takes it: the finest of each
    metric's own (its ``time_granularity``, else the finest its data is kept by), never finer
    than every metric's data allows."""
    grains = []
    for name in metrics:
        own = model.metric(name).grain or model.finest_grain(tuple(model.measures_of(name))) or "day"
        grains.append(GRAINS.index(own))
    floor = GRAINS.index(model.finest_grain(measures) or "day")
    return GRAINS[max(min(grains, default=floor), floor)]


def _prefixes(model: SemanticModel, entity: str) -> frozenset[str]:
    """The entity names a semantic model qualifies its own dimensions with (``booking`` of
    ``booking__is_instant``): ``listing__ds`` on bookings is the listing's date, not the booking's."""
    return frozenset(q.split("__")[0] for d in model.dimensions if d.entity == entity for q in d.qualified
                     if q.count("__") == 1)


def _grain(call: JinjaCall) -> str | None:
    if call.date_part:
        raise SemanticQueryError(f"date_part {call.date_part!r} of metric time")
    if call.grain is not None and call.grain.lower() not in GRAINS:
        raise SemanticQueryError(f"the time grain {call.grain!r} (Baton reads day, week, month, quarter and year)")
    return call.grain.lower() if call.grain else None


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


def _where(model: SemanticModel, texts: list[str], measures: tuple[str, ...]):
    import sqlglot
    from sqlglot import exp

    values: list[tuple[str, tuple[str, ...]]] = []
    conditions: list[str] = []
    metric_filters: list[tuple[str, str, str, str]] = []
    start = end = None
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
        for part in tree.flatten() if isinstance(tree, exp.And) else [tree]:
            subject = part.this if isinstance(part, (exp.EQ, exp.In, exp.GTE, exp.GT, exp.LT, exp.LTE)) else None
            element = placeholders.get(subject.name) if isinstance(subject, exp.Column) else None
            if element is not None and element.function == "Metric":
                metric_filters.append(_metric_filter(model, element, part, measures, text))
                continue
            if element is None or (element.function in ("Dimension", "Entity") and element.path[-1] != METRIC_TIME
                                   and not element.grain and not _simple(part)):
                conditions.append(_condition(model, part, placeholders, measures, text))
                continue
            call = element
            if call.function != "Metric" and call.path[-1] == METRIC_TIME or call.function == "TimeDimension":
                _is_metric_time(model, call, measures)
                literal = part.expression
                if not isinstance(literal, exp.Literal) or not isinstance(part, (exp.GTE, exp.LT)):
                    raise SemanticQueryError(f"the time filter {text!r} (Baton reads >= start AND < end)")
                if isinstance(part, exp.GTE):
                    start = literal.this
                else:
                    end = literal.this
                continue
            if call.function == "Metric":
                raise SemanticQueryError("a Metric(...) filter (rows filtered by another metric's value)")
            name = _dimension(model, call, measures)
            if isinstance(part, exp.EQ) and isinstance(part.expression, exp.Literal):
                values.append((name, (part.expression.this,)))
            elif isinstance(part, exp.In) and all(isinstance(v, exp.Literal) for v in part.expressions):
                values.append((name, tuple(v.this for v in part.expressions)))
            else:
                raise SemanticQueryError(f"the filter {text!r} (Baton reads = and IN on dimensions)")
    periods = _periods(start, end) if (start or end) else ()
    return tuple(values), periods, tuple(conditions), tuple(metric_filters)


def _metric_filter(model: SemanticModel, call: JinjaCall, part, measures: tuple[str, ...], text: str):
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
    dimension = _dimension(model, _element(call.group_by[0]), measures)
    _dimension(model, _element(call.group_by[0]), measures_of_metrics(model, (metric,)))
    return metric, dimension, operator, value


def _simple(part) -> bool:
    """``dimension = 'literal'`` or ``dimension IN ('a', 'b')``: a value list of the query."""
    from sqlglot import exp

    if isinstance(part, exp.EQ):
        return isinstance(part.expression, exp.Literal)
    return isinstance(part, exp.In) and bool(part.expressions) and all(isinstance(v, exp.Literal) for v in part.expressions)


def _condition(model: SemanticModel, part, placeholders: dict[str, JinjaCall], measures: tuple[str, ...], text: str) -> str:
    """A filter part beyond value lists as SQL over ``dimension.<name>``: every column in it must
    be a call to a dimension or entity (not metric time, a grain or a metric: refused by name)."""
    from sqlglot import exp

    def swap(node):
        if isinstance(node, exp.Column):
            call = placeholders.get(node.name) if not node.table else None
            if call is None:
                raise SemanticQueryError(f"the filter {text!r} names {node.sql()!r}, which is not a MetricFlow call")
            if call.function == "Metric":
                raise SemanticQueryError("a Metric(...) filter (rows filtered by another metric's value)")
            if call.function == "TimeDimension" or call.grain or call.date_part or call.path[-1] == METRIC_TIME:
                raise SemanticQueryError(f"the time filter {text!r} (Baton reads >= start AND < end on metric time)")
            return exp.column(_dimension(model, call, measures), table="dimension")
        return node

    return part.copy().transform(swap).sql()


def _one_path_per_hop(model: SemanticModel, dims: list[str], measures: tuple[str, ...]) -> None:
    """MetricFlow joins each dimension's semantic model through its own copy of the path, Baton
    through one: when a multi-hop dimension and another of a different semantic model share a
    first hop, a bridge holding a key twice counts differently — refused rather than answered so."""
    for measure in measures:
        entity = model.measure(measure).entity
        routes = []
        for name in dims:
            dimension = model.dimension(name)
            route = None if dimension.local_expr(entity) is not None else model.path(entity, dimension.entity)
            if route:
                routes.append((route[0][1].to, dimension.entity, len(route)))
        for i, (hop, goal, length) in enumerate(routes):
            for other_hop, other_goal, other_length in routes[i + 1:]:
                if hop == other_hop and goal != other_goal and max(length, other_length) > 1:
                    raise SemanticQueryError("dimensions of different semantic models through one multi-hop path "
                                             "(MetricFlow joins each path apart; Baton reads one path per query)")


def query_from_params(model: SemanticModel, params: Mapping[str, Any]) -> SemanticQuery:
    """The ``SemanticQuery`` a MetricFlow query means (module docstring), checked against the model."""
    metrics = tuple(str(m) for m in params.get("metrics") or ())
    measures = measures_of_metrics(model, metrics)
    by: list[str] = []
    grain = None
    names: dict[str, str] = {}
    for text in params.get("group_by") or ():
        call = _element(str(text))
        if call.function == "Metric":
            raise SemanticQueryError("grouping by a Metric(...)")
        if call.function == "TimeDimension" or call.grain or call.path[-1] == METRIC_TIME:
            _is_metric_time(model, call, measures)
            grain = _grain(call) or _default_grain(model, metrics, measures)
            by.append(TIME)
            names[str(text)] = TIME
            names[call.name] = TIME
            continue
        name = _dimension(model, call, measures)
        by.append(name)
        names[str(text)] = names[call.name] = name
    _one_path_per_hop(model, [b for b in by if b != TIME], measures)
    where, periods, conditions, metric_filters = _where(model, filters_of(params.get("where"), "where"), measures)
    order = []
    for text in params.get("order_by") or ():
        text = str(text).strip()
        desc = text.startswith("-")
        key = text.lstrip("-")
        if key in metrics:
            order.append((key, desc))
            continue
        target = names.get(key) or names.get(_element(key).name)
        if target is None:
            raise SemanticQueryError(f"order by {key!r}: it is not among the metrics or the group-by")
        order.append((target, desc))
    limit = params.get("limit")
    query = SemanticQuery(metrics, tuple(by), grain, where, periods, tuple(order), int(limit) if limit is not None else None,
                          conditions=conditions, metric_filters=metric_filters, min_max=bool(params.get("min_max_only")))
    return query.check(model)


__all__ = ["METRIC_TIME", "query_from_params"]
