"""The convergence check: may the results of parallel stages be combined?

A layer of more than one stage produces results independently (different databases,
different specialists, different moments). Before a downstream stage consumes two or more
of them, this check makes sure they are consistent enough to combine; a failure fails the
*consuming* stage (``stage_failed``) with the reason, and what depends on it is skipped.

Definition. Among the consuming stage's successful dependencies that returned a table:

1. **Join keys** are the stage's ``join_on`` columns when the plan names them, else the
   columns every table has (names compared case-insensitively) that are not numeric in all
   of them (dimensions: names, dates; a column numeric in one table and text in another is
   a key that will fail rule 3). Each named key must exist in every table.
2. **Compared measures** are the stage's ``compare`` columns when named, else the columns
   every table has that are numeric in all of them. Each named measure must exist in every
   table.
3. **Types**: a key or measure must have the same type *family* in every table: numeric,
   text, temporal or boolean. The family comes from the engine-reported column type and
   falls back to the Python type of the first non-null value; an all-null column is
   compatible with anything. ``INTEGER`` joins ``BIGINT``; ``VARCHAR`` does not join ``INT``.
4. **Units**: a measure's unit is looked up, first match wins, in the stage result's own
   ``units`` (what the specialist's learnings knew), then the executor's ``units`` mapping
   as ``"stage_id.column"``, then as ``"column"``. Where two tables' units are both known
   and differ (``cents`` against ``dollars``), the check fails. An unknown unit never fails.

Tables with no common column at all pass (an analysis may well compare two unrelated
counts) unless the plan named keys or measures. Text-only results (knowledge answers) are
not tables and take no part.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from baton.pipeline.models import PlanStage, StageResult
from baton.response import QueryResult

_NUMERIC = ("int", "float", "double", "real", "numeric", "decimal", "number", "money", "serial", "uint")
_TEMPORAL = ("date", "time", "interval")
_BOOLEAN = ("bool",)
_TEXT = ("char", "text", "string", "clob", "uuid", "enum", "str", "object")


def convergence_problems(
    stage: PlanStage, inputs: Mapping[str, StageResult], *, units: Mapping[str, str] | None = None
) -> list[str]:
    """Every reason the inputs of ``stage`` cannot be combined (empty when they can)."""
    tables = {sid: r.query_result for sid, r in inputs.items() if r.ok and r.query_result is not None}
    if len(tables) < 2:
        return []
    columns = {sid: {c.lower(): c for c in t.columns} for sid, t in tables.items()}
    common = set.intersection(*(set(c) for c in columns.values()))
    families = {sid: {name: _family(t, columns[sid][name]) for name in common} for sid, t in tables.items()}

    def measure(name: str) -> bool:  # numeric in every table that has values for it
        seen = [f[name] for f in families.values() if f[name] != "unknown"]
        return bool(seen) and all(fam == "numeric" for fam in seen)

    problems: list[str] = []
    keys = [k.lower() for k in stage.join_on] or sorted(n for n in common if not measure(n))
    measures = [m.lower() for m in stage.compare] or sorted(n for n in common if measure(n))
    where = f"stage {stage.stage_id!r}"
    for kind, names in (("join column", keys), ("compared measure", measures)):
        for name in names:
            missing = [sid for sid in tables if name not in columns[sid]]
            if missing:
                for sid in missing:
                    problems.append(
                        f"{where}: {kind} {name!r} is missing from stage {sid!r}'s result "
                        f"(it has: {', '.join(tables[sid].columns) or 'no columns'})"
                    )
                continue
            seen = {sid: _family(tables[sid], columns[sid][name]) for sid in tables}
            known = {sid: fam for sid, fam in seen.items() if fam != "unknown"}
            if len(set(known.values())) > 1:
                detail = ", ".join(f"{fam} in {sid!r}" for sid, fam in known.items())
                problems.append(f"{where}: {kind} {name!r} has incompatible types: {detail}")
    for name in measures:
        if any(name not in columns[sid] for sid in tables):
            continue
        found = {sid: u for sid in tables if (u := _unit(inputs[sid], sid, columns[sid][name], units or {}))}
        if len(set(found.values())) > 1:
            detail = ", ".join(f"{u!r} in {sid!r}" for sid, u in found.items())
            problems.append(f"{where}: compared measure {name!r} is in different units: {detail}")
    return problems


def _unit(result: StageResult, stage_id: str, column: str, units: Mapping[str, str]) -> str | None:
    own = {k.lower(): v for k, v in result.units.items()}
    shared = {k.lower(): v for k, v in units.items()}
    lowered = column.lower()
    return own.get(lowered) or shared.get(f"{stage_id.lower()}.{lowered}") or shared.get(lowered)


def _family(table: QueryResult, column: str) -> str:
    index = table.columns.index(column)
    if index < len(table.column_types):
        family = _family_of_type(table.column_types[index])
        if family is not None and family != "text-object":
            return family
    for row in table.rows:
        if index < len(row) and row[index] is not None:
            return _family_of_value(row[index])
    return "unknown"


def _family_of_type(name: str) -> str | None:
    lowered = str(name).lower()
    if lowered in ("object", ""):
        return "text-object"  # pandas' catch-all: decide from the values
    for family, markers in (("boolean", _BOOLEAN), ("temporal", _TEMPORAL), ("numeric", _NUMERIC), ("text", _TEXT)):
        if any(m in lowered for m in markers):
            return family
    return None


def _family_of_value(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float, Decimal)):
        return "numeric"
    if isinstance(value, (dt.date, dt.datetime, dt.time, dt.timedelta)):
        return "temporal"
    if hasattr(value, "item") and hasattr(value, "dtype"):
        return _family_of_value(value.item())
    return "text"
