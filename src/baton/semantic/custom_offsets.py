"""An ``offset_window`` of custom periods (``1 alien_day``): each spine day moved into a later period.

MetricFlow moves a day of a custom period (a column of the time spine, ``custom_grains.py``) to
the day at the same place in the period ``n`` periods later: that period's first day plus the
day's row number in its own period less one, held at that period's last day when the later
period is shorter (its ``OffsetByCustomGranularityNode``: FIRST_VALUE/LAST_VALUE of the days,
ROW_NUMBER, LEAD over the periods). A row of day ``d`` counts at the day ``d`` is moved to, so
``moved_spine`` is the spine as ``timespine.cumulative_part`` reads it, one row per moved day
and source day (``baton_source_day``), with the custom columns of the moved day; the metric-time
group-bys (grains, date parts, custom grains) are the moved day's (``spine_keys.py``).

Grouped by the offset's own custom grain alone MetricFlow moves whole periods another way; that,
and a time constraint, are refused by name (``check_custom_offset``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from baton.semantic.custom_grains import is_custom
from baton.semantic.measure_uses import custom_offset
from baton.semantic.model import SemanticModel
from baton.semantic.query import SemanticQuery, SemanticQueryError
from baton.semantic.spine_keys import SpineKey
from baton.semantic.spine_source import spine_source

if TYPE_CHECKING:
    from sqlglot import exp

_MOVED = """
SELECT moved.ds AS {day}, moved.source_day AS baton_source_day{customs}
FROM (
  SELECT days.d AS source_day,
         CASE WHEN periods.first_o + CAST(days.rn - 1 AS INTEGER) <= periods.last_o
              THEN periods.first_o + CAST(days.rn - 1 AS INTEGER) ELSE periods.last_o END AS ds
  FROM (SELECT CAST(s.{day} AS DATE) AS d, s.{column} AS period,
               ROW_NUMBER() OVER (PARTITION BY s.{column} ORDER BY s.{day}) AS rn
        FROM baton_spine_table AS s) AS days
  INNER JOIN (
    SELECT bounds.period, LEAD(bounds.first_d, {count}) OVER (ORDER BY bounds.period) AS first_o,
           LEAD(bounds.last_d, {count}) OVER (ORDER BY bounds.period) AS last_o
    FROM (SELECT s.{column} AS period, MIN(CAST(s.{day} AS DATE)) AS first_d, MAX(CAST(s.{day} AS DATE)) AS last_d
          FROM baton_spine_table AS s GROUP BY s.{column}) AS bounds
  ) AS periods ON days.period = periods.period
) AS moved
LEFT JOIN baton_spine_table AS s2 ON CAST(s2.{day} AS DATE) = moved.ds
"""


def check_custom_offset(model: SemanticModel, q: SemanticQuery, keys: list[SpineKey], spec: str) -> None:
    """``SemanticQueryError`` naming what of a custom offset is not computed (module docstring)."""
    count, grain = custom_offset(spec) or (0, "")
    if not is_custom(model, grain) or not 0 < count <= 10_000:
        raise SemanticQueryError(f"an offset_window of {count} {grain}, not a custom grain of the project's time spine")
    if q.periods:
        raise SemanticQueryError("an offset_window of custom periods with a time constraint, which Baton does not compute "
                                 "yet")
    if not keys or all(k.grain == grain for k in keys):
        raise SemanticQueryError("an offset_window of custom periods grouped by that grain alone (MetricFlow moves whole "
                                 "periods), which Baton does not compute yet")


def moved_spine(model: SemanticModel, spec: str, alias: str, dialect: str) -> exp.Expr:
    """The spine with each day moved by the custom offset ``spec`` (module docstring), aliased ``alias``."""
    import sqlglot
    from sqlglot import exp

    assert model.time_spine is not None  # is_custom: none without a spine
    count, grain = custom_offset(spec) or (0, "")
    _, day = model.time_spine
    columns = dict(model.custom_grains)
    customs = "".join(f", s2.{c} AS {c}" for c in dict.fromkeys(columns.values()))
    text = _MOVED.format(day=day, customs=customs, column=columns[grain], count=count)
    tree = sqlglot.parse_one(text, read="duckdb")  # identifiers checked where declared (custom_grains.declared)

    def spine_table(node):
        if isinstance(node, exp.Table) and node.name == "baton_spine_table":
            return spine_source(model, node.alias, dialect)
        return node

    return exp.alias_(exp.Subquery(this=tree.transform(spine_table)), alias, table=True)


__all__ = ["check_custom_offset", "moved_spine"]
