"""A semantic query: metrics x group-by dimensions x filters x time grain x order/limit.

It is what the question parser produces, what a model fills through the SQL specialist's
``semantic_query`` tool, what a saved query stores and what a follow-up edits; the compiler
turns it into SQL. Its dict form (tool arguments, YAML, ``metadata["semantic_query"]``)::

    {"metrics": ["revenue"], "by": ["business_unit"], "grain": "quarter",
     "where": {"business_unit": ["Epson"], "time": ["2025"]},
     "order": [["revenue", "desc"]], "limit": 5}

``time`` in ``by`` groups by the time grain (``grain``, default month); ``time`` in
``where`` takes periods: ``2025``, ``2025-Q3``, ``2025-03``, ``2025-03-15`` (several: their
union). Filter values are compared as the dimension's values, bound as quoted literals by the
compiler (never spliced as text).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from baton.semantic.errors import SemanticModelError, SemanticQueryError
from baton.semantic.model import GRAINS, TIME, SemanticModel
from baton.semantic.periods import Period, period_words
from baton.semantic.timegrain import SUBDAILY
from baton.semantic.timegroup import ALL_GRAINS, TimeGroup, check_group, kept_by, time_dimension

MAX_LIMIT = 1000
MAX_VALUES = 100
@dataclass(frozen=True, slots=True)
class SemanticQuery:
    metrics: tuple[str, ...]
    by: tuple[str, ...] = ()
    grain: str | None = None
    where: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (dimension, values): value IN values
    periods: tuple[Period, ...] = ()
    order: tuple[tuple[str, bool], ...] = ()  # (metric or dimension, descending)
    limit: int | None = None
    notes: tuple[str, ...] = field(default=(), compare=False)
    # filters beyond value lists, as SQL over ``dimension.<name>`` only (MetricFlow's where filters:
    # ``NOT dimension.is_instant``, ``dimension.capacity >= 4``); check() refuses any other column
    conditions: tuple[str, ...] = ()
    # rows whose dimension's value has a metric beyond a number (MetricFlow's ``{{ Metric('bookings',
    # group_by=['listing']) }} > 2``): (metric, dimension, operator, number)
    metric_filters: tuple[tuple[str, str, str, str], ...] = ()
    min_max: bool = False  # no metric, one dimension: its least and greatest value (MetricFlow's min_max_only)
    # time group-by items beyond metric time at ``grain`` (timegroup.py), each named in ``by`` by its output column
    times: tuple[TimeGroup, ...] = ()
    # (semantic model, MetricFlow entity path): reached by that path, not the shortest join (joins.py;
    # ``listing__user__home_state_latest``: the listing's user, not the booking's guest)
    paths: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def time_group(self, name: str) -> TimeGroup | None:
        """The time group ``name`` in ``by`` stands for, if it is one."""
        return next((t for t in self.times if t.name == name), None)

    # --- dict form ------------------------------------------------------------------------

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SemanticQuery:
        if not isinstance(data, Mapping):
            raise SemanticQueryError("a semantic query is a mapping with metrics, by, where, order, limit")
        unknown = set(data) - {"metrics", "by", "grain", "where", "order", "limit", "conditions", "metric_filters", "times"}
        if unknown:
            raise SemanticQueryError(f"unknown key(s) in the semantic query: {', '.join(sorted(map(str, unknown)))}")
        metrics = _names(data.get("metrics"), "metrics")
        by = _names(data.get("by"), "by")
        grain = data.get("grain")
        if grain is not None and grain not in GRAINS:
            raise SemanticQueryError(f"grain {grain!r} is not one of {', '.join(GRAINS)}")
        where: list[tuple[str, tuple[str, ...]]] = []
        periods: tuple[Period, ...] = ()
        raw_where = data.get("where") or {}
        if not isinstance(raw_where, Mapping):
            raise SemanticQueryError("where maps a dimension to its value (or a list of values)")
        for name, values in raw_where.items():
            listed = values if isinstance(values, (list, tuple)) else [values]
            if not listed or len(listed) > MAX_VALUES:
                raise SemanticQueryError(f"where {name}: from 1 to {MAX_VALUES} values")
            if any(not isinstance(v, (str, int, float)) or isinstance(v, bool) for v in listed):
                raise SemanticQueryError(f"where {name}: values are text or numbers")
            if name == TIME:
                periods = tuple(Period.parse(str(v)) for v in listed)
            else:
                where.append((str(name), tuple(str(v) for v in listed)))
        order = []
        for item in data.get("order") or ():
            if isinstance(item, str):
                item = [item, "desc"]
            if not isinstance(item, (list, tuple)) or len(item) != 2 or str(item[1]).lower() not in ("asc", "desc"):
                raise SemanticQueryError("order is a list of [name, 'asc' | 'desc']")
            order.append((str(item[0]), str(item[1]).lower() == "desc"))
        limit = data.get("limit")
        if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_LIMIT):
            raise SemanticQueryError(f"limit is a whole number from 1 to {MAX_LIMIT}")
        conditions = _names(data.get("conditions"), "conditions")  # checked as dimension-only SQL by check()
        metric_filters = []
        for item in data.get("metric_filters") or ():
            if not isinstance(item, (list, tuple)) or len(item) != 4 or not all(isinstance(v, str) for v in item):
                raise SemanticQueryError("metric_filters is a list of [metric, dimension, operator, number]")
            metric_filters.append((item[0], item[1], item[2], item[3]))
        times = tuple(TimeGroup.from_dict(t) for t in data.get("times") or ())
        if any(t.name not in by and not any(f"dimension.{t.name}" in c for c in conditions) for t in times):
            raise SemanticQueryError("each time group is named in by or in a condition")
        return cls(metrics, by, grain if TIME in by else None, tuple(where), periods, tuple(order), limit,
                   conditions=conditions, metric_filters=tuple(metric_filters), times=times)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"metrics": list(self.metrics)}
        if self.by:
            out["by"] = list(self.by)
        if self.grain:
            out["grain"] = self.grain
        if self.times:
            out["times"] = [t.to_dict() for t in self.times]
        where: dict[str, Any] = {name: list(values) for name, values in self.where}
        if self.periods:
            where[TIME] = [p.label for p in self.periods]
        if where:
            out["where"] = where
        if self.conditions:
            out["conditions"] = list(self.conditions)
        if self.metric_filters:
            out["metric_filters"] = [list(f) for f in self.metric_filters]
        if self.order:
            out["order"] = [[name, "desc" if desc else "asc"] for name, desc in self.order]
        if self.limit is not None:
            out["limit"] = self.limit
        return out

    # --- checking against a model ---------------------------------------------------------

    def check(self, model: SemanticModel) -> SemanticQuery:
        """This query, with defaults filled (grain, order), or ``SemanticQueryError``."""
        if not self.metrics:
            return _check_no_metric(self, model)
        if self.min_max:
            raise SemanticQueryError("min_max_only is a query with no metric")
        measures = measures_of_metrics(model, self.metrics)
        for group in self.times:
            check_group(model, group, measures)
        names = [*(b for b in self.by if self.time_group(b) is None), *(name for name, _ in self.where)]
        for condition in self.conditions:  # a time group's name (a custom grain's, mf_where.py) is no dimension
            names += [n for n in _condition_dimensions(model, condition) if self.time_group(n) is None]
        for metric, dimension, operator, number in self.metric_filters:
            if operator not in (">", ">=", "<", "<=", "=", "!=", "<>") or not _is_number(number):
                raise SemanticQueryError(f"the metric filter {metric} {operator} {number!r} (a comparison with a number)")
            for measure in measures_of_metrics(model, (metric,)):
                if model.has_dimension(dimension) and not model.reachable(measure, dimension):
                    raise SemanticQueryError(f"{model.metric(metric).title} cannot be broken down by {dimension}")
            names.append(dimension)
        _check_dimension_names(model, names, ", time")
        if len(set(self.by)) != len(self.by):
            raise SemanticQueryError("a dimension is named twice in by")
        needs_time = TIME in self.by or bool(self.periods)
        for name in dict.fromkeys(names + ([TIME] if needs_time else [])):
            for measure in measures:
                if not model.reachable(measure, name):
                    metric = next(m for m in self.metrics if measure in model.measures_of(m))
                    what = "over time" if name == TIME else f"by {model.dimension(name).title}"
                    raise SemanticQueryError(f"{model.metric(metric).title} cannot be broken down {what}")
        grain = self.grain
        if TIME in self.by:
            finest = model.finest_grain(measures) or "month"
            grain = grain or ("month" if GRAINS.index(finest) <= GRAINS.index("month") else finest)
            if GRAINS.index(grain) < GRAINS.index(finest):
                titles = " and ".join(model.metric(m).title for m in self.metrics)
                raise SemanticQueryError(f"{titles} is kept by {finest}, so it cannot be shown by {grain}")
        kept_by = model.finest_grain(measures) if self.periods else None
        for period in self.periods:
            if period.grain in SUBDAILY:  # a range of times: metric time by a sub-daily grain, or not grouped by
                _check_times(model, self, period, measures)
            elif kept_by is not None and GRAINS.index(period.grain) < GRAINS.index(kept_by):
                raise SemanticQueryError(f"the data is kept by {kept_by}: {period_words(period.label)} is finer than that")
        outputs = {*self.metrics, *self.by}
        for name, _ in self.order:
            if name not in outputs:
                raise SemanticQueryError(f"cannot order by {name!r}: it is not among the metrics or the group-by dimensions")
        if self.limit is not None and not 1 <= self.limit <= MAX_LIMIT:
            raise SemanticQueryError(f"limit is a whole number from 1 to {MAX_LIMIT}")
        order = self.order or _default_order(self)
        order += tuple((b, False) for b in self.by if b not in {name for name, _ in order})  # ties: the same rows everywhere
        return replace(self, grain=grain, order=order)

    # --- words ------------------------------------------------------------------------------

    def describe(self, model: SemanticModel | None = None) -> str:
        """"revenue by quarter, business unit; where business unit = Epson, time in 2025;
        top 5 by revenue" — what the answer shows as the query it ran."""

        def title(name: str) -> str:
            if name == TIME:
                return self.grain or "month"
            group = self.time_group(name)
            if group is not None:
                return name.replace("__", " ").replace("_", " ")
            if model is not None:
                if model.has_metric(name):
                    return model.metric(name).title
                if model.has_dimension(name):
                    return model.dimension(name).title
            return name.replace("_", " ")

        parts = [" and ".join(title(m) for m in self.metrics)]
        if self.by:
            parts[0] += " by " + ", ".join(title(b) for b in self.by)
        conditions = [f"{title(name)} = {' or '.join(values)}" for name, values in self.where]
        conditions += [c.replace("dimension.", "") for c in self.conditions]
        conditions += [f"{title(d)} with {title(m)} {op} {n}" for m, d, op, n in self.metric_filters]
        if self.periods:
            conditions.append("time in " + " or ".join(period_words(p.label) for p in self.periods))
        if conditions:
            parts.append("where " + " and ".join(conditions))
        if self.limit is not None and self.order:
            name, desc = self.order[0]
            parts.append(f"{'top' if desc else 'bottom'} {self.limit} by {title(name)}")
        elif self.order and self.order[0][0] in self.metrics:
            name, desc = self.order[0]
            parts.append(f"sorted by {title(name)} {'descending' if desc else 'ascending'}")
        return "; ".join(parts)


def measures_of_metrics(model: SemanticModel, metrics: tuple[str, ...]) -> tuple[str, ...]:
    """The measures ``metrics`` read; ``SemanticQueryError`` for a metric the model does not
    compute (named with its construct) or does not have."""
    for name in metrics:
        refusal = model.refusal(name, "metric")
        if refusal is not None:
            raise SemanticQueryError(refusal.message)
        if not model.has_metric(name):
            raise SemanticQueryError(f"no metric {name!r} (metrics: {', '.join(m.name for m in model.metrics)})")
    return tuple(dict.fromkeys(x for name in metrics for x in model.measures_of(name)))


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return text.strip() == text and text.lower() not in ("nan", "inf", "-inf", "infinity", "-infinity")


def _check_times(model: SemanticModel, query: SemanticQuery, period: Period, measures: tuple[str, ...]) -> None:
    """A range of times (``Period.between``) filters rows by their time to the second: ``SemanticQueryError``
    unless metric time is grouped by a sub-daily grain alone or not at all, and every measure's time is kept
    at the range's grain or finer (``timegroup.kept_by``)."""
    if TIME in query.by or any(t.grain not in SUBDAILY for t in query.times if t.dimension == TIME):
        raise SemanticQueryError("a filter on metric time at a sub-daily grain with metric time grouped by a day or "
                                 "coarser, which Baton does not compute yet")
    for measure in measures:
        kept = kept_by(model, measure)
        if ALL_GRAINS.index(kept) > ALL_GRAINS.index(period.grain):
            raise SemanticQueryError(f"the data is kept by {kept}: {period.label} is finer than that")


def _condition_dimensions(model: SemanticModel, condition: str) -> list[str]:
    """The dimensions a query condition names; ``SemanticQueryError`` unless it is an allowed
    expression whose every column is ``dimension.<name>`` (never a table's own column)."""
    from sqlglot import exp

    from baton.semantic.expressions import parse_fragment

    try:
        tree = parse_fragment(condition, "query filter", dimensions=True)
    except SemanticModelError as exc:
        raise SemanticQueryError(str(exc)) from None
    names = []
    for column in tree.find_all(exp.Column):
        if column.table != "dimension" or column.name == TIME:
            raise SemanticQueryError(f"the filter {condition!r} names {column.sql()!r}, which is no dimension")
        names.append(column.name)
    return names


def _check_no_metric(query: SemanticQuery, model: SemanticModel) -> SemanticQuery:
    """A query with no metric: the distinct values of its dimensions (MetricFlow's group-by-only
    query), read from one semantic model's rows (``distinct_values.py``); more refused by name."""
    if not query.by:
        raise SemanticQueryError("a semantic query needs at least one metric or dimension")
    if query.min_max and len(query.by) != 1:
        raise SemanticQueryError("min_max_only reads one dimension")
    spine = [b for b in query.by if b == TIME or getattr(query.time_group(b), "dimension", None) == TIME]
    if spine or query.periods:  # metric time: the days of the project's time spine (spine_rows.py), as MetricFlow
        if query.metric_filters or model.time_spine is None or (len(spine) == len(query.by) and (query.where or query.conditions)):
            raise SemanticQueryError("a query with no metric over metric time beside a Metric(...) filter, or without a "
                                     "time spine, or over metric time alone with filters, which Baton does not compute yet")
        if not spine:
            raise SemanticQueryError("a query with no metric filtered on metric time without grouping by it, which Baton "
                                     "does not compute yet")
        if any(t.grain in SUBDAILY for t in query.times if t.dimension == TIME):  # that grain's spine alone (subdaily.py)
            if len(query.by) != 1 or query.where or query.conditions:
                raise SemanticQueryError("a query with no metric over metric time by a sub-daily grain beside other "
                                         "group-bys or filters, which Baton does not compute yet")
            from baton.semantic.subdaily import spine_for

            spine_for(model, query.times[0].grain or "")
            return replace(query, order=query.order or ((query.by[0], False),))
        if query.by == (TIME,):
            if any(name != TIME for name, _ in query.order):
                raise SemanticQueryError("a query with no metric is ordered by its group-by dimensions only")
            return replace(query, grain=query.grain or "day", order=query.order or ((TIME, False),))
    if len(query.metric_filters) > 1:  # one: joined_values.metric_filtered
        raise SemanticQueryError("a query with no metric filtered by several Metric(...), which Baton does not compute yet")
    names = [*(b for b in query.by if b not in spine and query.time_group(b) is None), *(name for name, _ in query.where)]
    names += [dimension for _, dimension, _, _ in query.metric_filters]
    for condition in query.conditions:  # a time group's own period (listing__ds__alien_day): not a dimension
        names += [n for n in _condition_dimensions(model, condition) if query.time_group(n) is None]
    if spine and any(name not in query.by for name in names):
        raise SemanticQueryError("a query with no metric over metric time filtered on a dimension it does not group by, "
                                 "which Baton does not compute yet (MetricFlow keeps each spine day's rows: no_dedupe)")
    _check_dimension_names(model, names)
    if len(set(query.by)) != len(query.by):
        raise SemanticQueryError("a dimension is named twice in by")
    others = [t for t in query.times if t.dimension != TIME]
    for group in query.times:
        check_group(model, group, ())
    entities = {model.dimension(name).entity for name in names} | {time_dimension(model, t.dimension).entity for t in others}
    if len(entities) > 1 and others:  # several semantic models: joined_values.py joins them, or refuses by name
        raise SemanticQueryError("a query with no metric over dimensions of several semantic models beside a time "
                                 "group-by, which Baton does not compute yet (MetricFlow joins them FULL OUTER)")
    if any(name not in query.by for name, _ in query.order):
        raise SemanticQueryError("a query with no metric is ordered by its group-by dimensions only")
    order = query.order + tuple((b, False) for b in query.by if b not in {name for name, _ in query.order})
    return replace(query, grain=(query.grain or "day") if TIME in query.by else None, order=order)


def _default_order(query: SemanticQuery) -> tuple[tuple[str, bool], ...]:
    """Time ascending when grouped by time; else the first metric descending (a ranking),
    ties by the dimensions; one row: none."""
    times = [b for b in query.by if b == TIME or query.time_group(b) is not None]
    if times:
        return (*((t, False) for t in times), *((b, False) for b in query.by if b not in times))
    if query.by:
        return ((query.metrics[0], True), *((b, False) for b in query.by))
    return ()


def _names(value: Any, what: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)) or any(not isinstance(v, str) for v in value) or len(value) > 20:
        raise SemanticQueryError(f"{what} is a list of names")
    return tuple(value)


def _check_dimension_names(model: SemanticModel, names: list[str], listed_after: str = "") -> None:
    """Each name a dimension of ``model``: a refused one says why, an unknown one lists the
    dimensions (then ``listed_after``, e.g. ``, time`` where metric time may be asked for)."""
    for name in names:
        refusal = model.refusal(name, "dimension")
        if refusal is not None:
            raise SemanticQueryError(refusal.message)
        if not model.has_dimension(name):
            raise SemanticQueryError(f"no dimension {name!r} (dimensions: {', '.join(d.name for d in model.dimensions)}"
                                     f"{listed_after})")


__all__ = ["MAX_LIMIT", "SemanticQuery", "SemanticQueryError", "measures_of_metrics"]
