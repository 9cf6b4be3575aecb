"""Metric time over the time spine's days, at every grain a query groups it by.

A cumulative metric, an ``offset_to_grain`` input and an ``offset_window`` of months are read
over the spine (``timespine.cumulative_part``): each spine day, its rows joined to it. MetricFlow
lets a query group that metric time by several grains at once (``metric_time__week`` beside
``metric_time__quarter``, a measure's own ``revenue_instance__ds__month``) or by a custom grain
(``metric_time__alien_day``): each is a ``SpineKey``, valued from the spine day (not the row's
time, which a window or an offset moves away from it).

How MetricFlow joins the spine for an offset input depends on the finest of those grains G and
the offset's own grain O (its ``DataflowPlanBuilder``): G no coarser than O (and not a week for an
``offset_to_grain``) joins *after* aggregation, so whole periods of G move (``bookings_1_month_ago``
by month is the month before's total, and ``offset_to_grain: month`` by month is the month's own
total); else the days are joined *before* aggregation and summed (by year, each day reads the day
a month earlier; by week, the start of the month of each week's first day). ``offset_mode`` says
which. Date parts, sub-daily grains and other time dimensions over these metrics are refused by
name (``check_spine_keys``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from baton.semantic.custom_grains import is_custom
from baton.semantic.measure_uses import custom_offset, months_earlier
from baton.semantic.model import GRAINS, TIME, SemanticModel, TimeColumn
from baton.semantic.query import SemanticQuery, SemanticQueryError
from baton.semantic.timegrain import date_part_expression, grain_expression

if TYPE_CHECKING:
    from sqlglot import exp


@dataclass(frozen=True, slots=True)
class SpineKey:
    name: str  # its output column: time (metric time at the query's grain), metric_time__quarter, ...
    grain: str  # one of GRAINS, or a custom grain's name
    column: str | None = None  # a custom grain's column of the spine
    part: str | None = None  # a date part (then grain is "day"): read only under a custom offset_window


def spine_keys(model: SemanticModel, q: SemanticQuery) -> list[SpineKey]:
    """The query's metric-time group-bys, in its order (``check_spine_keys`` first)."""
    keys = []
    for name in q.by:
        group = q.time_group(name)
        if name == TIME:
            keys.append(SpineKey(TIME, q.grain or "day"))
        elif group is not None and group.dimension == TIME and group.grain is not None:
            custom = dict(model.custom_grains).get(group.grain.lower()) if is_custom(model, group.grain) else None
            keys.append(SpineKey(name, group.grain, custom))
        elif group is not None and group.dimension == TIME and group.date_part is not None:
            keys.append(SpineKey(name, "day", part=group.date_part))
    return keys


def check_spine_keys(model: SemanticModel, q: SemanticQuery, parts: bool = False) -> None:
    """``SemanticQueryError`` naming what is not read over the spine: a time group-by that is not metric
    time at a grain of ``GRAINS`` or a custom one of the spine (a sub-daily grain, another time dimension;
    a date part unless ``parts``: every use a custom offset_window, summed by day)."""
    for group in q.times:
        if group.name not in q.by:
            continue  # a filter's own time: not a key
        if group.dimension == TIME and group.date_part and parts:
            continue
        if group.dimension != TIME or group.date_part or not (group.grain in GRAINS or is_custom(model, group.grain)):
            raise SemanticQueryError("a time group-by other than metric time at a grain of day to year or a custom one "
                                     "(a date part, a sub-daily grain, another time dimension) over a cumulative or "
                                     "offset metric, which Baton does not compute yet")


def finest(keys: list[SpineKey]) -> str | None:
    """The finest standard grain among the keys (None: custom grains or date parts only)."""
    grains = [k.grain for k in keys if k.column is None and k.part is None]
    return min(grains, key=GRAINS.index) if grains else None


def coarse(keys: list[SpineKey]) -> bool:
    """Whether each key's period holds several spine days (no key by day): a cumulative metric's value is
    then its ``period_agg`` of the days (``period_agg.py``)."""
    return bool(keys) and finest(keys) != "day"


def offset_grain(spec: str) -> str:
    """The grain an offset input moves by: ``m1`` (months), ``y1`` (years), or offset_to_grain's own."""
    if months_earlier(spec):
        return "year" if spec.startswith("y") else "month"
    return spec


def offset_mode(keys: list[SpineKey], spec: str) -> str:
    """``days`` (joined before aggregation: each spine day reads its day, the days summed), ``periods``
    (after aggregation: each period of the finest grain reads a whole period), as MetricFlow (module
    docstring), or ``custom`` (an offset_window of custom periods: ``custom_offsets.py``);
    ``SemanticQueryError`` for what is not computed."""
    if custom_offset(spec):  # custom periods: each day moved to its place in a later period (custom_offsets.py)
        return "custom"
    grain = finest(keys)
    if any(k.part is not None for k in keys):
        raise SemanticQueryError("a date part under an offset_to_grain or months offset_window input, which Baton does "
                                 "not compute yet")
    if any(k.column is not None for k in keys):
        raise SemanticQueryError("an offset_to_grain or months offset_window input grouped by a custom grain, which "
                                 "Baton does not compute yet")
    if grain is None or grain == "day":
        return "days"
    to_grain = not months_earlier(spec)
    if GRAINS.index(grain) > GRAINS.index(offset_grain(spec)) or (grain == "week" and to_grain):
        return "days"
    if grain == "week":
        raise SemanticQueryError("an offset_window of months or years by week, which Baton does not compute yet "
                                 "(MetricFlow compares the starts of weeks a month apart)")
    return "periods"


def key_value(key: SpineKey, day: exp.Expr, spine: str, spine_time: TimeColumn, dialect: str) -> exp.Expr:
    """A key's value for the spine day ``day`` (of the spine aliased ``spine``)."""
    from sqlglot import exp

    if key.column is not None:
        return exp.column(key.column, table=spine)
    if key.part is not None:
        return date_part_expression(day.copy(), spine_time, key.part, dialect)
    return grain_expression(day.copy(), spine_time, key.grain, dialect)


def offset_join(keys: list[SpineKey], spec: str, day: exp.Expr, row_day: exp.Expr) -> exp.Expr:
    """Which rows a spine day reads for an offset input (``spec``: ``m1``/``y1`` months earlier, else the
    offset_to_grain's grain): by days, the rows of that day less the months (month-end clamped, as
    MetricFlow's interval arithmetic) or of the first day of its period; by periods (the spine day is
    the first of its period, ``first_days``), the rows of the whole period the months earlier, or of the
    period that starts the offset_to_grain's (``offset_mode``)."""
    from sqlglot import exp

    if offset_mode(keys, spec) == "custom":  # the moved spine's own source day (custom_offsets.moved_spine)
        return exp.EQ(this=row_day.copy(), expression=exp.column("baton_source_day", table="spine"))
    months = months_earlier(spec)
    target = truncated(spec, day) if not months else exp.Cast(this=exp.Sub(this=day.copy(), expression=exp.Interval(
        this=exp.Literal.string(str(months)), unit=exp.Var(this="MONTH"))), to=exp.DataType.build("DATE"))
    if offset_mode(keys, spec) == "periods":
        return exp.EQ(this=truncated(finest(keys) or "day", row_day), expression=target)
    return exp.EQ(this=row_day.copy(), expression=target)


def first_days(keys: list[SpineKey], spec: str, day: exp.Expr) -> exp.Expr | None:
    """The spine days an offset input is read on, where not every day: by periods, the first day of each
    period of the finest grain; by days for an ``offset_to_grain`` without a key by day, the first day of
    a period of any key (MetricFlow's filter of its spine join); else None."""
    from sqlglot import exp

    def first_of(grain: str) -> exp.Expr:
        return exp.EQ(this=truncated(grain, day), expression=day.copy())

    if offset_mode(keys, spec) == "periods":
        return first_of(finest(keys) or "day")
    if months_earlier(spec) or custom_offset(spec) or not keys or finest(keys) == "day":
        return None
    return exp.or_(*(first_of(k.grain) for k in keys))


def truncated(grain: str, day: exp.Expr) -> exp.Expr:
    """The first day of ``day``'s period of ``grain``, as a DATE."""
    from sqlglot import exp

    return exp.Cast(this=exp.func("DATE_TRUNC", exp.Literal.string(grain), day.copy()), to=exp.DataType.build("DATE"))


__all__ = ["SpineKey", "check_spine_keys", "coarse", "finest", "first_days", "key_value", "offset_grain", "offset_join",
           "offset_mode", "spine_keys", "truncated"]
