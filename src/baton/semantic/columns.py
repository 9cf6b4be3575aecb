"""What a column holds, for the draft model: read from its name, its type and a little of its data.

The patterns are the draft's vocabulary (``draft.py``): numbers that are averaged (prices,
rates, percentages, scores, lengths and sizes) and numbers that are no amount (years, codes,
phone numbers); text that is never a dimension (emails, addresses, free text); soft deletes;
time columns that date an event (``ordered_at``), say when a thing began (``signed_up_at``:
no header's time) or are no event at all (``updated_at``, a birth date). The readings go
through the connection's own ``query`` (its safety check and read-only engine); a column
that cannot be read is None, for the checklist to mention, never an error.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from baton.semantic.expressions import render_sql

if TYPE_CHECKING:
    from baton.specialists.sql.connection import SQLConnection
    from baton.specialists.sql.schema import ColumnInfo

SAMPLE_ROWS = 20_000
NUMERIC = re.compile(r"int|real|double|float|numeric|decimal|number|money", re.IGNORECASE)
TEMPORAL = re.compile(r"date|time", re.IGNORECASE)
TEXT = re.compile(r"char|text|string|varchar|clob", re.IGNORECASE)
DATE_NAME = re.compile(r"(date|_at|_on|month|day|time|period)$", re.IGNORECASE)
PLAIN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}\Z")
AVERAGED = re.compile(r"price|rate|percent|pct|ratio|score|rating|margin|^age$|length|duration|milli|seconds|minutes|size|bytes"
                       r"|weight|height|width|temperature|latitude|longitude", re.IGNORECASE)
NOT_A_MEASURE = re.compile(r"(^|_)(year|zip|postal|phone|fax|lat|lon|lng|number|no|code|version|sort|rank|position)($|_)", re.IGNORECASE)
NOT_A_DIMENSION = re.compile(r"email|phone|fax|address|street|url|description|comment|note|password|hash|token|postal|zip"
                              r"|first_?name|last_?name", re.IGNORECASE)
FRACTION = re.compile(r"fraction|percent|%|\bratio\b|\brate\b", re.IGNORECASE)  # in a comment: averaged, never summed
LABELS = ("name", "full_name", "display_name")
TITLES = ("title", "label")  # a label after a person's first and last name (an employee's title is a job)
SOFT_DELETE = re.compile(r"^(deleted_at|deleted_on|removed_at|is_deleted|deleted)$", re.IGNORECASE)
NOT_EVENT_TIME = re.compile(r"deleted|removed|updated|modified|changed|birth|dob|expir|valid_to|end", re.IGNORECASE)
SINCE_TIME = re.compile(r"created|signed|registered|joined|hire|since|first_seen", re.IGNORECASE)  # when a thing began: not a header's time
EVENT_TIME = re.compile(r"order|invoice|placed|purchase|sold|paid|transaction|event|booked|date", re.IGNORECASE)


def is_key(name: str, keys: set[str], foreign: set[str]) -> bool:
    """A key, declared or by its name (``id``, ``customer_id``, ``CustomerId``): never summed, never a dimension."""
    return name in keys or name in foreign or name.lower() == "id" or name.lower().endswith("_id") or name.endswith("Id")


def plain(name: str) -> bool:
    return bool(PLAIN.match(name))


async def scalar(connection: SQLConnection, sql: Any) -> Any:
    try:
        result = await connection.query(render_sql(sql, connection.dialect))
    except Exception:  # a column the draft cannot read is left to the person (the checklist says so)
        return None
    return result.rows[0][0] if result.rows else None


async def distinct_count(connection: SQLConnection, table: str, column: str) -> int | None:
    from sqlglot import exp

    inner = exp.select(exp.column(column)).from_(exp.to_table(table)).limit(SAMPLE_ROWS).subquery("s")
    value = await scalar(connection, exp.select(exp.Count(this=exp.Distinct(expressions=[exp.column(column)]))).from_(inner))
    return int(value) if value is not None else None


async def time_format(connection: SQLConnection, table: str, column: ColumnInfo) -> str | None:
    from sqlglot import exp

    type_name = column.type or ""
    if TEMPORAL.search(type_name) and not TEXT.search(type_name):
        return "native"
    if not TEXT.search(type_name or "text") or not DATE_NAME.search(column.name):
        return None
    sql = exp.select(exp.column(column.name)).from_(exp.to_table(table)).where(exp.column(column.name).is_(exp.Null()).not_()).limit(1)
    value = str(await scalar(connection, sql) or "")
    if re.fullmatch(r"\d{4}-\d{2}", value):
        return "month"
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
        return "date"
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(:\d{2}(\.\d+)?)?", value):
        return "timestamp"
    return None


async def row_count(connection: SQLConnection, table: str) -> int:
    """The table's rows, counted up to ``SAMPLE_ROWS`` (as many as ``distinct_count`` reads: the two compare)."""
    from sqlglot import exp

    inner = exp.select(exp.alias_(exp.Literal.number(1), "one")).from_(exp.to_table(table)).limit(SAMPLE_ROWS).subquery("s")
    return int(await scalar(connection, exp.select(exp.Count(this=exp.Star())).from_(inner)) or 0)


__all__ = ["AVERAGED", "EVENT_TIME", "FRACTION", "LABELS", "NOT_A_DIMENSION", "NOT_A_MEASURE", "NOT_EVENT_TIME", "NUMERIC", "SINCE_TIME",
           "SOFT_DELETE", "TEMPORAL", "TEXT", "TITLES", "distinct_count", "is_key", "plain", "row_count", "scalar", "time_format"]
