"""The checklist of ``baton semantic init``, read and applied as a person would (issue 28's benchmark).

``checklist_items`` reads the items from ``--checklist-json`` (each with the edit that applies
it) or, from an older ``semantic init``, its printed ``- [ ] kind: target: suggestion`` lines;
``apply_checklist`` applies each item's own edit to the draft (Baton's own
``baton.semantic.checklist.apply_checklist``), except those the database's
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
    item's own edit (``baton.semantic.checklist.apply_checklist``: the edits of the items
    given, nothing else, on a copy), except the items ``declined`` for what they know of their
    data. An item without an edit changes nothing."""
    from baton.semantic.checklist import apply_checklist as apply_edits

    applied = [item for item in items if item.apply and (item.kind, item.target) not in (declined or {})]
    return apply_edits(draft, [{"apply": list(item.apply)} for item in applied]), applied


__all__ = ["DECLINED", "Item", "apply_checklist", "checklist_items"]
