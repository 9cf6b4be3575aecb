"""A period of time a question asks about: a year, quarter, month or day (``2025``, ``2025-Q3``,
``2025-03``, ``2025-03-15``), or an open range (``from 2020-01-03``, ``before 2020-02-01``: a
MetricFlow filter's), or a range of times (``2020-01-01 02:00:00 to 2020-01-01 06:00:00``: a
MetricFlow filter on metric time by the hour), as the half-open ``[start, end)`` the compiler filters by."""

from __future__ import annotations

import calendar
import datetime as dt
import re
from dataclasses import dataclass

from baton.semantic.errors import SemanticQueryError

_PERIOD = re.compile(r"^(\d{4})(?:-(?:Q([1-4])|(\d{2})(?:-(\d{2}))?))?$")
_OPEN = re.compile(r"^(from|before) (\d{4}-\d{2}-\d{2})$")
_BETWEEN = re.compile(r"^(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}) to (\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})$")
# The bounds of an open range: ISO text sorting before / after every date and timestamp (periods are compared as
# text: timegrain.period_condition), so "from 2020-01-03" keeps every later row, however late.
OPEN_START, OPEN_END = "0000-00-00", "9999-99-99"


@dataclass(frozen=True, slots=True)
class Period:
    """A half-open time range ``[start, end)`` as ISO dates, and how it was named."""

    start: str
    end: str
    label: str
    grain: str  # year | quarter | month | day; hour | minute | second: a range of times (``between``)

    @classmethod
    def between(cls, start: dt.datetime, end: dt.datetime) -> Period:
        """The times ``[start, end)`` (a filter on metric time at an hour, minute or second), labelled
        ``2020-01-01 02:00:00 to 2020-01-03 06:00:00``; its grain the coarsest both bounds start."""
        if not start < end:
            raise SemanticQueryError(f"the time range {start} to {end} keeps no time")
        lo, hi = start.isoformat(sep=" ", timespec="seconds"), end.isoformat(sep=" ", timespec="seconds")
        grain = next(g for g, tail in (("hour", ":00:00"), ("minute", ":00"), ("second", "")) if
                     lo.endswith(tail) and hi.endswith(tail))
        return cls(lo, hi, f"{lo} to {hi}", grain)

    @classmethod
    def parse(cls, text: str) -> Period:
        times = _BETWEEN.match(str(text).strip())
        if times:  # a range of times (Period.between)
            try:
                return cls.between(dt.datetime.fromisoformat(times.group(1)), dt.datetime.fromisoformat(times.group(2)))
            except ValueError:
                raise SemanticQueryError(f"{text!r} is not a range of times") from None
        open_ended = _OPEN.match(str(text).strip())
        if open_ended:  # "from 2020-01-03", "before 2020-02-01": a MetricFlow filter's open range (time_filters.py)
            bound = cls.parse(open_ended.group(2))
            day = bound.start[5:]
            grain = ("year" if day == "01-01" else "quarter" if day in ("04-01", "07-01", "10-01") else
                     "month" if day.endswith("-01") else "day")
            lo, hi = (bound.start, OPEN_END) if open_ended.group(1) == "from" else (OPEN_START, bound.start)
            return cls(lo, hi, f"{open_ended.group(1)} {bound.start}", grain)
        m = _PERIOD.match(str(text).strip())
        if not m:
            raise SemanticQueryError(f"{text!r} is not a period (2025, 2025-Q3, 2025-03 or 2025-03-15)")
        year, quarter, month, day = int(m.group(1)), m.group(2), m.group(3), m.group(4)
        if not 1900 <= year <= 2200:
            raise SemanticQueryError(f"{year} is not a year this model answers for")
        if quarter:
            q = int(quarter)
            start, end = (year, 3 * q - 2, 1), (year + (q == 4), 1 if q == 4 else 3 * q + 1, 1)
            return cls(_iso(*start), _iso(*end), f"{year}-Q{q}", "quarter")
        if month:
            mo = int(month)
            if not 1 <= mo <= 12:
                raise SemanticQueryError(f"{text!r}: no month {mo}")
            if day:
                d = int(day)
                if not 1 <= d <= calendar.monthrange(year, mo)[1]:
                    raise SemanticQueryError(f"{text!r}: no such day")
                nxt = dt.date(year, mo, d) + dt.timedelta(days=1)
                return cls(_iso(year, mo, d), nxt.isoformat(), f"{year}-{mo:02d}-{d:02d}", "day")
            return cls(_iso(year, mo, 1), _iso(year + (mo == 12), 1 if mo == 12 else mo + 1, 1), f"{year}-{mo:02d}", "month")
        return cls(_iso(year, 1, 1), _iso(year + 1, 1, 1), str(year), "year")

    @property
    def year(self) -> int:
        return int(self.start[:4])


def _iso(y: int, m: int, d: int) -> str:
    return f"{y:04d}-{m:02d}-{d:02d}"


def period_words(label: str) -> str:
    """"2025-Q3" -> "Q3 2025", "2025-03" -> "March 2025" (how answers name periods)."""
    m = _PERIOD.match(label)
    if not m:
        return label
    year, quarter, month, day = m.groups()
    if quarter:
        return f"Q{quarter} {year}"
    if month and not day:
        return f"{calendar.month_name[int(month)]} {year}"
    return label
