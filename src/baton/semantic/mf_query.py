"""A MetricFlow query (``mf query`` / a saved query's ``query_params``) as a ``SemanticQuery``.

MetricFlow names what a query groups by as ``metric_time__month``, ``customer__country``,
``customer`` (an entity), or as calls: ``TimeDimension('metric_time', 'day')``,
``Dimension('customer__country')``, ``Entity('customer')``. Its ``where`` is a list of
filters with the same calls; ``order_by`` names outputs, ``-`` first for descending (a saved
query's object form too: ``Metric('bookings').descending(True)``). ``saved_query`` names a saved
query, read with the request's where, order and limit (``saved_query_params``).

Read here: group-by on ``metric_time`` (without a grain, the metrics' default, as MetricFlow
takes it) and on every dimension and entity the model has (by its own name or any of
MetricFlow's qualified names). Time beyond metric time at one grain is a ``TimeGroup``
(``timegroup.py``): metric time at a second grain, a ``date_part`` (``metric_time__extract_dow``),
a sub-daily grain, or a time dimension that is not every measure's own (``listing__ds__month``;
without a grain, its own ``time_granularity``); a measure's own time dimension by its name
(``booking__ds__day``) is metric time. The ``where`` is read by ``mf_where.py``. Anything else
is a ``SemanticQueryError`` saying what is not read — never a query that quietly means less.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from baton.semantic.custom_grains import custom_names, is_custom
from baton.semantic.mf_filters import JinjaCall, filters_of, parse_call
from baton.semantic.mf_where import METRIC_TIME, Names, where_of
from baton.semantic.model import GRAINS, TIME, SemanticModel, TimeDimension
from baton.semantic.query import SemanticQuery, SemanticQueryError, measures_of_metrics
from baton.semantic.timegrain import DATE_PARTS
from baton.semantic.timegroup import ALL_GRAINS, TimeGroup, kept_by

_DESCENDING = re.compile(r"^(.*\))\.descending\((True|False)\)\Z", re.S)


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


def _dimension(model: SemanticModel, call: JinjaCall, measures: tuple[str, ...],
               paths: dict[str, tuple[str, ...]] | None = None) -> str:
    """The model's dimension a MetricFlow element names (by name or qualified name). A multi-hop
    name (``listing__user__home_state``) says the path: Baton follows its entities from every
    measure (the listing's user is not the guest); where that is not the shortest join, the path is
    added to ``paths`` (a group-by: ``SemanticQuery.paths``), else refused by name."""
    path = call.path
    wanted = {"__".join(path[-2:]), "__".join(path)} if len(path) > 1 else {path[0]}
    for dimension in model.dimensions:
        if wanted & set(dimension.qualified) or (len(path) == 1 and dimension.name == path[0]):
            for measure in measures:
                entity = model.measure(measure).entity
                if len(path) <= 2 or dimension.local_expr(entity) is not None:
                    continue
                _entity_path(model, call, entity, dimension.entity, paths)
            return dimension.name
    for name in wanted:
        refusal = model.refusal(name, "dimension")
        if refusal is not None:
            raise SemanticQueryError(refusal.message)
    raise SemanticQueryError(f"no dimension or entity {call.name!r} in the model")


def _entity_path(model: SemanticModel, call: JinjaCall, start: str, goal: str,
                 paths: dict[str, tuple[str, ...]] | None) -> None:
    """Checks that ``start`` reaches ``goal`` along the entities ``call`` names; a path that is not the
    shortest join is recorded in ``paths`` (one per semantic model) or, without them, refused."""
    via = call.path[:-1]
    route, shortest = model.path_via(start, via, goal), model.path(start, goal)
    if route == shortest:
        return
    if route is None or paths is None or paths.setdefault(goal, via) != via:
        raise SemanticQueryError(f"{call.name!r} through the entity path {'/'.join(via)}: Baton joins {start} to it "
                                 "another way")


def _paths_alone(model: SemanticModel, paths: dict[str, tuple[str, ...]], measures: tuple[str, ...], filtered: bool) -> None:
    """An entity path other than the shortest join is read for the group-by alone: a filter (the query's,
    a measure's) or a time group-by would reach the same semantic model by the path too, or not."""
    if paths and (filtered or any(model.measure(m).filter for m in measures)):
        raise SemanticQueryError("an entity path other than the shortest join beside filters or time group-bys, which "
                                 "Baton does not compute yet")


def _default_grain(model: SemanticModel, metrics: tuple[str, ...], measures: tuple[str, ...]) -> str:
    """Metric time's grain when a query names none, as MetricFlow takes it: the coarsest of each
    metric's own (its ``time_granularity``, else the finest its data is kept by: MetricFlow's
    DefaultTimeGranularityPattern), never finer than every metric's data allows (a sub-daily one:
    where its time dimension declares it, ``timegroup.kept_by``)."""
    grains = []
    for name in metrics:
        own = model.metric(name).grain or model.finest_grain(tuple(model.measures_of(name))) or "day"
        grains.append(ALL_GRAINS.index(own))
    floor = ALL_GRAINS.index(model.finest_grain(measures) or "day")
    if measures and any(own < floor for own in grains):
        floor = max(ALL_GRAINS.index(kept_by(model, m)) for m in measures)  # a metric's own sub-daily time_granularity
    return ALL_GRAINS[max(max(grains, default=floor), floor)]


def _grain(call: JinjaCall, custom: tuple[str, ...] = ()) -> str | None:
    if call.date_part is not None and call.date_part.lower() not in DATE_PARTS:
        raise SemanticQueryError(f"the date_part {call.date_part!r} (Baton reads {', '.join(DATE_PARTS)})")
    if call.grain is not None and call.grain.lower() not in (*ALL_GRAINS, *custom):  # custom: the spine's (custom_grains.py)
        raise SemanticQueryError(f"the time grain {call.grain!r} (Baton reads {', '.join((*ALL_GRAINS, *custom))})")
    if call.grain and call.date_part:
        raise SemanticQueryError(f"{call.name!r} with both a grain and a date_part")
    return call.grain.lower() if call.grain else None


def _time_dimension(model: SemanticModel, call: JinjaCall, measures: tuple[str, ...]) -> TimeDimension | None:
    """The time dimension a call names (``listing__ds``, ``listing__user__ds``), if any: through
    as many joins from every measure as its path says (as ``_dimension``)."""
    path = call.path
    if len(path) < 2:
        return None
    found = next((d for d in model.time_dimensions if f"{path[-2]}__{path[-1]}" in d.qualified), None)
    if found is not None and len(path) > 2:
        for measure in measures:
            route = model.path(model.measure(measure).entity, found.entity)
            if route is not None and len(route) not in (len(path) - 1, 0):
                raise SemanticQueryError(f"{call.name!r} through the entity path {'/'.join(path[:-1])}: Baton joins "
                                         f"{model.measure(measure).entity} to it another way")
    return found


def _time_item(model: SemanticModel, call: JinjaCall, metrics: tuple[str, ...], measures: tuple[str, ...]) -> TimeGroup | None:
    """A group-by call as a time group, or None when it names no time: ``metric_time`` and a
    time dimension that is every measure's own time (``booking__ds``) are metric time; another
    time dimension is itself, at its own grain unless one is named (MetricFlow's)."""
    parts = call.name.split("__")
    if call.grain is None and call.date_part is None and len(parts) > 1:  # Dimension('booking__ds__day')
        if parts[-1] in ALL_GRAINS or is_custom(model, parts[-1]):
            call = replace(call, name="__".join(parts[:-1]), grain=parts[-1])
        elif parts[-1].startswith("extract_"):
            call = replace(call, name="__".join(parts[:-1]), date_part=parts[-1][len("extract_"):])
    path = call.path
    dimension = None if path[-1] == METRIC_TIME else _time_dimension(model, call, measures)
    if dimension is None and path[-1] != METRIC_TIME:
        if call.function == "TimeDimension" or call.grain or call.date_part:
            raise SemanticQueryError(f"no time dimension {call.name!r} in the model")
        return None
    grain, part = _grain(call, custom_names(model)), call.date_part.lower() if call.date_part else None
    own = dimension is None or (bool(measures) and all(
        model.measure(m).entity == dimension.entity and model.time_of(m) == dimension.time for m in measures))
    if own and part is None:
        grain = grain or _default_grain(model, metrics, measures)
    elif part is None:
        grain = grain or (dimension.grain if dimension is not None else "day")
    name = "__".join(path) + (f"__extract_{part}" if part else f"__{grain}")
    return TimeGroup(name, TIME if own else dimension.name, grain, part)  # type: ignore[union-attr]


def saved_query_params(model: SemanticModel, params: Mapping[str, Any]) -> Mapping[str, Any]:
    """A request naming a saved query (``mf query --saved-query``) as the query it asks: the saved query's
    metrics and group-by, its ``where`` filters and then the request's (all ANDed), the request's order and
    limit in place of its own where given — as MetricFlow's ``parse_and_validate_saved_query``."""
    name = str(params["saved_query"])
    if params.get("metrics") or params.get("group_by"):
        raise SemanticQueryError("metrics or group-by beside a saved query (MetricFlow refuses them too)")
    saved = next((s for s in model.saved_queries if s.name == name), None)
    if saved is None:
        refusal = model.refusal(name, "saved query")
        raise SemanticQueryError(f"the saved query {name!r} uses {refusal.construct}" if refusal else f"no saved query {name!r}")
    own = saved.params
    where = [*filters_of(own.get("where"), f"saved query {name}"), *filters_of(params.get("where"), "where")]
    return {"metrics": list(own.get("metrics") or ()), "group_by": list(own.get("group_by") or ()), "where": where,
            "order_by": params.get("order_by") or own.get("order_by"),
            "limit": params["limit"] if params.get("limit") is not None else own.get("limit"),
            "min_max_only": params.get("min_max_only")}


def query_from_params(model: SemanticModel, params: Mapping[str, Any]) -> SemanticQuery:
    """The ``SemanticQuery`` a MetricFlow query means (module docstring), checked against the model;
    ``saved_query``: the saved query of that name, with the request's where, order and limit."""
    if params.get("saved_query"):
        params = saved_query_params(model, params)
    metrics = tuple(str(m) for m in params.get("metrics") or ())
    measures = measures_of_metrics(model, metrics)
    by: list[str] = []
    grain = None
    times: list[TimeGroup] = []
    names: dict[str, str] = {}
    paths: dict[str, tuple[str, ...]] = {}  # semantic model -> the entity path a group-by reaches it by (joins.py)
    for text in params.get("group_by") or ():
        call = _element(str(text))
        if call.function == "Metric":
            raise SemanticQueryError("grouping by a Metric(...)")
        item = _time_item(model, call, metrics, measures)
        if item is not None:
            name = item.name
            if item.dimension == TIME and item.grain in GRAINS and TIME not in by:  # metric time at the query's grain
                grain, name = item.grain, TIME
            elif name in by or names.get(name) == TIME:
                raise SemanticQueryError("a dimension is named twice in by")
            else:
                times.append(item)
            by.append(name)
            names[str(text)] = names[call.name] = names[item.name] = name
            continue
        name = _dimension(model, call, measures, paths)
        by.append(name)
        names[str(text)] = names[call.name] = name
    names_of = Names(_element, _dimension, lambda m, c, ms: _time_item(m, c, metrics, ms))
    where, periods, conditions, metric_filters, filter_times = where_of(
        model, filters_of(params.get("where"), "where"), measures, names_of)
    order = []
    for text in params.get("order_by") or ():
        text = str(text).strip()
        desc = text.startswith("-")
        key = text.lstrip("-")
        called = _DESCENDING.match(key)  # a saved query's object form: Metric('bookings').descending(True)
        if called is not None:
            key, desc = called.group(1).strip(), called.group(2) == "True"
        if key.startswith("Metric(") and _element(key).name in metrics:
            key = _element(key).name
        if key in metrics:
            order.append((key, desc))
            continue
        target = names.get(key) or names.get(_element(key).name)
        if target is None:
            raise SemanticQueryError(f"order by {key!r}: it is not among the metrics or the group-by")
        order.append((target, desc))
    limit = params.get("limit")
    _paths_alone(model, paths, measures, bool(where or conditions or metric_filters or any(t.dimension != TIME for t in times)))
    query = SemanticQuery(metrics, tuple(by), grain, where, periods, tuple(order), int(limit) if limit is not None else None,
                          conditions=conditions, metric_filters=metric_filters, min_max=bool(params.get("min_max_only")),
                          times=(*times, *(t for t in filter_times if t.name not in by)), paths=tuple(paths.items()))
    return query.check(model)


__all__ = ["METRIC_TIME", "query_from_params", "saved_query_params"]
