"""MetricFlow's conversion metrics: of the base events (visits), those an entity converted (buys).

Each conversion event (a buy) is credited to the latest base event (visit) of the same entity
(``user``) at or before it, within the window when there is one (``v.ds <= b.ds AND v.ds >
b.ds - 7 days``) and holding the ``constant_properties`` equal; the group-by values are that
base event's. ``conversions`` is the conversion measure over the credited buys (``fill_nulls_with``
where a group has none), ``conversion_rate`` it divided by the base measure of the group, as
doubles. One SELECT of portable SQL (DuckDB, PostgreSQL): the base measure and the credited
conversions stacked with ``UNION ALL`` and grouped again (no FULL OUTER JOIN), the latest base
event per conversion row by ``ROW_NUMBER()`` over the conversion rows numbered once.

MetricFlow compares the two events' times at the metric's grain: the coarsest of its measures' time
dimensions' grains (``buys_month`` by its ``ds_month``: months). At a grain coarser than day, or with a
window of months, quarters or years, both times are truncated to that grain (``DATE_TRUNC``) and the
window subtracted as an interval (``v_month <= b_month AND v_month > b_month - INTERVAL '1 month'``),
as MetricFlow's SQL does: on DuckDB and PostgreSQL, over DATE/TIMESTAMP columns.

Refused by name (``SemanticQueryError``): a conversion metric beside other metrics or under a
ratio/derived one, with a filter, a where condition or time range (but a custom grain's period, filtering
the base events), a window or grain coarser than day on another engine or over times kept as text,
a grain coarser than day with a group-by beside metric time (``_at_grain``: not reproducible),
a sub-daily window, ``join_to_timespine``, or a constant property or entity not on both semantic
models' own rows.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from baton.semantic.compiler import (
    CompiledQuery,
    _aggregate,
    _Branch,
    _group_value,
    _measure_filter,
    _qualify,
    time_value,
)
from baton.semantic.engine_sql import metric_sql
from baton.semantic.expressions import parse_fragment, render_sql
from baton.semantic.mf_models import window_parts
from baton.semantic.model import TIME, SemanticModel, TimeColumn
from baton.semantic.ordering import ordered_and_limited, output_name
from baton.semantic.query import SemanticQuery, SemanticQueryError

if TYPE_CHECKING:
    from sqlglot import exp

_REFUSED = "which Baton does not compute yet"


@dataclass(frozen=True, slots=True)
class Conversion:
    measure: str  # the conversion measure (buys); the metric's own measure is the base (visits)
    entity: str  # the entity both share (user)
    calculation: str  # "conversion_rate" or "conversions"
    window_days: int = 0  # 0: no window (any earlier base event), or a window of months, quarters or years
    window: tuple[int, str] | None = None  # the window as written: (1, "month")
    constants: tuple[tuple[str, str], ...] = ()  # (base property, conversion property)
    fill_nulls: float | None = None  # the conversion measure's fill_nulls_with


def _name(value: Any) -> str:
    return str(value.get("name") if isinstance(value, Mapping) else value or "")


def conversion_of(params: Mapping, filters: list[str], measures: Mapping, refused: Callable[[str], Exception]
                  ) -> tuple[str, Conversion]:
    """(base measure, ``Conversion``) of a MetricFlow conversion metric's ``type_params``; ``refused(construct)``
    raised for what is not computed."""
    spec = params.get("conversion_type_params")
    spec = spec if isinstance(spec, Mapping) else {}
    if filters:
        raise refused("a filter on a conversion metric")
    base, conv = spec.get("base_measure"), spec.get("conversion_measure")
    for side in (base, conv):
        if isinstance(side, Mapping) and (side.get("join_to_timespine") or side.get("filter")):
            raise refused("a conversion metric's measure with join_to_timespine or a filter")
    if isinstance(base, Mapping) and base.get("fill_nulls_with") is not None:
        raise refused("a conversion metric's base measure with fill_nulls_with")
    for measure in (_name(base), _name(conv)):
        if measure not in measures:
            raise refused(f"a conversion metric over the measure {measure!r}")
    calculation = str(spec.get("calculation") or "conversion_rate").lower()
    if calculation not in ("conversion_rate", "conversions"):
        raise refused(f"a conversion calculation {calculation!r}")
    days, window = 0, None
    if spec.get("window"):
        window = window_parts(spec["window"])
        if window is None or window[1] not in ("day", "week", "month", "quarter", "year"):
            raise refused(f"a conversion window of {spec['window']!r}")
        days = window[0] * (7 if window[1] == "week" else 1) if window[1] in ("day", "week") else 0
    constants = []
    for item in spec.get("constant_properties") or ():
        if not isinstance(item, Mapping):
            raise refused("a conversion metric's constant_properties")
        constants.append((str(item.get("base_property")), str(item.get("conversion_property"))))
    fill = conv.get("fill_nulls_with") if isinstance(conv, Mapping) else None
    return _name(base), Conversion(_name(conv), str(spec.get("entity") or ""), calculation, days, window, tuple(constants),
                                   float(fill) if fill is not None else None)


def _on_custom_grains(q: SemanticQuery, condition: str) -> bool:
    """Whether a query condition names time groups only (a custom grain's period: ``custom_grains.py``)."""
    import sqlglot
    from sqlglot import exp

    columns = list(sqlglot.parse_one(condition).find_all(exp.Column))
    return bool(columns) and all(c.table == "dimension" and q.time_group(c.name) is not None for c in columns)


def _local(model: SemanticModel, name: str, entity: str, alias: str) -> exp.Expr:
    """A dimension or entity on ``entity``'s own rows (the shared entity, a constant property)."""
    for dimension in model.dimensions:
        if dimension.name == name or name in dimension.qualified:
            local = dimension.expr if dimension.entity == entity else dimension.local_expr(entity)
            if local is not None:
                return _qualify(parse_fragment(local, f"dimension {name}"), alias)
    raise SemanticQueryError(f"a conversion metric whose {name!r} is not on {entity}'s own rows, {_REFUSED}")


def compile_conversion(model: SemanticModel, query: SemanticQuery, dialect: str) -> CompiledQuery:
    """One SELECT for a query of one conversion metric (module docstring)."""
    from sqlglot import exp

    q = query.check(model)
    if len(q.metrics) != 1 or model.metric(q.metrics[0]).conversion is None:
        raise SemanticQueryError(f"a conversion metric beside other metrics, {_REFUSED}")
    if q.where or q.metric_filters or q.periods or not all(_on_custom_grains(q, c) for c in q.conditions):
        raise SemanticQueryError(f"a conversion metric with a where filter or a time range, {_REFUSED}")
    name = q.metrics[0]
    metric = model.metric(name)
    spec: Conversion = metric.conversion  # type: ignore[assignment]
    base, conv = model.measure(metric.measure or ""), model.measure(spec.measure)
    if base.filter or conv.filter or base.non_additive or conv.non_additive:
        raise SemanticQueryError(f"a conversion metric over a filtered or semi-additive measure, {_REFUSED}")
    base_time, conv_time = model.time_of(base.name), model.time_of(conv.name)
    if base_time is None or conv_time is None or base_time.entity or conv_time.entity:
        raise SemanticQueryError(f"a conversion metric whose measures are not timed by their own rows, {_REFUSED}")
    dims = list(q.by)
    names = [output_name(d, q) for d in dims]
    # the base events grouped
    branch = _Branch(model, base.entity, base_time)
    values = [_group_value(branch, model, q, d, dialect) for d in dims]  # a time group: of the base event's time
    filters = [_measure_filter(branch, model, c, q.grain, dialect, q) for c in q.conditions]  # before the joins are read
    opportunities = exp.Select().from_(branch.source(), copy=False)
    for join in branch.joins:
        opportunities = opportunities.join(join, copy=False)
    for value, out in zip(values, names):
        opportunities = opportunities.select(exp.alias_(value, out), copy=False)
    base_value = _qualify(parse_fragment(base.expr, f"measure {base.name}"), branch.root.name)
    opportunities = opportunities.select(exp.alias_(_aggregate(base.agg, base_value), "m_base"), copy=False)
    opportunities = opportunities.select(exp.alias_(exp.Null(), "m_conv"), copy=False)
    # a filter on a custom grain's period: on the base events, counted and credited alike (as MetricFlow filters them)
    if filters:
        opportunities = opportunities.where(exp.and_(*filters), copy=False)
    if dims:
        opportunities = opportunities.group_by(*[v.copy() for v in values], copy=False)
    # each conversion row with the latest base event before it
    credited = _Branch(model, base.entity, base_time)
    cvalues = [_group_value(credited, model, q, d, dialect) for d in dims]
    rows = model.entity(conv.entity)
    numbered = exp.Select().select(exp.Star(), copy=False).select(
        exp.alias_(exp.Window(this=exp.RowNumber()), "baton_row"), copy=False).from_(
        exp.alias_(credited.table(rows), "baton_c", table=True), copy=False)
    c, b = "baton_conv", credited.root.name
    on: list[exp.Expr] = [exp.EQ(this=_local(model, spec.entity, base.entity, b), expression=_local(model, spec.entity, conv.entity, c))]
    raw = time_value(base_time, b)
    b_time, c_time = _at_grain(model, base.name, conv.name, spec, raw, time_value(conv_time, c), base_time, conv_time, dialect,
                               any(d != TIME for d in dims))
    on.append(exp.LTE(this=b_time, expression=c_time))
    if spec.window is not None and not spec.window_days:  # months, quarters, years: an interval, as MetricFlow
        count, unit = spec.window
        interval = exp.DateSub(this=c_time.copy(), expression=exp.Literal.number(count), unit=exp.Var(this=unit.upper()))
        on.append(exp.GT(this=b_time.copy(), expression=interval))
    elif spec.window_days:
        start = exp.DateAdd(this=exp.Cast(this=c_time.copy(), to=exp.DataType.build("DATE")),
                            expression=exp.Literal.number(-spec.window_days), unit=exp.Var(this="DAY"))
        on.append(exp.GT(this=b_time.copy(), expression=exp.Cast(this=start, to=exp.DataType.build("DATE"))))
    for base_property, conv_property in spec.constants:
        on.append(exp.EQ(this=_local(model, base_property, base.entity, b), expression=_local(model, conv_property, conv.entity, c)))
    latest = exp.Window(this=exp.RowNumber(), partition_by=[exp.column("baton_row", table=c)],
                        order=exp.Order(expressions=[exp.Ordered(this=b_time.copy(), desc=True), exp.Ordered(this=raw, desc=True)]))
    inner = exp.Select().from_(exp.alias_(exp.Subquery(this=numbered), c, table=True), copy=False)
    inner = inner.join(exp.Join(this=credited.source(), on=exp.and_(*on)), copy=False)
    credited_filters = [_measure_filter(credited, model, c, q.grain, dialect, q) for c in q.conditions]
    for join in credited.joins:
        inner = inner.join(join, copy=False)
    if credited_filters:
        inner = inner.where(exp.and_(*credited_filters), copy=False)
    for value, out in zip(cvalues, names):
        inner = inner.select(exp.alias_(value, out), copy=False)
    conv_value = _qualify(parse_fragment(conv.expr, f"measure {conv.name}"), c)
    inner = inner.select(exp.alias_(conv_value, "baton_value"), exp.alias_(latest, "baton_rank"), copy=False)
    conversions = exp.Select().from_(exp.alias_(exp.Subquery(this=inner), "credited", table=True), copy=False)
    for out in names:
        conversions = conversions.select(exp.column(out, table="credited"), copy=False)
    conversions = conversions.select(exp.alias_(exp.Null(), "m_base"), copy=False).select(
        exp.alias_(_aggregate(conv.agg, exp.column("baton_value", table="credited")), "m_conv"), copy=False)
    conversions = conversions.where(exp.EQ(this=exp.column("baton_rank", table="credited"), expression=exp.Literal.number(1)),
                                    copy=False)
    if dims:
        conversions = conversions.group_by(*[exp.column(out, table="credited") for out in names], copy=False)
    if metric_sql(dialect).typed_union_nulls:  # two bare NULLs in a UNION's column are text there (compiler._placeholder)
        opportunities.expressions[-1].set("this", exp.Cast(this=exp.Null(), to=exp.DataType.build("DOUBLE")))
        conversions.expressions[len(names)].set("this", exp.Cast(this=exp.Null(), to=exp.DataType.build("DOUBLE")))
    stacked = exp.union(opportunities, conversions, distinct=False)
    select = exp.Select().from_(exp.alias_(exp.Subquery(this=stacked), "measures", table=True), copy=False)
    for out in names:
        select = select.select(exp.column(out, table="measures"), copy=False)
    converted: exp.Expr = exp.Max(this=exp.column("m_conv", table="measures"))
    if spec.calculation == "conversions":
        if spec.fill_nulls is not None:
            converted = exp.Coalesce(this=converted, expressions=[exp.Literal.number(spec.fill_nulls)])
        value = converted
    else:
        value = exp.Div(this=exp.Cast(this=converted, to=exp.DataType.build("DOUBLE")),
                        expression=exp.Nullif(this=exp.Max(this=exp.column("m_base", table="measures")),
                                              expression=exp.Literal.number(0)))
    select = select.select(exp.alias_(value, name), copy=False)
    if dims:
        select = select.group_by(*[exp.column(out, table="measures") for out in names], copy=False)
    select = ordered_and_limited(select, q, names)
    return CompiledQuery(render_sql(select, dialect), q, (*names, name), dialect)


def _grain(model: SemanticModel, base: str, conv: str) -> str:
    """The grain MetricFlow compares a conversion's two events at: the coarsest of its measures' own
    (a sub-daily one refused: MetricFlow would compare at it)."""
    from baton.semantic.model import GRAINS
    from baton.semantic.timegroup import kept_by

    grains = [kept_by(model, base), kept_by(model, conv)]
    if not all(g in GRAINS for g in grains):
        raise SemanticQueryError(f"a conversion metric over sub-daily times, {_REFUSED}")
    return max(grains, key=GRAINS.index)


def _at_grain(model: SemanticModel, base: str, conv: str, spec: Conversion, b_time: exp.Expr, c_time: exp.Expr,
              base_time: TimeColumn, conv_time: TimeColumn, dialect: str, by_dimension: bool) -> tuple[exp.Expr, exp.Expr]:
    """Both events' times as MetricFlow compares them (module docstring): a DATE/TIMESTAMP by its day, at a
    coarser grain (or for a window of months, quarters, years) truncated, where the engine has ``DATE_TRUNC``
    (``MetricSQL.date_trunc``: DuckDB and PostgreSQL).
    At a coarser grain, grouped by a dimension of the base events: refused, MetricFlow credits each
    conversion to one of the base events of its period (FIRST_VALUE over equal months): the engine's row
    order picks which, so which dimension value gets it is not reproducible."""
    from sqlglot import exp

    grain = _grain(model, base, conv)
    if grain != "day" and by_dimension:
        raise SemanticQueryError(f"a conversion metric compared by {grain} and grouped by a dimension of its base events, "
                                 f"{_REFUSED} (MetricFlow credits each conversion to one base event of its {grain}, which "
                                 "the engine's row order picks: not reproducible)")
    native = base_time.format == "native" and conv_time.format == "native"
    if grain == "day" and (spec.window is None or spec.window_days):
        if not native:  # ISO text compares as it sorts
            return b_time, c_time
        date = exp.DataType.build("DATE")
        return exp.Cast(this=b_time, to=date), exp.Cast(this=c_time, to=date.copy())
    if not metric_sql(dialect).date_trunc or not native:
        raise SemanticQueryError(f"a conversion window or grain of {grain} on {dialect} or over times kept as text, {_REFUSED}")
    return _truncated(b_time, grain), _truncated(c_time, grain)


def _truncated(time: exp.Expr, grain: str) -> exp.Expr:
    """A DATE/TIMESTAMP at ``grain`` as a DATE (MetricFlow's ``DATE_TRUNC(grain, ds)``)."""
    from sqlglot import exp

    date = exp.DataType.build("DATE")
    return exp.Cast(this=exp.DateTrunc(this=exp.Cast(this=time, to=date), unit=exp.Literal.string(grain.upper())),
                    to=date.copy())


def reads_conversion(model: SemanticModel, name: str) -> bool:
    """Whether ``name`` is a conversion metric (``compile_conversion`` answers it, alone)."""
    return model.has_metric(name) and model.metric(name).conversion is not None


__all__ = ["Conversion", "compile_conversion", "conversion_of", "reads_conversion"]
