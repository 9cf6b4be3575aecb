"""Learning extraction from the attempt history (seed 002 "Learning Extraction Heuristics").

Each heuristic compares consecutive attempts ``(a, b)`` where ``b`` ran successfully:

- table preference: ``a`` failed (or returned no rows) and the tables changed -> "Use
  `new` instead of `old`";
- column correction: ``a`` failed with column_not_found on ``X`` and ``b`` no longer uses
  ``X`` -> "Column `X` doesn't exist on `t`. Use `Y` instead." (``Y``: the new column
  closest to ``X``);
- unit format: ``b`` divides a column by 100 or 1000 and ``a`` did not -> "stores cents";
- schema gotcha: ``b`` adds a soft-delete filter (``deleted_at IS NULL``) or a schema prefix
  that ``a`` lacked;
- performance hint: ``a`` timed out (or its plan was rejected for a full scan) and ``b``
  adds a LIMIT or a date filter.

Unit and soft-delete discoveries usually follow a *successful* query whose result the model
judged wrong (a total 100 times too big, deleted customers counted), so for those two a
successful-but-superseded ``a`` counts as failed; table preference and column correction
need a real failure, so exploring two tables for two sub-questions teaches nothing.

Each learning carries ``entity``/``attribute``/``value``, the structured triple the
memory's contradiction gate compares (``orders.amount``/``unit``/``cents``), besides the
lesson text the model reads.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from baton.specialists.sql.result import QueryAttempt
from baton.specialists.sql.schema import SchemaInfo
from baton.specialists.sql.sqlshape import QueryShape, shape_of

LearningCategory = Literal["table_preference", "column_correction", "format_discovery", "schema_gotcha", "performance_hint"]

_FAILED = ("error", "invalid", "plan_rejected")
_UNITS = {100: ("cents", "stores cents (hundredths); divide by 100"), 1000: ("thousandths", "stores thousandths; divide by 1000")}


@dataclass(slots=True)
class ExtractedLearning:
    category: LearningCategory
    lesson: str
    tables: list[str] = field(default_factory=list)
    columns: list[str] = field(default_factory=list)
    connection_id: str = ""
    entity: str = ""
    attribute: str = ""
    value: str = ""

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.connection_id, self.category, self.entity.lower(), self.attribute)


def extract_learnings(
    attempts: Sequence[QueryAttempt], question: str, connection_id: str, dialect: str, schema: SchemaInfo | None = None
) -> list[ExtractedLearning]:
    """Every learning the attempt history supports, de-duplicated by (category, entity, attribute)."""
    found: dict[tuple[str, str, str, str], ExtractedLearning] = {}
    candidates = [a for a in attempts if a.sql and a.outcome not in ("unsafe", "no_sql")]
    for before, after in zip(candidates, candidates[1:]):
        if not after.succeeded:
            continue
        old, new = shape_of(before.sql, dialect, schema), shape_of(after.sql, dialect, schema)
        if not new.parsed:
            continue
        failed = before.outcome in _FAILED or (before.succeeded and before.row_count == 0)
        superseded = failed or before.succeeded
        learnings: list[ExtractedLearning] = []
        if failed:
            learnings += _table_preference(before, old, new, question)
            learnings += _column_correction(before, old, new, schema)
            learnings += _schema_prefix(before, old, new)
            learnings += _performance_hint(before, old, new)
        if superseded:
            learnings += _format_discovery(old, new)
            learnings += _soft_delete(old, new)
        for learning in learnings:
            learning.connection_id = connection_id
            found.setdefault(learning.key, learning)
    return list(found.values())


def _table_preference(before: QueryAttempt, old: QueryShape, new: QueryShape, question: str) -> list[ExtractedLearning]:
    if before.error_class not in (None, "table_not_found") and before.outcome != "success":
        return []  # a column or syntax error says nothing about which table is right
    dropped, added = sorted(old.tables - new.tables), sorted(new.tables - old.tables)
    if not dropped or not added:
        return []
    topic = _topic(question)
    out = []
    for old_table in dropped:
        new_table = max(added, key=lambda t: difflib.SequenceMatcher(None, old_table, t).ratio())
        out.append(ExtractedLearning(
            "table_preference",
            f"Use `{new_table}` instead of `{old_table}`" + (f" for {topic}." if topic else "."),
            tables=[new_table, old_table], entity=old_table, attribute="use_instead", value=new_table,
        ))
    return out


def _column_correction(before: QueryAttempt, old: QueryShape, new: QueryShape, schema: SchemaInfo | None) -> list[ExtractedLearning]:
    if before.error_class != "column_not_found":
        return []
    out = []
    missing = {m.split(".")[-1].lower() for m in before.missing_names} or (old.column_names - new.column_names)
    for bad in sorted(missing):
        if bad in new.column_names:
            continue
        added = [(t, c) for t, c in new.columns - old.columns if c != bad] or list(new.columns)
        if not added:
            continue
        table, good = max(added, key=lambda tc: difflib.SequenceMatcher(None, bad, tc[1]).ratio())
        bad_table = next((t for t, c in old.columns if c == bad and t), table) or table
        where = f" on `{bad_table}`" if bad_table else ""
        out.append(ExtractedLearning(
            "column_correction",
            f"Column `{bad}` doesn't exist{where}. Use `{good}` instead.",
            tables=[bad_table] if bad_table else [], columns=[good, bad],
            entity=f"{bad_table}.{bad}" if bad_table else bad, attribute="correct_column", value=good,
        ))
    return out


def _format_discovery(old: QueryShape, new: QueryShape) -> list[ExtractedLearning]:
    out = []
    for (table, column), divisor in new.divisors.items():
        if any(c == column and d == divisor for (_, c), d in old.divisors.items()) or not table:
            continue
        unit, advice = _UNITS[divisor]
        out.append(ExtractedLearning(
            "format_discovery", f"Column `{table}.{column}` {advice}.",
            tables=[table], columns=[column], entity=f"{table}.{column}", attribute="unit", value=unit,
        ))
    return out


def _soft_delete(old: QueryShape, new: QueryShape) -> list[ExtractedLearning]:
    out = []
    for table, column in sorted(new.soft_delete - old.soft_delete):
        if table not in old.tables:
            continue  # a new table with its filter is a table change, not a discovered gotcha
        condition = f"{column} IS NULL" if column.endswith(("_at", "_on", "_date")) else f"NOT {column}"
        out.append(ExtractedLearning(
            "schema_gotcha", f"Table `{table}` uses soft-delete. Always filter active records ({condition}).",
            tables=[table], columns=[column], entity=table, attribute="soft_delete_filter", value=condition,
        ))
    return out


def _schema_prefix(before: QueryAttempt, old: QueryShape, new: QueryShape) -> list[ExtractedLearning]:
    if before.error_class not in ("table_not_found", None):
        return []
    out = []
    for table, prefix in sorted(new.qualified.items()):
        if table in old.tables and table not in old.qualified:
            out.append(ExtractedLearning(
                "schema_gotcha", f"Table `{table}` lives in schema `{prefix}`: write `{prefix}.{table}`.",
                tables=[table], entity=table, attribute="schema", value=prefix,
            ))
    return out


def _performance_hint(before: QueryAttempt, old: QueryShape, new: QueryShape) -> list[ExtractedLearning]:
    if before.error_class != "timeout" and before.outcome != "plan_rejected":
        return []
    fixes = []
    if new.has_limit and not old.has_limit:
        fixes.append("limit")
    added_dates = new.date_filtered - old.date_filtered
    if added_dates:
        fixes.append("date_filter")
    if not fixes:
        return []
    tables = sorted(added_dates or (old.tables & new.tables) or new.tables)
    return [
        ExtractedLearning(
            "performance_hint", f"Table `{table}` can time out. Always add LIMIT and a date filter.",
            tables=[table], entity=table, attribute="requires", value="+".join(fixes),
        )
        for table in tables
    ]


def _topic(question: str) -> str:
    words = question.strip().rstrip("?.!").split()
    return " ".join(words[:8]).lower() if words else ""


def learnings_text(learnings: Sequence[ExtractedLearning]) -> str:
    """The active learnings as prompt lines."""
    return "\n".join(f"- {item.lesson}" for item in learnings)
