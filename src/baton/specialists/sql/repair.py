"""The repair context the model reads after a failed attempt.

Each failure is enriched, not just echoed: the error class, the closest existing names
(``difflib`` against the schema: tables for a missing table, the query's tables' columns
for a missing column) and the relevant schema slice (the tables the query touched plus
the suggested ones). A timeout asks for a LIMIT or a date filter instead of re-running the
same query; a full-scan plan asks for a filter or a LIMIT, and says how to insist when the
question really needs the whole table.
"""

from __future__ import annotations

import difflib

from baton.specialists.sql.classify import ClassifiedError, ErrorClass
from baton.specialists.sql.explain import PlanCheck
from baton.specialists.sql.prompts import schema_text
from baton.specialists.sql.schema import SchemaInfo, TableInfo
from baton.specialists.sql.sqlshape import DATE_COLUMN, shape_of

_ADVICE = {
    ErrorClass.TABLE_NOT_FOUND: "Use only tables listed in the schema.",
    ErrorClass.COLUMN_NOT_FOUND: "Use only columns of the tables you read (see below).",
    ErrorClass.SYNTAX_ERROR: "Rewrite the statement as valid {dialect} SQL (one SELECT, no trailing text).",
    ErrorClass.OTHER: "Fix the query (types, casts, functions, division by zero) and try again.",
}


def closest_names(name: str, candidates: list[str], n: int = 3) -> list[str]:
    by_lower = {c.lower(): c for c in candidates}
    return [by_lower[m] for m in difflib.get_close_matches(name.lower(), list(by_lower), n=n, cutoff=0.5)]


def error_feedback(error: ClassifiedError, sql: str, schema: SchemaInfo, *, timeout_s: float) -> str:
    shape = shape_of(sql, schema.dialect, schema)
    touched = [t for name in sorted(shape.tables) if (t := schema.table(name)) is not None]
    lines = [f"The database refused the query: {error.error_class} ({error.message})"]
    suggestions: list[str] = []
    if error.error_class is ErrorClass.TABLE_NOT_FOUND:
        missing = (error.name or "").split(".")[-1] or next((t for t in shape.tables if schema.table(t) is None), "")
        suggestions = closest_names(missing, [t.name for t in schema.tables.values()]) if missing else []
        if suggestions:
            lines.append(f"There is no table `{missing}`. Closest tables: " + ", ".join(f"`{s}`" for s in suggestions) + ".")
    elif error.error_class is ErrorClass.COLUMN_NOT_FOUND and error.name:
        missing = error.name.split(".")[-1]
        pool = [f"{t.name}.{c.name}" for t in (touched or schema.tables.values()) for c in t.columns]
        matches = closest_names(missing, [p.split(".", 1)[1] for p in pool])
        suggestions = [p for m in matches for p in pool if p.split(".", 1)[1] == m][:3]
        if suggestions:
            lines.append(f"There is no column `{missing}` there. Closest columns: " + ", ".join(f"`{s}`" for s in suggestions) + ".")
    if error.error_class is ErrorClass.TIMEOUT:
        lines.append(timeout_advice(touched, timeout_s))
    else:
        lines.append(_ADVICE.get(error.error_class, _ADVICE[ErrorClass.OTHER]).format(dialect=schema.dialect))
    related = _with_suggested(schema, touched, suggestions)
    if related:
        lines.append("Relevant schema:\n" + schema_text(schema, related))
    return "\n".join(lines)


def timeout_advice(tables: list[TableInfo], timeout_s: float) -> str:
    dates = [f"{t.name}.{c.name}" for t in tables for c in t.columns if "date" in c.type.lower() or "time" in c.type.lower() or DATE_COLUMN.search(c.name)]
    hint = f" (date columns: {', '.join(dates[:4])})" if dates else ""
    return (
        f"The query ran past the {timeout_s:g} s limit. Do not send it again unchanged: add a LIMIT, "
        f"a date filter{hint}, or aggregate over fewer rows."
    )


def plan_feedback(check: PlanCheck, schema: SchemaInfo) -> str:
    scans = ", ".join(f"`{s.table}` (~{s.rows:,} rows)" if s.rows else f"`{s.table}`" for s in check.flagged)
    tables = [t for s in check.flagged if (t := schema.table(s.table)) is not None]
    return (
        f"EXPLAIN shows a full scan of {scans}. Add a WHERE filter (for example a date range) or a LIMIT so the "
        "database does not read the whole table. If the question truly needs every row, send the same query again.\n"
        + ("Relevant schema:\n" + schema_text(schema, tables) if tables else "")
    ).strip()


def zero_rows_note() -> str:
    return (
        "The query returned 0 rows. If rows were expected, check filter values (spelling, case, date ranges, "
        "units) before answering; if 0 is the answer, say so."
    )


def _with_suggested(schema: SchemaInfo, touched: list[TableInfo], suggestions: list[str]) -> list[TableInfo]:
    tables = list(touched)
    for suggestion in suggestions:
        table = schema.table(suggestion.split(".")[0])
        if table is not None and table not in tables:
            tables.append(table)
    return tables[:8]
