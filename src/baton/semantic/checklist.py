"""The draft model's checklist: what a person should check, said and applied.

``baton semantic init`` prints each item as a line ``- [ ] <kind>: <target>: <suggestion>``
(and writes them as comments atop the draft); ``--checklist-json FILE`` writes them with the
edit that follows each suggestion, ``apply``: operations on the model's dict form —

- ``{"op": "add", "path": [section], "value": part}``: a measure, metric or dimension;
- ``{"op": "set", "path": [section, name, key], "value": v}``: one key of the part so named;
- ``{"op": "remove", "path": [section, name, key]}``.

An item whose edit is empty only asks a person to confirm what the draft did (a soft delete,
a unit). ``apply_checklist`` applies the edits of the items given, nothing else.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from baton.semantic.errors import SemanticModelError


@dataclass(frozen=True)
class CheckItem:
    """One thing a person should check, and the edit that applies its suggestion."""

    kind: str  # soft-delete | unit | time | dimension | synonyms | metric
    target: str  # "metric revenue", "entity order_items", "column orders.status"
    suggestion: str
    apply: tuple[dict[str, Any], ...] = ()

    @property
    def line(self) -> str:
        return f"- [ ] {self.kind}: {self.target}: {self.suggestion}"

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "target": self.target, "suggestion": self.suggestion, "apply": list(self.apply)}


def apply_checklist(model: Mapping[str, Any], items: Iterable[CheckItem | Mapping[str, Any]]) -> dict[str, Any]:
    """A copy of ``model`` (the draft's dict form) with each item's edits applied (module docstring)."""
    out = copy.deepcopy(dict(model))
    for item in items:
        for op in (item.apply if isinstance(item, CheckItem) else item.get("apply") or ()):
            path = list(op.get("path") or ())
            section = out.get(path[0]) if path else None
            if not isinstance(section, list):
                raise SemanticModelError(f"checklist edit {op!r}: no section {path[:1]}")
            if op.get("op") == "add" and len(path) == 1:
                section.append(copy.deepcopy(op["value"]))
                continue
            part = next((p for p in section if len(path) == 3 and p.get("name") == path[1]), None)
            if part is None or op.get("op") not in ("set", "remove"):
                raise SemanticModelError(f"checklist edit {op!r}: no {path[0]} {path[1:2]} to edit")
            if op["op"] == "set":
                part[path[2]] = copy.deepcopy(op["value"])
            else:
                part.pop(path[2], None)
    return out


__all__ = ["CheckItem", "apply_checklist"]
