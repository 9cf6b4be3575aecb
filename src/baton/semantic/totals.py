"""The totals a top N's shares are of: one aggregate over a compiled query's whole result,
counted by the database (``SemanticAgent``'s shares), without fetching the ranking."""

from __future__ import annotations

from typing import TYPE_CHECKING

from baton.semantic.expressions import render_sql

if TYPE_CHECKING:
    from baton.semantic.compiler import CompiledQuery

TOTAL_ROWS = "baton_total_rows"


def totals_query(compiled: CompiledQuery, metrics: list[str]) -> str:
    """One row of ``compiled``'s whole result: its row count (``TOTAL_ROWS``) and the sum of
    each of ``metrics`` over it, counted by the database. The totals a top N's shares are of,
    without fetching the ranking (which may be too long to fetch at all)."""
    import sqlglot
    from sqlglot import exp

    inner = sqlglot.parse_one(compiled.sql, read=compiled.dialect)
    assert isinstance(inner, exp.Query)  # compiled from the model: a SELECT
    sums = [exp.alias_(exp.Sum(this=exp.column(name, table="ranked", quoted=True)), name, quoted=True) for name in metrics]
    outer = exp.select(exp.alias_(exp.Count(this=exp.Star()), TOTAL_ROWS), *sums).from_(inner.subquery("ranked"))
    return render_sql(outer, compiled.dialect)


__all__ = ["TOTAL_ROWS", "totals_query"]
