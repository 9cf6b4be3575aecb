"""An empty answer to a question with a time filter says which dates the data covers.

"Revenue in 2019: 0 rows" leaves a person guessing whether the query is wrong or the data
starts later. When an answer's result is empty (no rows, or one row of nothing: a SUM over
no rows is NULL) and its SQL filters a column with a date-like text (``month LIKE
'2019-%'``, ``month >= '2019-01'``, ``day BETWEEN '2019-01-01' AND ...``), the range of that
column is looked up (``SELECT MIN(c), MAX(c) FROM <its table>``) and said: "There is no data
for that period: monthly_revenue.month runs from 2024-01 to 2025-12."

Decisions: the look-up is built with sqlglot (never pasted text) and run by the answering
specialist's connection through the same safety check, pre-validation and read-only engine
as any query. Only a column of a real table is looked up (an alias of a derived table or a
CTE is not: its range is not one column's). The first such column is used. Nothing is said
when the look-up fails or the table is empty; the answer never fails because of it.
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING, Any

import sqlglot
from sqlglot import exp

if TYPE_CHECKING:
    from baton.response import AIMessage
    from baton.workspace.core import Workspace

log = logging.getLogger(__name__)
_DATE_LIKE = re.compile(r"^(?:19|20)\d\d(?:$|[-/%])")
_COMPARISONS = (exp.Like, exp.GTE, exp.GT, exp.LT, exp.LTE, exp.EQ, exp.Between)


def is_empty(message: AIMessage) -> bool:
    result = message.results
    if result is None or message.error:
        return False
    return result.row_count == 0 or (result.row_count == 1 and all(v is None for v in result.rows[0]))


def _tables(tree: exp.Expr) -> dict[str, str]:
    """Alias (or name) -> table name of every real table the query reads."""
    ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
    out: dict[str, str] = {}
    for table in tree.find_all(exp.Table):
        if table.name and table.name.lower() not in ctes:
            out[(table.alias or table.name).lower()] = table.name
    return out


def range_query(sql: str, dialect: str | None) -> tuple[str, str, str] | None:
    """(table, column, SQL of its MIN and MAX) for the first column ``sql`` filters with a
    date-like text, or None."""
    try:
        tree = sqlglot.parse_one(sql, read=dialect or None)
    except (sqlglot.errors.ParseError, sqlglot.errors.TokenError):
        return None
    tables = _tables(tree)
    for where in tree.find_all(exp.Where):
        for comparison in where.find_all(*_COMPARISONS):
            literals = [v for v in comparison.find_all(exp.Literal) if v.is_string and _DATE_LIKE.match(v.this)]
            column = comparison.this if isinstance(comparison.this, exp.Column) else None
            if not literals or column is None:
                continue
            table = tables.get(column.table.lower()) if column.table else (next(iter(tables.values())) if len(tables) == 1 else None)
            if table is None:
                continue
            name = exp.column(column.name, quoted=True)
            query = exp.select(exp.Min(this=name), exp.Max(this=name.copy())).from_(exp.to_table(table))
            return table, column.name, query.sql(dialect=dialect or None)
    return None


def _connection(ws: Workspace, message: AIMessage) -> Any:
    return ws.catalog.connection(message.meta.get("connection_id"))


async def note_data_range(ws: Workspace, message: AIMessage) -> None:
    """Add the data's date range to an empty answer with a time filter (module docstring)."""
    from baton.specialists.sql.validation import validate_and_run

    if not is_empty(message) or not message.query or message.metadata.get("data_range"):
        return
    found = range_query(message.query, message.meta.get("dialect"))
    connection = _connection(ws, message) if found else None
    if found is None or connection is None:
        return
    table, column, sql = found
    try:
        report = await validate_and_run(sql, number=1, connection=connection, schema=await connection.schema(),
                                        explanation="the range of the data")
    except Exception:  # the hint is a courtesy: never a failed answer
        log.warning("looking up the data's range failed", exc_info=True)
        return
    rows = report.result.rows if report.result is not None else []
    if not rows or rows[0][0] is None:
        return
    low, high = rows[0][0], rows[0][1]
    message.metadata["data_range"] = {"table": table, "column": column, "from": str(low), "to": str(high)}
    lead, _, rest = (message.content or "").partition("\n\n")  # said in the first paragraph, before any "Semantic query: ..."
    note = f"There is no data for that period: {table}.{column} runs from {low} to {high}."
    message.content = f"{lead.rstrip()} {note}".strip() + (f"\n\n{rest}" if rest else "")


__all__ = ["is_empty", "note_data_range", "range_query"]
