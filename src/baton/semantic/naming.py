"""A draft's names made unique: one name for each metric and dimension, the bare word kept as the
synonym of the part people mean by it (``draft.py``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from baton.semantic.words import said

Check = Callable[..., None]  # _Drafter.check(kind, target, suggestion, *edits)


def unique_names(metrics: list[dict[str, Any]], dimensions: list[dict[str, Any]], check: Check) -> None:
    """Names shared by two parts get their entity in front; the bare words stay a synonym of the
    dimension with the most values (a customer's country, not the 1 country of the employees)."""
    taken: dict[str, list[dict[str, Any]]] = {}
    for part in (*metrics, *dimensions):
        taken.setdefault(part["name"], []).append(part)
    for name, parts in taken.items():
        if len(parts) < 2:
            continue
        keeps = max(parts, key=lambda p: p.get("_values", 0)) if all(p in dimensions for p in parts) else None
        for part in parts:
            entity = part.get("_entity")
            if entity is None or name.startswith(entity):
                continue
            part["name"] = f"{entity}_{name}"
            words = [said(part["name"])] + ([said(name)] if part is keeps else [])
            part["synonyms"] = [*part.get("synonyms", ()), *words]
            kind = "metric" if part in metrics else "dimension"
            check(kind, f"{kind} {part['name']}", f"named {part['name']}: another table has a {said(name)}" +
                       (f"; “{said(name)}” alone means this one" if part is keeps else ""))
    for part in (*metrics, *dimensions):
        for private in ("_entity", "_label", "_values"):
            part.pop(private, None)
        synonyms = [s for s in dict.fromkeys(part.get("synonyms", ())) if s and s != said(part["name"])]
        if synonyms:
            part["synonyms"] = synonyms
        else:
            part.pop("synonyms", None)


__all__ = ["unique_names"]
