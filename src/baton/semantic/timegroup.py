"""A time group-by item beside (or instead of) metric time at the query's grain.

A ``SemanticQuery`` groups by metric time once, as ``time`` in ``by`` at its ``grain``. MetricFlow
asks more of time: metric time at a second grain (``metric_time__month`` beside
``metric_time__day``), a date part (``metric_time__extract_dow``), a sub-daily grain, or a time
dimension that is not the metrics' own time (``listing__ds__month``, ``user__bio_added_ts__second``).
Each such item is a ``TimeGroup``: named in ``by`` by its output column (MetricFlow's name), it
says which time (metric time, or a ``TimeDimension`` of the model) and how (a grain or a date
part). Its value on a row is ``group_value``: text at a grain, an integer for a date part
(``timegrain.py``), the same on every engine.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from baton.semantic.errors import SemanticModelError, SemanticQueryError
from baton.semantic.model import GRAINS, TIME, SemanticModel, TimeColumn, TimeDimension
from baton.semantic.timegrain import DATE_PARTS, SUBDAILY, date_part_expression, grain_expression

if TYPE_CHECKING:
    from sqlglot import exp

ALL_GRAINS = (*SUBDAILY, *GRAINS)  # finest first


@dataclass(frozen=True, slots=True)
class TimeGroup:
    name: str  # its output column and its name in ``by``: metric_time__month, listing__ds__day, metric_time__extract_dow
    dimension: str  # TIME (metric time: each measure's own) or the name of a model's TimeDimension
    grain: str | None = None
    date_part: str | None = None  # DATE_PARTS; then no grain

    @classmethod
    def from_dict(cls, data: Any) -> TimeGroup:
        if not isinstance(data, Mapping) or not isinstance(data.get("name"), str) or not isinstance(data.get("dimension"), str):
            raise SemanticModelError("a time group is a mapping with name, dimension and grain or date_part")
        grain, part = data.get("grain"), data.get("date_part")
        custom = isinstance(grain, str) and grain.isidentifier() and grain.islower()  # the spine's (checked by check_group)
        if (grain is None) == (part is None) or (grain is not None and grain not in ALL_GRAINS and not custom) \
                or (part is not None and part not in DATE_PARTS):
            raise SemanticModelError(f"the time group {data['name']!r} takes one grain ({', '.join(ALL_GRAINS)}) "
                                     f"or one date_part ({', '.join(DATE_PARTS)})")
        return cls(data["name"], data["dimension"], grain, part)

    def to_dict(self) -> dict[str, str]:
        out = {"name": self.name, "dimension": self.dimension}
        out.update({"grain": self.grain} if self.grain else {"date_part": self.date_part or ""})
        return out


def finer(grain: str, than: str) -> bool:
    """Whether ``grain`` is finer than ``than`` (both of ``ALL_GRAINS``)."""
    return ALL_GRAINS.index(grain) < ALL_GRAINS.index(than)


def check_group(model: SemanticModel, group: TimeGroup, measures: tuple[str, ...]) -> None:
    """``SemanticModelError`` unless every measure reaches the group's time at a grain (or a date
    part) its data is kept by."""
    if group.dimension == TIME:
        finest = [kept_by(model, m) for m in measures]
    else:
        dimension = time_dimension(model, group.dimension)
        for measure in measures:
            entity = model.measure(measure).entity
            route = model.path(entity, dimension.entity)
            if route is None:
                raise SemanticQueryError(f"{group.name} cannot break down the measure {measure}")
            if len(route) > 1 and _partitions(model, entity) & _partitions(model, dimension.entity):
                raise SemanticQueryError(f"{group.name} through several joins between semantic models partitioned alike "
                                         "(MetricFlow joins their partitions too), which Baton does not compute yet")
        finest = [dimension.grain]
    wanted = group.grain or ("day" if group.date_part in ("day", "dow", "doy") else group.date_part or "day")
    if wanted not in ALL_GRAINS:  # a custom grain (custom_grains.py): whole days of the time spine
        if model.time_spine is None or wanted not in {name for name, _ in model.custom_grains}:
            raise SemanticQueryError(f"{group.name}: no grain {wanted!r} in the project's time spine")
        wanted = "day"
    for kept in finest:
        if finer(wanted, kept):
            raise SemanticQueryError(f"{group.name}: the time is kept by {kept}, finer than that is not known")


def _partitions(model: SemanticModel, entity: str) -> set[str]:
    """The names of an entity's partition time dimensions (MetricFlow's ``is_partition``)."""
    return {d.name[len(entity) + 2:] for d in model.time_dimensions if d.entity == entity and d.partition}


def kept_by(model: SemanticModel, measure: str) -> str:
    """The finest grain of a measure's own time: a sub-daily one where its time dimension declares
    it (MetricFlow's ``time_granularity: hour``), else the one its column is kept by."""
    time = model.time_of(measure)
    if time is None:
        raise SemanticQueryError(f"the measure {measure} has no time")
    entity = model.measure(measure).entity
    declared = next((d.grain for d in model.time_dimensions if d.entity == entity and d.time == time), None)
    return declared if declared in SUBDAILY and time.format in ("native", "timestamp") else time.finest


def time_dimension(model: SemanticModel, name: str) -> TimeDimension:
    for found in model.time_dimensions:
        if found.name == name:
            return found
    raise SemanticModelError(f"no time dimension {name!r}")


def own_rows_value(model: SemanticModel, group: TimeGroup, alias: str, dialect: str) -> exp.Expr:
    """A time dimension's group on its own semantic model's rows (``alias``): a query with no metric."""
    from sqlglot import exp

    from baton.semantic.expressions import parse_fragment

    dimension = time_dimension(model, group.dimension)
    column = parse_fragment(dimension.time.column, f"time dimension {dimension.name}").transform(
        lambda n: exp.column(n.name, table=alias) if isinstance(n, exp.Column) and not n.table else n)
    return group_value(group, dimension.time, column, dialect)


def group_value(group: TimeGroup, time: TimeColumn, value: exp.Expr, dialect: str) -> exp.Expr:
    """The group's value of the time ``value`` (a column of ``time``'s kind) on ``dialect``."""
    if group.date_part:
        return date_part_expression(value, time, group.date_part, dialect)
    try:
        return grain_expression(value, time, group.grain or "day", dialect)
    except ValueError as exc:
        raise SemanticQueryError(f"{group.name}: {exc}") from None


__all__ = ["ALL_GRAINS", "TimeGroup", "check_group", "finer", "group_value", "kept_by", "own_rows_value", "time_dimension"]
