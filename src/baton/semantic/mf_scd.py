"""A MetricFlow slowly changing dimension's validity window, as ``Join.validity``.

A semantic model whose time dimensions carry ``validity_params`` (``is_start``, ``is_end``)
keeps one row per key and period of validity (SCD Type II). It is joined like any other, on
its entity, and the row kept is the one valid at the measure's time (``joins.py``). Read when
the model has exactly one start and one end, each a plain column; otherwise its dimensions
stay refused by name (``mf_models``).
"""

from __future__ import annotations

from collections.abc import Mapping

from baton.semantic.expressions import is_identifier


def scd_window(node: Mapping) -> tuple[str, str] | None:
    """(start column, end column) of a semantic model's validity window, or None when it has
    none Baton reads (none declared, one missing or repeated, an expression)."""
    starts: list[str] = []
    ends: list[str] = []
    for dim in node.get("dimensions") or []:
        params = dim.get("type_params") if isinstance(dim, Mapping) else None
        validity = params.get("validity_params") if isinstance(params, Mapping) else None
        if not isinstance(validity, Mapping):
            continue
        column = str(dim.get("expr") or dim.get("name") or "").strip()
        if validity.get("is_start"):
            starts.append(column)
        if validity.get("is_end"):
            ends.append(column)
    if len(starts) != 1 or len(ends) != 1 or not is_identifier(starts[0]) or not is_identifier(ends[0]):
        return None
    return starts[0], ends[0]


__all__ = ["scd_window"]
