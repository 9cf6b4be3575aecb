"""How metric SQL (``baton.semantic``) is written on one engine: ``Engine.metric_sql``.

The semantic layer builds one sqlglot tree per query and sqlglot writes it in the engine's
dialect; what sqlglot cannot bridge (a week's Monday, an ISO weekday, a generated series of
days, the typing of a UNION's NULLs) or what Baton only computes where MetricFlow's SQL holds
(percentiles, date truncation, the time spine's date arithmetic, FULL OUTER JOIN) is declared
here, per engine, so that ``baton.semantic`` never compares a dialect name.

A template is SQL in the engine's dialect with ``{c}`` where the value goes. A member left at
its default is something the engine does not render: the semantic layer refuses the query by
name (``SemanticQueryError``), never writes SQL that would answer something else. This module
imports nothing of Baton's: ``baton.semantic`` reads it, never the other way round.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class MetricSQL:
    """One engine's answers to what the semantic layer's SQL needs (module docstring)."""

    # the Monday of the week of ISO text ``{c}`` (its first 10 characters), as ``YYYY-MM-DD`` text
    week_start: str | None = None
    # over a DATE ``{c}``, an integer: ISO weekday (Monday 1 .. Sunday 7, as MetricFlow) and day of the year
    iso_weekday: str | None = None
    day_of_year: str | None = None
    # a strftime format writing a time to the millisecond by itself (SQLite's ``%f`` is ``SS.SSS``);
    # None: formatted to the microsecond (``%f``) and cut to the millisecond
    millisecond_format: str | None = None
    # the days from ``b.lo`` to ``b.hi`` (timestamps), one row each, as a select expression:
    # the time spine a project declares none of is generated with it (semantic/spine_source.py)
    day_series: str | None = None
    # a UNION types its columns pairwise, so two bare NULLs are text (then ``text and bigint
    # cannot be matched``: PostgreSQL): a measure's NULL placeholder is written typed
    typed_union_nulls: bool = False
    # FULL OUTER JOIN (a query with no metric over several semantic models joins them so)
    full_outer_join: bool = False
    # DATE and TIMESTAMP values are typed (SQLite keeps them as text: a day does not compare
    # with a timestamp), so a slowly changing dimension's row valid at a day is found
    typed_dates: bool = False
    # MetricFlow's ``CAST(... AS TIMESTAMP)`` comparisons of a custom grain's periods hold
    timestamp_comparisons: bool = False
    # ``PERCENTILE_CONT``/``_DISC`` (p) WITHIN GROUP, and an approximate continuous percentile
    percentile: bool = False
    approximate_percentile: bool = False
    # ``DATE_TRUNC`` of a DATE/TIMESTAMP to a coarser grain (a conversion window of months...)
    date_trunc: bool = False
    # the time spine's date arithmetic (``INTERVAL``, ``DATE_TRUNC``) a cumulative or offset
    # metric is read over, by day and coarser and by a sub-daily grain
    spine_arithmetic: bool = False
    subdaily_spine: bool = False

    def day_part(self, part: str) -> str | None:
        """The template of a day part over a DATE: ``dow`` (ISO) or ``doy``."""
        return {"dow": self.iso_weekday, "doy": self.day_of_year}[part]


__all__ = ["MetricSQL"]
