"""Percentile and median measures (MetricFlow's ``percentile`` and ``median`` aggregations).

A measure keeps its percentile in ``Measure.agg`` as ``percentile:0.99`` (continuous),
``percentile_disc:0.99`` (discrete: a value of the rows) or ``approx_percentile:0.99``
(``use_approximate_percentile``); ``median`` is ``percentile:0.5``, as MetricFlow reads it.

Rendered as MetricFlow renders them: ``PERCENTILE_CONT(p) WITHIN GROUP (ORDER BY x)`` (and
``_DISC``) on PostgreSQL, DuckDB's ``QUANTILE_CONT``/``QUANTILE_DISC`` (the same values), and
the approximate continuous one as DuckDB's ``APPROX_QUANTILE`` — the function MetricFlow calls
there, so the same answer. An approximate percentile on PostgreSQL (MetricFlow has none there),
an approximate discrete one (none anywhere), and any percentile on SQLite and MariaDB/MySQL
(no ordered-set aggregate; MariaDB has percentiles only as window functions) are refused by name.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sqlglot import exp

_KINDS = ("percentile", "percentile_disc", "approx_percentile")


def percentile_agg(agg: str, params: Mapping) -> str:
    """A MetricFlow ``percentile`` or ``median`` measure as ``Measure.agg``; ``ValueError`` naming
    the construct Baton does not compute (the measure is refused by it)."""
    if agg == "median":
        return "percentile:0.5"
    value = params.get("percentile")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise ValueError(f"a percentile of {value!r} (MetricFlow's agg_params.percentile is from 0 to 1)")
    discrete, approximate = bool(params.get("use_discrete_percentile")), bool(params.get("use_approximate_percentile"))
    if discrete and approximate:
        raise ValueError("an approximate discrete percentile (MetricFlow computes it on no engine Baton runs on)")
    kind = "percentile_disc" if discrete else "approx_percentile" if approximate else "percentile"
    return f"{kind}:{float(value)!r}"


def is_percentile(agg: str) -> bool:
    return agg.partition(":")[0] in _KINDS and ":" in agg


def percentile_aggregate(agg: str, value: exp.Expr, dialect: str) -> exp.Expr:
    """The aggregate of ``value`` for a percentile ``agg`` on ``dialect`` (module docstring), or
    ``SemanticQueryError`` naming what this engine lacks."""
    from sqlglot import exp

    from baton.semantic.engine_sql import metric_sql
    from baton.semantic.query import SemanticQueryError

    engine = metric_sql(dialect)  # MetricSQL.percentile, .approximate_percentile
    kind, _, number = agg.partition(":")
    fraction = exp.Literal.number(number)
    if kind == "approx_percentile":
        if not engine.approximate_percentile:
            raise SemanticQueryError(f"an approximate percentile on {dialect or 'this engine'}, which Baton does not compute yet "
                                     "(MetricFlow has one on DuckDB only)")
        return exp.ApproxQuantile(this=value, quantile=fraction)
    if not engine.percentile:
        raise SemanticQueryError(f"the percentile aggregation on {dialect or 'this engine'}, which Baton does not compute yet "
                                 "(it does on DuckDB and PostgreSQL)")
    function = exp.PercentileDisc if kind == "percentile_disc" else exp.PercentileCont
    return exp.WithinGroup(this=function(this=fraction), expression=exp.Order(expressions=[exp.Ordered(this=value)]))


__all__ = ["is_percentile", "percentile_agg", "percentile_aggregate"]
