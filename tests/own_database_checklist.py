"""The checklist of ``baton semantic init``, read and applied as a person would (issue 28's benchmark).

``checklist_items`` reads the items from ``--checklist-json`` (each with the edit that applies
it) or, from an older ``semantic init``, its printed ``- [ ] kind: target: suggestion`` lines;
``apply_checklist`` applies each item's own edit to the draft, except those the database's
owner declines (``DECLINED``: said from the database's own comments, never from the gold).
Used by ``bench/own_database.py``; tested in ``tests/test_own_database.py``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_ITEM = re.compile(r"^\s*(?:[-*\u2022]|\[ \]|\u2610|\d+[.)])\s+(?:\[ \]\s+)?(.*\S)")


@dataclass(frozen=True)
class Item:
    """One checklist item: its printed line, and the edit ``baton semantic init`` says applies it."""

    line: str
    kind: str = ""
    target: str = ""
    apply: tuple[dict[str, Any], ...] = ()


# What the person who owns each database answers to a checklist item whose edit would be wrong
# for their data, said from the database's own comments (never from the gold): (kind, target) -> why.
DECLINED: dict[str, dict[tuple[str, str], str]] = {
    "shop": {("soft-delete", "entity customers"): "customers.deleted_at's comment: closed accounts are not counted as customers"},
    "chinook": {},
}


def checklist_items(printed: str, json_file: Path | None = None) -> list[Item]:
    """The checklist of ``baton semantic init``: from its ``--checklist-json`` file when it wrote
    one (with each item's edit), else the printed ``- [ ] kind: target: suggestion`` lines
    after the line that names the checklist (no edits: nothing a script can apply)."""
    if json_file is not None and json_file.exists():
        import json

        return [Item(f"- [ ] {d.get('kind')}: {d.get('target')}: {d.get('suggestion')}", str(d.get("kind", "")),
                     str(d.get("target", "")), tuple(d.get("apply") or ())) for d in json.loads(json_file.read_text("utf-8"))]
    items: list[Item] = []
    inside = False
    for line in printed.splitlines():
        if re.search(r"checklist|to check", line, re.IGNORECASE) and not _ITEM.match(line):
            inside = True
            continue
        match = _ITEM.match(line) if inside else None
        if match:
            parts = [p.strip() for p in match.group(1).split(":", 2)]
            items.append(Item(line.strip(), *(parts[:2] if len(parts) == 3 else ("", ""))))
        elif inside and items and not line.strip():
            inside = False
    return items


def apply_checklist(draft: dict[str, Any], items: list[Item], declined: dict[tuple[str, str], str] | None = None
                    ) -> tuple[dict[str, Any], list[Item]]:
    """The draft edited as the checklist says, and the items applied.

    The benchmark's second phase: a person follows the printed checklist and applies each
    item's own edit (``set`` / ``add`` / ``remove`` at a path of sections and names, as
    ``baton semantic init --checklist-json`` writes it), except the items ``declined`` for what
    they know of their data. Nothing else is edited; an item without an edit changes nothing."""
    import copy

    edited = copy.deepcopy(draft)
    applied = []
    for item in items:
        if not item.apply or (item.kind, item.target) in (declined or {}):
            continue
        for operation in item.apply:
            _apply(edited, operation)
        applied.append(item)
    return edited, applied


def _apply(model: dict[str, Any], operation: dict[str, Any]) -> None:
    """One edit: ``path`` walks dict keys and, in a list, the element with that ``name``."""
    *parents, last = [str(p) for p in operation["path"]]
    node: Any = model
    for step in parents:
        node = _child(node, step, create=operation["op"] != "remove")
    if operation["op"] == "add":
        target = node.setdefault(last, []) if isinstance(node, dict) else _child(node, last, create=True)
        if isinstance(target, list):
            value = operation["value"]
            target[:] = [v for v in target if not (isinstance(v, dict) and isinstance(value, dict) and v.get("name") == value.get("name"))]
            target.append(value)
        else:
            target.update(operation["value"])
    elif operation["op"] == "set":
        if isinstance(node, dict):
            node[last] = operation["value"]
        else:
            node[:] = [operation["value"] if isinstance(v, dict) and v.get("name") == last else v for v in node]
    elif operation["op"] == "remove":
        if isinstance(node, dict):
            node.pop(last, None)
        elif isinstance(node, list):
            node[:] = [v for v in node if not (isinstance(v, dict) and v.get("name") == last)]
    else:
        raise ValueError(f"unknown checklist edit {operation['op']!r}")


def _child(node: Any, step: str, *, create: bool) -> Any:
    if isinstance(node, dict):
        return node.setdefault(step, {}) if create else node.get(step, {})
    for element in node:
        if isinstance(element, dict) and element.get("name") == step:
            return element
    raise KeyError(f"checklist edit: no {step!r} in the draft")


__all__ = ["DECLINED", "Item", "apply_checklist", "checklist_items"]
