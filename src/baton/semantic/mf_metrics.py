"""MetricFlow metrics as Baton's: simple, ratio, derived — and every other construct refused by name.

Computed: ``simple`` metrics (their measure, with the metric's ``filter:`` and the input
measure's ``filter:`` as the measure's row filter, and ``fill_nulls_with`` as the value of a
row where the measure has none: a dimension of the measure's own semantic
model as its expression, a dimension of a joined one through the model's joins, an
``Entity(...)`` of its own rows as its key), ``ratio`` and ``derived`` metrics (derived inputs
may be renamed with ``alias``, moved by ``offset_window`` or ``offset_to_grain``; a ``filter:``
on a ratio or derived metric or on an input makes a filtered copy of the input,
``SemanticModel.internal_metrics``), cumulative metrics (``Metric.cumulative``), a metric's
``time_granularity``, ``join_to_timespine``, and ``create_metric: true`` measures.

Conversion metrics are read by ``conversion.py``. Refused, naming the construct (``Refusal``):
``offset_window`` of sub-daily grains without a spine of that grain (``subdaily.py``),
``offset_to_grain`` of other grains,
``TimeDimension``/``Metric`` calls in metric filters, and any metric built on a refused measure or
metric. A derived metric's expression outside ``expressions.parse_metric_expression``'s subset
is refused too.

Errors (the load stops, with file and line): a measure or metric that is not defined, a
cycle of derived metrics, a filter naming a dimension that does not exist.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace

from baton.semantic import subdaily
from baton.semantic.custom_grains import declared
from baton.semantic.errors import SemanticModelError
from baton.semantic.expressions import OFFSET_MARK, is_identifier, parse_fragment, parse_metric_expression
from baton.semantic.mf_filters import JinjaCall, calls_in, filters_of
from baton.semantic.mf_models import Reading, mapping, meta, read_models, synonyms, window_parts
from baton.semantic.mf_project import MetricFlowProject, where
from baton.semantic.mf_times import time_dimensions
from baton.semantic.model import GRAINS, Measure, Metric, Refusal, SavedQuery, SemanticModel
from baton.semantic.native import validate
from baton.semantic.spine_source import GENERATED, GENERATED_COLUMN
from baton.semantic.timegrain import SUBDAILY

_WORD = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]*\b")


class _Refused(Exception):
    """A construct Baton does not compute: the metric that needs it is refused, not the project."""

    def __init__(self, construct: str) -> None:
        super().__init__(construct)
        self.construct = construct


def _name(value: object) -> str:
    return str(value.get("name") if isinstance(value, Mapping) else value or "")


# --- filters ------------------------------------------------------------------------------------

def _resolve(call: JinjaCall, home: str, reading: Reading, place: str) -> str:
    """The SQL a filter's call stands for on the rows of semantic model ``home``."""
    if call.function == "Metric":
        raise _Refused("a Metric(...) filter (rows filtered by another metric's value)")
    if call.function == "TimeDimension" or call.grain or call.date_part:
        raise _Refused("a time dimension in a filter (TimeDimension, .grain or date_part)")
    info = reading.models[home]
    if call.function == "Entity":
        if len(call.path) == 1 and call.path[0] in info.keys:
            return f"({info.keys[call.path[0]]})"
        raise _Refused(f"an Entity filter across semantic models ({call.name})")
    found = reading.dimension_named(call.path)
    if found is None:
        raise SemanticModelError(f"{place}: the filter names {call.name!r}"
                                 f"{' via ' + '/'.join(call.entity_path) if call.entity_path else ''}, "
                                 "which is no dimension of the project")
    target, dim = found
    if dim in target.times:
        if target.name == home and not isinstance(target.times[dim], str):
            return f"({target.times[dim].column})"  # type: ignore[union-attr]
        raise _Refused("a time dimension of another semantic model in a filter")
    if target.name == home:
        return f"({target.categorical[dim]})"
    if dim in target.hidden:
        raise _Refused("a filter on a hidden dimension of another semantic model")
    qualified = f"{call.path[-2]}__{dim}"
    name = reading.by_qualified.get(qualified)
    if name is None:
        raise _Refused(f"a filter on dimension {qualified}, which Baton does not read")
    return f"dimension.{name}"


def measure_filter(texts: list[str], home: str, reading: Reading, place: str) -> str | None:
    """MetricFlow filters (ANDed) as one measure row filter on ``home``'s rows, or ``_Refused``."""
    parts = []
    for text in texts:
        condition = text
        for block, call in calls_in(text, place):
            condition = condition.replace(block, _resolve(call, home, reading, place))
        try:
            parse_fragment(condition.strip(), "metric filter", dimensions=True)
        except SemanticModelError as exc:
            raise _Refused(f"a filter Baton does not read ({exc})") from None
        parts.append(f"({condition.strip()})")
    return " AND ".join(parts) or None


# --- metrics ------------------------------------------------------------------------------------

class _Builder:
    def __init__(self, project: MetricFlowProject, reading: Reading) -> None:
        self.reading = reading
        self.nodes = {str(m.get("name") or ""): m for m in project.metrics}
        for measure, node in reading.measure_node.items():
            if node.get("create_metric") and measure not in self.nodes:
                self.nodes[measure] = {"name": measure, "type": "simple", "type_params": {"measure": measure},
                                       "label": node.get("create_metric_display_name") or "", "description":
                                       node.get("description") or ""}
        self.metrics: dict[str, Metric] = {}
        self.internal: dict[str, Metric] = {}  # filtered copies of inputs (SemanticModel.internal_metrics)
        self._copies: dict[tuple[str, tuple[str, ...]], str] = {}  # (metric, filters) -> its filtered copy's name
        self.refused: dict[str, str] = {}
        self.extra_measures: list[Measure] = []
        self.spine = time_spine(project) or (GENERATED, GENERATED_COLUMN)  # else days generated (spine_source.py)
        self.subdaily = subdaily.declared(project)  # spines finer than a day: sub-daily windows and offsets read them
        self._active: list[str] = []

    def build(self) -> None:
        for name in self.nodes:
            self.metric(name, where(self.nodes[name]))

    def metric(self, name: str, place: str) -> Metric | None:
        """The metric ``name`` (built once), or None when it is refused."""
        if name in self.metrics:
            return self.metrics[name]
        if name in self.refused:
            return None
        node = self.nodes.get(name)
        if node is None:
            raise SemanticModelError(f"{place}: metric {name!r} is not defined")
        if name in self._active:
            cycle = " -> ".join([*self._active[self._active.index(name):], name])
            raise SemanticModelError(f"{where(node)}: a cycle of derived metrics: {cycle}")
        self._active.append(name)
        try:
            built = self._build(name, node)
        except _Refused as refused:
            self.refused[name] = refused.construct
            return None
        finally:
            self._active.pop()
        self.metrics[name] = built
        return built

    def _input(self, name: str, place: str, filters: tuple[str, ...] = ()) -> str:
        """The input metric ``name`` of a ratio or derived metric; with ``filters`` (its input's ``filter:``, the
        parent's own), a copy of it whose every measure reads only the rows they keep (MetricFlow's input filter)."""
        if name in self.internal:
            return name
        if self.metric(name, place) is None:
            raise _Refused(f"its input metric “{name}”, which uses {self.refused[name]}")
        if not filters:
            return name
        key = (name, filters)
        if key not in self._copies:
            copy = f"{name[:40]}__f{len(self._copies) + 1}"  # short: a derived expression names it (63 characters)
            while copy in self.nodes or copy in self.internal:
                copy += "_"
            self.internal[copy] = self._build(copy, self.nodes[name], filters)  # _Refused: the parent is refused
            self._copies[key] = copy
        return self._copies[key]

    def _build(self, name: str, node: Mapping, extra: tuple[str, ...] = ()) -> Metric:
        """The metric of ``node`` named ``name``; ``extra``: filters ANDed to its own (a filtered input's copy)."""
        place = where(node)
        kind = str(node.get("type") or "simple").lower()
        params = mapping(node.get("type_params"))
        common = {"label": str(node.get("label") or ""), "synonyms": synonyms(node),
                  "description": str(node.get("description") or ""), "meta": dict(meta(node))}
        decimals = meta(node).get("decimals")
        if isinstance(decimals, int) and not isinstance(decimals, bool) and 0 <= decimals <= 6:
            common["decimals"] = decimals  # type: ignore[assignment]
        if kind == "conversion":
            from baton.semantic.conversion import conversion_of

            if extra:
                raise _Refused("a conversion metric as a filtered input of a ratio or derived metric")
            measure, spec = conversion_of(params, filters_of(node.get("filter"), place), self.reading.measures, _Refused)
            return Metric(name, "simple", measure=measure, conversion=spec, **common)  # type: ignore[arg-type]
        if kind == "cumulative":
            common["cumulative"] = self._cumulative(params)
            common["period_agg"] = self._period_agg(params)
            kind = "simple"
        grain = str(node.get("time_granularity") or "").lower() or None
        if grain is not None:
            if grain not in (*GRAINS, *SUBDAILY):  # sub-daily: metric time by it (a TimeGroup, mf_query._default_grain)
                raise _Refused(f"a metric's own time_granularity {grain!r}")
            common["grain"] = grain
        filters = [*filters_of(node.get("filter"), place), *extra]
        if kind == "simple":
            measure = self._simple_measure(name, params, filters, place)
            fill = mapping(params.get("measure")).get("fill_nulls_with")
            spine = bool(mapping(params.get("measure")).get("join_to_timespine"))
            return Metric(name, "simple", measure=measure, fill_nulls=float(fill) if fill is not None else None,
                          join_to_timespine=spine, **common)  # type: ignore[arg-type]
        if kind == "ratio":  # its own filter and each side's: the side's copy reads only the rows they keep
            parts = []
            for side in ("numerator", "denominator"):
                value = params.get(side)
                side_filters = filters_of(value.get("filter"), place) if isinstance(value, Mapping) else []
                parts.append(self._input(_name(value), place, tuple([*side_filters, *filters])))
            return Metric(name, "ratio", numerator=parts[0], denominator=parts[1], **common)  # type: ignore[arg-type]
        return Metric(name, "derived", expr=self._derived_expr(params, tuple(filters), place), **common)  # type: ignore[arg-type]

    def _cumulative(self, params: Mapping) -> str:
        """A cumulative metric's window as the model keeps it (``Metric.cumulative``), over the spine (spine_source.py)."""
        spec = {**mapping(params), **mapping(params.get("cumulative_type_params"))}
        if spec.get("window") and spec.get("grain_to_date"):
            raise _Refused("a cumulative metric with both a window and grain_to_date")
        if spec.get("window"):
            parts = window_parts(spec["window"])
            if parts is None or parts[1] not in ("day", "week", "month", "year", *subdaily.MOVABLE):
                raise _Refused(f"a cumulative window of {spec['window']!r}")
            if parts[1] in subdaily.MOVABLE and not subdaily.has_spine(self.subdaily, parts[1]):
                raise _Refused(f"a cumulative window of {spec['window']!r} without a time spine of {parts[1]}")
            return f"window:{parts[0]} {parts[1]}"
        if spec.get("grain_to_date"):
            grain = str(spec["grain_to_date"]).lower()
            if grain not in ("week", "month", "quarter", "year", *subdaily.MOVABLE):
                raise _Refused(f"a cumulative metric to date of {grain!r}")
            if grain in subdaily.MOVABLE and not subdaily.has_spine(self.subdaily, grain):
                raise _Refused(f"a cumulative metric to date of {grain!r} without a time spine of {grain}")
            return f"to_date:{grain}"
        return "all"

    def _period_agg(self, params: Mapping) -> str:
        """Which day's value a cumulative metric shows for a coarser period (MetricFlow's ``period_agg``)."""
        agg = str(mapping(params.get("cumulative_type_params")).get("period_agg") or "first").lower()
        if agg not in ("first", "last", "average"):
            raise _Refused(f"a cumulative metric's period_agg {agg!r}")
        return agg

    def _simple_measure(self, metric: str, params: Mapping, filters: list[str], place: str) -> str:
        value = params.get("measure")
        measure = _name(value)
        if isinstance(value, Mapping):
            filters = [*filters, *filters_of(value.get("filter"), place)]
        if measure in self.reading.measure_refused:
            raise _Refused(f"its measure “{measure}”, which uses {self.reading.measure_refused[measure]}")
        base = self.reading.measures.get(measure)
        if base is None:
            raise SemanticModelError(f"{place}: metric {metric!r}: measure {measure!r} is not defined")
        if not filters:
            return measure
        by_metric = tuple(found for found in (_metric_comparison(text, self.reading, place) for text in filters) if found)
        rest = [text for text in filters if _metric_comparison(text, self.reading, place) is None]
        condition = measure_filter(rest, base.entity, self.reading, place) if rest else None
        copy = replace(base, name=f"{measure}__{metric}", filter=condition, metric_filters=by_metric)  # its day, time: kept
        self.extra_measures.append(copy)
        return copy.name

    def _derived_expr(self, params: Mapping, filters: tuple[str, ...], place: str) -> str:
        expr = str(params.get("expr") or "").strip()
        if not expr:
            raise SemanticModelError(f"{place}: a derived metric needs an expr")
        renames = {}
        for item in params.get("metrics") or []:
            name = _name(item)
            item = mapping(item)
            days: int | str = _offset_days(item.get("offset_window"), self.subdaily)
            if item.get("offset_to_grain"):  # the input at the start of its period: bookings__offset_month
                grain = str(item["offset_to_grain"]).lower()
                spined = grain in subdaily.MOVABLE and subdaily.has_spine(self.subdaily, grain)  # over it (subdaily.py)
                if days or (grain not in ("week", "month", "quarter", "year") and not spined):
                    raise _Refused(f"offset_to_grain {grain!r} (Baton reads week, month, quarter and year, without offset_window)")
                days = grain
            source = self._input(name, place, tuple([*filters_of(item.get("filter"), place), *filters]))
            target = f"{source}{OFFSET_MARK}{days}" if days else source
            if item.get("alias"):
                renames[str(item["alias"])] = target
            elif target != name:  # the expression names the input itself: that name is moved or filtered
                if sum(_name(other) == name for other in params.get("metrics") or []) > 1:
                    raise _Refused("an offset_window or filtered input without an alias beside the same input")
                renames[name] = target
        if renames:
            expr = _WORD.sub(lambda m: renames.get(m.group(0), m.group(0)), expr)
        try:
            tree = parse_metric_expression(expr, "derived metric")
        except SemanticModelError as exc:
            raise _Refused(f"a derived expression Baton does not compute ({exc})") from None
        from sqlglot import exp

        for column in tree.find_all(exp.Column):
            self._input(column.name.split(OFFSET_MARK)[0], place)
        return expr


_COMPARISON = re.compile(r"^\s*(\{\{[^}]*\}\})\s*(>=|<=|!=|<>|>|<|=)\s*(-?\d+(?:\.\d+)?)\s*$")


def _metric_comparison(text: str, reading: Reading, place: str) -> tuple[str, str, str, str] | None:
    """A metric's filter ``{{ Metric('views', ['listing']) }} > 10`` as ``Measure.metric_filters`` holds it
    (metric, dimension, operator, number): the rows whose listing has more than 10 views, as a query's
    ``Metric(...)`` filter is computed; None for any other filter. Grouped by other than one entity or
    dimension Baton reads: ``_Refused``."""
    found = _COMPARISON.match(text)
    calls = calls_in(text, place)
    if found is None or len(calls) != 1 or calls[0][1].function != "Metric":
        if any(call.function == "Metric" for _, call in calls):
            raise _Refused("a Metric(...) filter other than one compared with a number")
        return None
    call = calls[0][1]
    dimension = reading.by_qualified.get(call.group_by[0]) if len(call.group_by) == 1 else None
    if dimension is None:
        raise _Refused("a Metric(...) filter grouped by other than one entity or dimension Baton reads")
    return call.name, dimension, found.group(2), found.group(3)


def _offset_days(window: object, spines: tuple[tuple[str, str, str], ...] = ()) -> int | str:
    """An ``offset_window`` in days (``14 days``, ``1 week``: the input's rows moved), or in months or years
    as ``m<n>`` / ``y<n>`` (``1 month``, ``1 year``: each spine day reads the input at that day less the months,
    MetricFlow's month-end arithmetic, ``timespine.cumulative_part``), of hours, minutes or seconds as
    ``hour1`` where the project declares a spine of that grain (``subdaily.py``), or of a custom grain's
    periods as ``g<n>_<grain>`` (``custom_offsets.py``); other sub-daily grains
    are refused by name."""
    if not window:
        return 0
    count, unit = window_parts(window) or (0, "")
    if unit in ("day", "week") and 0 < count <= 100_000:
        return count * (7 if unit == "week" else 1)
    if unit in ("month", "year") and 0 < count <= 10_000:
        return f"{unit[0]}{count}"  # m1, y1: MetricFlow moves whole periods of its grain by some grains (spine_keys.py)
    if unit in subdaily.MOVABLE and 0 < count <= 100_000 and subdaily.has_spine(spines, unit):
        return subdaily.earlier_spec(count, unit)
    if unit not in (*SUBDAILY, "microsecond", "nanosecond") and unit.isidentifier() and unit.islower() and 0 < count <= 10_000:
        return f"g{count}_{unit}"  # a custom grain's periods (custom_offsets.py; checked against the spine's when asked)
    raise _Refused(f"offset_window of {window!r} (Baton moves inputs by days, weeks, months, years, custom periods, "
                   "and hours, minutes or seconds over a spine of that grain)")


def time_spine(project: MetricFlowProject) -> tuple[str, str] | None:
    """The project's daily time spine as (table, column): ``time_spines`` (a ``node_relation`` and its
    day ``primary_column``), else the legacy ``time_spine_table_configurations``."""
    for config in project.project_configuration:
        for spine in config.get("time_spines") or []:
            column = mapping(mapping(spine).get("primary_column"))
            table = mapping(mapping(spine).get("node_relation")).get("alias")
            if str(column.get("time_granularity") or "").lower() == "day" and table and column.get("name"):
                return (str(table), str(column["name"])) if is_identifier(str(table)) and is_identifier(str(column["name"])) else None
        for legacy in config.get("time_spine_table_configurations") or []:
            legacy = mapping(legacy)
            if str(legacy.get("grain") or "").lower() == "day" and legacy.get("location") and legacy.get("column_name"):
                table, column_name = str(legacy["location"]).split(".")[-1], str(legacy["column_name"])
                return (table, column_name) if is_identifier(table) and is_identifier(column_name) else None
    return None


def _saved_queries(project: MetricFlowProject, model: SemanticModel, refused: list[Refusal]) -> tuple[SavedQuery, ...]:
    from baton.semantic.mf_query import query_from_params
    from baton.semantic.query import SemanticQueryError

    out = []
    for node in project.saved_queries:
        name = str(node.get("name") or "")
        question = str(node.get("label") or name.replace("_", " ")).strip()
        try:
            query = query_from_params(model, mapping(node.get("query_params")))
        except SemanticQueryError as exc:
            refused.append(Refusal(name, "saved query", str(exc), where(node)))
            continue
        out.append(SavedQuery(question, query.to_dict(), name, dict(mapping(node.get("query_params")))))
    return tuple(out)


def build_model(project: MetricFlowProject, default_name: str) -> SemanticModel:
    """The checked model of a project, its refusals recorded (module docstring)."""
    names = {str(m.get("name") or "") for m in project.metrics}
    reading, entities = read_models(project, names)
    builder = _Builder(project, reading)
    builder.build()
    refused = list(reading.refused)
    for name, construct in builder.refused.items():
        node = builder.nodes[name]
        words = tuple(w for w in (str(node.get("label") or ""), *synonyms(node)) if w)
        refused.append(Refusal(name, "metric", construct, where(node), words))
    model = SemanticModel(default_name, tuple(entities), (*reading.measures.values(), *builder.extra_measures),
                          tuple(builder.metrics.values()), tuple(reading.dimensions.values()), refused=tuple(refused),
                          time_spine=builder.spine,
                          custom_grains=declared(project), subdaily_spines=builder.subdaily, internal_metrics=tuple(builder.internal.values()),
                          time_dimensions=time_dimensions(reading))
    if not model.metrics and refused:
        raise SemanticModelError("no metric of the project can be computed: " + "; ".join(r.detail for r in refused[:5]))
    validate(model)
    saved = _saved_queries(project, model, refused)
    return replace(model, saved_queries=saved, refused=tuple(refused))


__all__ = ["build_model", "measure_filter"]
