"""Time grains and periods over a time column, the same values on every engine.

Databases keep time in different ways; the demo keeps it as text (``month`` = ``'2025-03'``,
``event_date`` = ``'2025-03-14'``, ``sold_at`` = ``'2025-03-14 09:30:00'``). A grain is
computed as **text** in one shape on every engine, so the four engines return identical
rows and a person reads them as they are:

| grain   | value          | from ISO text                               |
|---------|----------------|---------------------------------------------|
| day     | ``2025-03-14`` | the first 10 characters                     |
| week    | ``2025-03-10`` | the Monday of its week (engine date functions) |
| month   | ``2025-03``    | the first 7 characters                      |
| quarter | ``2025-Q1``    | the year, ``-Q`` and the month's quarter (text comparisons, no division: engines divide integers differently) |
| year    | ``2025``       | the first 4 characters                      |

A ``native`` column (DATE/TIMESTAMP) is first formatted as ``YYYY-MM-DD`` text. Periods
(``2025``, ``2025-Q3``, ``2025-03``) are half-open ranges compared on the column itself
when it is ISO text (so an index on it is used: ``sold_at >= '2025-01-01' AND sold_at <
'2026-01-01'``), else on the formatted date.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from baton.semantic.model import TimeColumn

if TYPE_CHECKING:
    from sqlglot import exp

    from baton.semantic.query import Period

_PLACEHOLDER = "baton_time_placeholder"
_WEEK = {
    "sqlite": "DATE(SUBSTR({c}, 1, 10), '-6 days', 'weekday 1')",
    "duckdb": "STRFTIME(DATE_TRUNC('week', CAST(SUBSTR({c}, 1, 10) AS DATE)), '%Y-%m-%d')",
    "postgres": "TO_CHAR(DATE_TRUNC('week', CAST(SUBSTR({c}, 1, 10) AS DATE)), 'YYYY-MM-DD')",
    "mysql": "DATE_FORMAT(DATE_SUB(CAST(SUBSTR({c}, 1, 10) AS DATE), INTERVAL WEEKDAY(CAST(SUBSTR({c}, 1, 10) AS DATE)) DAY), '%Y-%m-%d')",
}


def _substr(text: exp.Expr, length: int) -> exp.Expr:
    from sqlglot import exp

    return exp.Substring(this=text.copy(), start=exp.Literal.number(1), length=exp.Literal.number(length))


def as_text(column: exp.Expr, time: TimeColumn) -> exp.Expr:
    """The column as ISO text (``native`` columns formatted as ``YYYY-MM-DD``)."""
    from sqlglot import exp

    if time.format == "native":
        return exp.TimeToStr(this=column.copy(), format=exp.Literal.string("%Y-%m-%d"))
    return column.copy()


def grain_expression(column: exp.Expr, time: TimeColumn, grain: str, dialect: str) -> exp.Expr:
    """The column at ``grain`` as text (module docstring)."""
    import sqlglot
    from sqlglot import exp

    text = as_text(column, time)
    if grain == "year":
        return _substr(text, 4)
    if grain == "month":
        return _substr(text, 7)
    if grain == "day":
        return _substr(text, 10)
    if grain == "quarter":
        month = exp.Substring(this=text.copy(), start=exp.Literal.number(6), length=exp.Literal.number(2))
        case = exp.Case()
        for last, q in (("03", "1"), ("06", "2"), ("09", "3")):
            case = case.when(exp.LTE(this=month.copy(), expression=exp.Literal.string(last)), exp.Literal.string(q))
        case = case.else_(exp.Literal.string("4"))
        return exp.DPipe(this=exp.DPipe(this=_substr(text, 4), expression=exp.Literal.string("-Q"), safe=True),
                         expression=case, safe=True)
    if grain == "week":
        template = sqlglot.parse_one(_WEEK[dialect].format(c=_PLACEHOLDER), read=dialect)
        return template.transform(lambda node: text.copy() if isinstance(node, exp.Column) and node.name == _PLACEHOLDER else node)
    raise ValueError(f"unknown grain {grain!r}")


def period_condition(column: exp.Expr, time: TimeColumn, period: Period) -> exp.Expr:
    """``column`` within ``period`` (half-open)."""
    from sqlglot import exp

    if time.format == "native":
        subject = as_text(column, time)
        start, end = period.start, period.end
    else:
        subject = column.copy()
        cut = 7 if time.format == "month" else 10
        start, end = period.start[:cut], period.end[:cut]
    return exp.and_(exp.GTE(this=subject, expression=exp.Literal.string(start)),
                    exp.LT(this=subject.copy(), expression=exp.Literal.string(end)))


__all__ = ["as_text", "grain_expression", "period_condition"]
