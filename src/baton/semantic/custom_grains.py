"""Custom granularities: periods a project defines as columns of its daily time spine.

MetricFlow's ``time_spines`` entry of the day spine may list ``custom_granularities`` (``alien_day``,
a fiscal quarter): each is a column of the spine (``column_name``, else its name) giving every
day's period. A query asks for one as a grain (``metric_time__alien_day``, ``listing__ds__alien_day``,
``TimeDimension('booking__ds', 'alien_day')``), and MetricFlow computes it by LEFT JOINing the
spine on the time's day and taking the column: so does Baton, one join of the spine per time
read at a custom grain in a branch (``grain_value``). A day missing from the spine has no
period (NULL), as in MetricFlow.

An ``offset_window`` of custom periods is ``custom_offsets.py``'s; a cumulative metric by one takes
the spine's column for each spine day (``spine_keys.py``); a time dimension's custom grain in a query
with no metric is ``custom_join``. What MetricFlow computes around a custom grain through its spine in
other ways (``join_to_timespine`` beside other grains) is refused by name where it is asked.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from baton.semantic.engine_sql import metric_sql
from baton.semantic.errors import SemanticQueryError
from baton.semantic.expressions import is_identifier, parse_fragment
from baton.semantic.model import TIME, SemanticModel, TimeColumn
from baton.semantic.spine_source import spine_source
from baton.semantic.timegrain import grain_expression
from baton.semantic.timegroup import TimeGroup, group_value

if TYPE_CHECKING:
    from sqlglot import exp

    from baton.semantic.joins import Branch
    from baton.semantic.mf_project import MetricFlowProject
    from baton.semantic.query import SemanticQuery


def declared(project: MetricFlowProject) -> tuple[tuple[str, str], ...]:
    """The day spine's ``custom_granularities`` as (name, column), names lower-case; one whose name
    or column is not a plain identifier is left out (a query naming it is told no such grain)."""
    out = []
    for config in project.project_configuration:
        for spine in config.get("time_spines") or []:
            primary = spine.get("primary_column") if isinstance(spine, dict) else None
            if not isinstance(primary, dict) or str(primary.get("time_granularity") or "").lower() != "day":
                continue
            for item in spine.get("custom_granularities") or ():
                if not isinstance(item, dict) or not isinstance(item.get("name"), str):
                    continue
                name, column = item["name"].lower(), str(item.get("column_name") or item["name"])
                if is_identifier(name) and is_identifier(column):
                    out.append((name, column))
    return tuple(out)


def custom_names(model: SemanticModel) -> tuple[str, ...]:
    """The custom grains a model's time spine declares."""
    return tuple(name for name, _ in model.custom_grains) if model.time_spine is not None else ()


def is_custom(model: SemanticModel, grain: str | None) -> bool:
    return grain is not None and grain.lower() in custom_names(model)


def grain_value(branch: Branch, model: SemanticModel, group: TimeGroup, time: TimeColumn, value: exp.Expr,
                dialect: str) -> exp.Expr:
    """A time group's value of ``value`` on the branch's rows: a custom grain through a LEFT JOIN
    of the time spine on the time's day (module docstring), else ``timegroup.group_value``."""
    from sqlglot import exp

    if not is_custom(model, group.grain):
        return group_value(group, time, value, dialect)
    assert model.time_spine is not None  # custom_names: none without a spine
    _, day_column = model.time_spine
    column = dict(model.custom_grains)[str(group.grain).lower()]
    alias = f"baton_spine_{len(branch.used)}"
    branch.used.add(alias)
    spine_day = grain_expression(exp.column(day_column, table=alias), TimeColumn(day_column, "native"), "day", dialect)
    on = exp.EQ(this=spine_day, expression=grain_expression(value, time, "day", dialect))
    branch.joins.append(exp.Join(this=spine_source(model, alias, dialect), side="LEFT", on=on))
    return exp.column(column, table=alias)


def custom_join(model: SemanticModel, group: TimeGroup, alias: str, index: int, dialect: str) -> tuple[exp.Join, exp.Expr]:
    """A time dimension's custom-grain period on its own semantic model's rows (``alias``: a query with
    no metric): the LEFT JOIN of the spine on the time's day, and the spine's column."""
    from sqlglot import exp

    from baton.semantic.timegroup import time_dimension

    assert model.time_spine is not None  # is_custom: none without a spine
    _, day_column = model.time_spine
    time = time_dimension(model, group.dimension).time
    value = parse_fragment(time.column, f"time dimension {group.dimension}").transform(
        lambda n: exp.column(n.name, table=alias) if isinstance(n, exp.Column) and not n.table else n)
    spine = f"baton_spine_{index}"
    day = grain_expression(exp.column(day_column, table=spine), TimeColumn(day_column, "native"), "day", dialect)
    on = exp.EQ(this=day, expression=grain_expression(value, time, "day", dialect))
    join = exp.Join(this=spine_source(model, spine, dialect), side="LEFT", on=on)
    return join, exp.column(dict(model.custom_grains)[str(group.grain).lower()], table=spine)


def spine_grain(model: SemanticModel, q: SemanticQuery) -> tuple[str, str] | None:
    """(output name, spine column) when a query groups by metric time at a custom grain and by no other
    time (``join_to_timespine``: the spine's periods are that column's values)."""
    groups = [q.time_group(b) for b in q.by]
    custom = [g for g in groups if g is not None and g.dimension == TIME and is_custom(model, g.grain)]
    if TIME in q.by or len(custom) != 1 or len([g for g in groups if g is not None]) != 1:
        return None
    return custom[0].name, dict(model.custom_grains)[str(custom[0].grain).lower()]


def check_filtered(branch: Branch, dialect: str) -> None:
    """``SemanticQueryError`` where a query condition on a custom grain's period is not computed: on
    SQLite and MariaDB (MetricFlow's ``CAST(... AS TIMESTAMP)`` comparisons do not hold on dates kept
    as text: ``MetricSQL.timestamp_comparisons``), over a cumulative metric (MetricFlow filters its
    spine's days, not its rows)."""
    if not metric_sql(dialect).timestamp_comparisons:
        raise SemanticQueryError(f"a filter on a custom grain's periods on {dialect}, which Baton does not compute (it "
                                 "does on DuckDB and PostgreSQL)")
    if branch.cumulative:
        raise SemanticQueryError("a filter on a custom grain's periods over a cumulative metric, which Baton does not "
                                 "compute yet")


__all__ = ["check_filtered", "custom_join", "custom_names", "declared", "grain_value", "is_custom", "spine_grain"]
