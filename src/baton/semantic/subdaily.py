"""Metric time by a sub-daily grain over the project's time spine of that grain, as MetricFlow reads it.

A project may declare spines finer than its day spine (``time_spines`` entries whose
``primary_column`` has ``time_granularity: hour``, ``minute``, ``second`` or ``millisecond``;
``SemanticModel.subdaily_spines``). MetricFlow reads metric time by a sub-daily grain from them:

- a query with no metric lists the periods of the coarsest declared spine at or finer than the
  grain, truncated to it (``spine_for``; ``spine_rows.spine_only_sql``), and a ``join_to_timespine``
  metric is LEFT JOINed to them (``timespine.on_time_spine``);
- a cumulative metric (``window: 3 hours``, ``grain_to_date: hour``) and a derived input moved by
  ``offset_window: 1 hour`` or ``offset_to_grain: hour`` are read over the spine of exactly the
  query's grain (``timespine.cumulative_part``): each spine period joined INNER to the measure's
  rows at that grain within the window, at the period the offset earlier, or at its start.

A filter on metric time at such a grain keeps a range of times (``time_filters.subdaily_bounds``,
``Period.between``). Baton generates no sub-daily spine: where the project declares none, the
construct is refused by name (at load for a metric that needs one, ``declared``; at query time
otherwise).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from baton.semantic.engine_sql import metric_sql
from baton.semantic.errors import SemanticQueryError
from baton.semantic.expressions import is_identifier
from baton.semantic.model import TIME, SemanticModel
from baton.semantic.timegrain import SUBDAILY

if TYPE_CHECKING:
    from baton.semantic.mf_project import MetricFlowProject
    from baton.semantic.query import SemanticQuery
    from baton.semantic.timegroup import TimeGroup

MOVABLE = ("hour", "minute", "second")  # the units a sub-daily window or offset_window is read in (INTERVAL units)
_EARLIER = re.compile(r"^(hour|minute|second)(\d+)$")  # an offset_window input's spec: ``hour1``, one hour earlier


def declared(project: MetricFlowProject) -> tuple[tuple[str, str, str], ...]:
    """The project's sub-daily spines as (grain, table, column), from ``time_spines``; one whose table
    or column is not a plain identifier is left out (a query needing it is refused by name)."""
    out = []
    for config in project.project_configuration:
        for spine in config.get("time_spines") or []:
            if not isinstance(spine, dict) or not isinstance(spine.get("primary_column"), dict):
                continue
            column, relation = spine["primary_column"], spine.get("node_relation")
            grain = str(column.get("time_granularity") or "").lower()
            table = str(relation.get("alias") or "") if isinstance(relation, dict) else ""
            if grain in SUBDAILY and is_identifier(table) and is_identifier(str(column.get("name") or "")):
                out.append((grain, table, str(column["name"])))
    return tuple(out)


def has_spine(spines: tuple[tuple[str, str, str], ...], grain: str) -> bool:
    """Whether a spine of exactly ``grain`` is declared (a cumulative or offset metric reads that one)."""
    return any(g == grain for g, _, _ in spines)


def spine_for(model: SemanticModel, grain: str, exact: bool = False) -> tuple[str, str]:
    """The spine (table, column) metric time by ``grain`` is read from: the coarsest declared at or
    finer than it (MetricFlow's choice), or exactly of it; else ``SemanticQueryError`` naming it."""
    finer = [(SUBDAILY.index(g), table, column) for g, table, column in model.subdaily_spines
             if (g == grain if exact else SUBDAILY.index(g) <= SUBDAILY.index(grain))]
    if not finer:
        raise SemanticQueryError(f"metric time by {grain} over a time spine of that grain, which the project does not "
                                 "declare (Baton generates days only)")
    _, table, column = max(finer)
    return table, column


def subdaily_group(q: SemanticQuery) -> TimeGroup | None:
    """The query's metric time group at a sub-daily grain, when it groups metric time by that alone."""
    groups = [t for t in q.times if t.dimension == TIME]
    if TIME in q.by or len(groups) != 1 or groups[0].grain not in SUBDAILY:
        return None
    return groups[0]


def earlier_spec(count: int, unit: str) -> str:
    """An ``offset_window`` of ``count`` sub-daily ``unit``s as a derived input's spec (``hour1``)."""
    return f"{unit}{count}"


def earlier(spec: str) -> tuple[int, str] | None:
    """The (count, unit) of an ``earlier_spec``, else None."""
    found = _EARLIER.match(spec)
    return (int(found.group(2)), found.group(1)) if found else None


def is_subdaily(cumulative: str) -> bool:
    """Whether a measure use's window (``Metric.cumulative``, or a derived input's ``to_grain:`` spec)
    is sub-daily: a window of hours, to date of an hour, an input an hour earlier or at its hour's start."""
    kind, _, spec = cumulative.partition(":")
    if kind == "window":
        return spec.split()[-1] in SUBDAILY
    return kind in ("to_date", "to_grain") and (spec in SUBDAILY or earlier(spec) is not None)


def check(model: SemanticModel, q: SemanticQuery, uses: list, dialect: str) -> None:
    """What a cumulative or offset metric by sub-daily metric time is computed for (else
    ``SemanticQueryError`` naming it): that grain alone, no other group-by, filter or period, a
    spine of exactly that grain, DuckDB or PostgreSQL; a sub-daily window or offset by another grain is refused."""
    group = subdaily_group(q)
    if group is None:
        if any(is_subdaily(c) for _, _, c in uses):
            raise SemanticQueryError("a sub-daily cumulative window, grain_to_date or offset by other than metric time at "
                                     "a sub-daily grain alone, which Baton does not compute yet")
        return
    if not metric_sql(dialect).subdaily_spine:
        raise SemanticQueryError(f"a cumulative or offset metric by a sub-daily grain on {dialect}, which Baton does not "
                                 "compute yet (it does on DuckDB and PostgreSQL)")
    if q.by != (group.name,) or q.where or q.conditions or q.periods or q.metric_filters:
        raise SemanticQueryError("a cumulative or offset metric by a sub-daily grain beside other group-bys or filters, "
                                 "which Baton does not compute yet")
    for _, offset, cumulative in uses:
        kind, _, spec = cumulative.partition(":")
        if offset or (kind == "to_grain" and spec not in SUBDAILY and earlier(spec) is None):
            raise SemanticQueryError("an offset_window of days or more, or offset_to_grain of a day or more, by a "
                                     "sub-daily grain, which Baton does not compute yet")
    spine_for(model, group.grain or "", exact=True)


__all__ = ["MOVABLE", "check", "declared", "earlier", "earlier_spec", "has_spine", "is_subdaily", "spine_for",
           "subdaily_group"]
