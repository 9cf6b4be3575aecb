"""How a compiled semantic query names and orders its output columns: metric time's column is
named after its grain; rows come in the query's own order, then by the group-by ascending (so an
answer is the same every time it is asked), and are limited."""

from __future__ import annotations

from typing import TYPE_CHECKING

from baton.semantic.model import TIME

if TYPE_CHECKING:
    from sqlglot import exp

    from baton.semantic.query import SemanticQuery


def output_name(name: str, query: SemanticQuery) -> str:
    return (query.grain or "month") if name == TIME else name


def ordered_and_limited(select: exp.Select, q: SemanticQuery, names) -> exp.Select:
    """The query's own order, then its group-by ``names`` ascending (a stable answer), and its limit."""
    from sqlglot import exp

    ordered = [(output_name(n, q), desc) for n, desc in q.order]
    ordered += [(n, False) for n in names if n not in {o for o, _ in ordered}]
    for name, desc in ordered:
        select = select.order_by(exp.Ordered(this=exp.column(name), desc=desc), copy=False)
    if q.limit is not None:
        select = select.limit(q.limit, copy=False)
    return select


__all__ = ["ordered_and_limited", "output_name"]
