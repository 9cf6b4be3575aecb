"""Time grains and periods over a time column, the same values on every engine.

Databases keep time in different ways; the demo keeps it as text (``month`` = ``'2025-03'``,
``event_date`` = ``'2025-03-14'``, ``sold_at`` = ``'2025-03-14 09:30:00'``). A grain is
computed as **text** in one shape on every engine, so the four engines return identical
rows and a person reads them as they are:

| grain   | value          | from ISO text                               |
|---------|----------------|---------------------------------------------|
| day     | ``2025-03-14`` | the first 10 characters                     |
| week    | ``2025-03-10`` | the Monday of its week (the engine's ``metric_sql``) |
| month   | ``2025-03``    | the first 7 characters                      |
| quarter | ``2025-Q1``    | the year, ``-Q`` and the month's quarter (text comparisons, no division: engines divide integers differently) |
| year    | ``2025``       | the first 4 characters                      |

A ``native`` column (DATE/TIMESTAMP) is first formatted as ``YYYY-MM-DD`` text. Periods
(``2025``, ``2025-Q3``, ``2025-03``) are half-open ranges compared on the column itself
when it is ISO text (so an index on it is used: ``sold_at >= '2025-01-01' AND sold_at <
'2026-01-01'``), else on the formatted date; a range of times (``Period.between``) on the time
formatted to the second.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from baton.semantic.engine_sql import metric_sql, template
from baton.semantic.model import TimeColumn

if TYPE_CHECKING:
    from sqlglot import exp

    from baton.semantic.periods import Period

SUBDAILY = ("millisecond", "second", "minute", "hour")  # finest first, then model.GRAINS
DATE_PARTS = ("year", "quarter", "month", "day", "dow", "doy")  # dow: ISO, Monday 1 .. Sunday 7 (as MetricFlow)
_PLACEHOLDER = "baton_time_placeholder"
_SUBDAILY_TEXT = {"hour": (13, ":00:00"), "minute": (16, ":00"), "second": (19, "")}  # ISO text: kept, appended
_SUBDAILY_FORMAT = {"hour": "%Y-%m-%d %H:00:00", "minute": "%Y-%m-%d %H:%M:00", "second": "%Y-%m-%d %H:%M:%S",
                    "millisecond": "%Y-%m-%d %H:%M:%S.%f"}  # %f: microseconds, cut to milliseconds


def _substr(text: exp.Expr, length: int) -> exp.Expr:
    from sqlglot import exp

    return exp.Substring(this=text.copy(), start=exp.Literal.number(1), length=exp.Literal.number(length))


def as_text(column: exp.Expr, time: TimeColumn) -> exp.Expr:
    """The column as ISO text (``native`` columns formatted as ``YYYY-MM-DD``)."""
    from sqlglot import exp

    if time.format == "native":
        return exp.TimeToStr(this=column.copy(), format=exp.Literal.string("%Y-%m-%d"))
    return column.copy()


def _template(template: str, value: exp.Expr, dialect: str) -> exp.Expr:
    import sqlglot
    from sqlglot import exp

    tree = sqlglot.parse_one(template.format(c=_PLACEHOLDER), read=dialect)
    return tree.transform(lambda node: value.copy() if isinstance(node, exp.Column) and node.name == _PLACEHOLDER else node)


def _subdaily(column: exp.Expr, time: TimeColumn, grain: str, dialect: str) -> exp.Expr:
    """A sub-daily grain as ``YYYY-MM-DD HH:MM:SS[.mmm]`` text: a ``native`` TIMESTAMP formatted,
    ISO text cut and completed (``timestamp`` text holds no milliseconds: refused)."""
    from sqlglot import exp

    if time.format != "native":
        if grain not in _SUBDAILY_TEXT or time.format != "timestamp":
            raise ValueError(f"the time grain {grain!r} of a time kept as {time.format} text")
        length, tail = _SUBDAILY_TEXT[grain]
        return exp.DPipe(this=_substr(column, length), expression=exp.Literal.string(tail), safe=True) if tail \
            else _substr(column, length)
    own = metric_sql(dialect).millisecond_format if grain == "millisecond" else None
    if own is not None:  # the engine's format writes milliseconds itself (SQLite's %f)
        return exp.TimeToStr(this=column.copy(), format=exp.Literal.string(own))
    formatted = exp.TimeToStr(this=column.copy(), format=exp.Literal.string(_SUBDAILY_FORMAT[grain]))
    return _substr(formatted, 23) if grain == "millisecond" else formatted


def date_part_expression(column: exp.Expr, time: TimeColumn, part: str, dialect: str) -> exp.Expr:
    """The column's ``part`` (``DATE_PARTS``) as an integer, the same on every engine: year,
    quarter, month and day read from its ISO text, dow (ISO) and doy from the engine's date functions."""
    from sqlglot import exp

    text = as_text(column, time)
    integer = exp.DataType.build("INT")
    if part in ("year", "month", "day"):
        start, length = {"year": (1, 4), "month": (6, 2), "day": (9, 2)}[part]
        piece = exp.Substring(this=text, start=exp.Literal.number(start), length=exp.Literal.number(length))
        return exp.Cast(this=piece, to=integer)
    if part == "quarter":
        month = exp.Substring(this=text, start=exp.Literal.number(6), length=exp.Literal.number(2))
        case = exp.Case()
        for last, q in (("03", 1), ("06", 2), ("09", 3)):
            case = case.when(exp.LTE(this=month.copy(), expression=exp.Literal.string(last)), exp.Literal.number(q))
        return case.else_(exp.Literal.number(4))
    day = exp.Cast(this=_substr(text, 10), to=exp.DataType.build("DATE"))
    return _template(template(metric_sql(dialect).day_part(part), f"the date part {part!r}", dialect), day, dialect)


def grain_expression(column: exp.Expr, time: TimeColumn, grain: str, dialect: str) -> exp.Expr:
    """The column at ``grain`` as text (module docstring; sub-daily grains as ``_subdaily``)."""
    from sqlglot import exp

    if grain in SUBDAILY:
        return _subdaily(column, time, grain, dialect)
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
        return _template(template(metric_sql(dialect).week_start, "the week grain", dialect), text, dialect)
    raise ValueError(f"unknown grain {grain!r}")


def period_condition(column: exp.Expr, time: TimeColumn, period: Period) -> exp.Expr:
    """``column`` within ``period`` (half-open)."""
    from sqlglot import exp

    if len(period.start) > 10 and period.start[0] != "0":  # a range of times (Period.between): to the second
        if time.format not in ("native", "timestamp"):
            raise ValueError(f"a range of times over a time kept as {time.format} text")
        subject = _subdaily(column, time, "second", "") if time.format == "native" else _substr(column, 19)
        start, end = period.start, period.end
    elif time.format == "native":
        subject = as_text(column, time)
        start, end = period.start, period.end
    else:
        subject = column.copy()
        cut = 7 if time.format == "month" else 10
        start, end = period.start[:cut], period.end[:cut]
    return exp.and_(exp.GTE(this=subject, expression=exp.Literal.string(start)),
                    exp.LT(this=subject.copy(), expression=exp.Literal.string(end)))


__all__ = ["DATE_PARTS", "SUBDAILY", "as_text", "date_part_expression", "grain_expression", "period_condition"]
