"""What each column of a query result holds: a time, a measure, a category, or nothing.

The chart chooser and the insight finder both start from this profile, so they agree on
what a "measure" or a "period" is. Values decide first; the engine-reported column type and
the column name break ties, because values alone cannot tell a ZIP code ``"02139"`` from a
``Decimal`` that a driver handed over as a string.

Decisions (where the issue is silent):

- Roles: ``temporal`` (dates, datetimes, ``'YYYY'``/``'YYYY-MM'``/``'YYYY-Qn'``/
  ``'YYYY-MM-DD'`` strings, integer years in a column named like a year), ``measure``
  (numbers, numeric strings unless the engine said text or they have a leading zero),
  ``ordinal`` (categories with a natural order: hour/weekday/month numbers in a column so
  named, month and weekday names), ``category`` (everything else, booleans and identifiers
  such as ``id``/``*_id``/``zip`` included) and ``empty`` (all NULL).
- NULLs (and NaN/NaT/pd.NA) are ignored when deciding a role; they stay NULL in chart data,
  except a NULL category, which is drawn as a bar or slice labelled ``(null)`` (``GROUP BY``
  often yields one).
- The time unit is the coarsest one every value agrees with: dates that are all the first
  of a month are months, so ``date_trunc('month', ...)`` results get month axis labels.
- Naive datetimes are taken as UTC; aware ones are converted to UTC. Charts use UTC scales,
  so the labels show the wall-clock values the database returned for naive columns.
- Only the first ``limit`` rows are profiled (the chart shows no more than that anyway).
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from decimal import Decimal, InvalidOperation
from typing import Any

TEMPORAL, MEASURE, CATEGORY, ORDINAL, EMPTY = "temporal", "measure", "category", "ordinal", "empty"
# coarsest to finest
TIME_UNITS = ("year", "quarter", "month", "day", "datetime")

_YEAR_RE = re.compile(r"^\d{4}$")
_QUARTER_RE = re.compile(r"^(\d{4})[-\s]?Q([1-4])$", re.IGNORECASE)
_MONTH_RE = re.compile(r"^(\d{4})-(0[1-9]|1[0-2])$")
_DAY_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_DATETIME_RE = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}(:?\d{2})?)?$")
MAX_SAFE_INTEGER = 2**53  # JavaScript numbers hold integers exactly up to here
_NUMBER_RE = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")

_NUMERIC_TYPE = re.compile(r"int|float|double|real|numeric|decimal|number|money|serial", re.IGNORECASE)
_TEXT_TYPE = re.compile(r"char|text|string|str\b|uuid|enum|clob|bool", re.IGNORECASE)
_TEMPORAL_TYPE = re.compile(r"date|timestamp|datetime", re.IGNORECASE)

_ID_NAME = re.compile(r"(^|_)(id|uuid|guid|code|zip|zipcode|postcode|postal_code|phone|sku|isbn)$", re.IGNORECASE)
_CAMEL_ID_NAME = re.compile(r"[a-z0-9](Id|ID|Code)$")
_YEAR_NAME = re.compile(r"(^|_)(year|yr|yyyy)$", re.IGNORECASE)
_ORDINAL_NAME = re.compile(
    r"(^|_)(hour|minute|day|dow|weekday|day_of_week|dayofweek|week|month|quarter|qtr|bucket|bin|decile|quintile)$",
    re.IGNORECASE,
)

MONTH_NAMES = ("january", "february", "march", "april", "may", "june", "july", "august",
               "september", "october", "november", "december")
WEEKDAY_NAMES = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")


@dataclass(frozen=True, slots=True)
class ColumnProfile:
    """One column: its role, how many distinct values it has, and the measure's range."""

    name: str          # unique name (duplicates get ``_2``, ``_3``): the key in chart data
    source: str        # the name the query returned
    index: int
    role: str
    distinct: int
    non_null: int
    time_unit: str | None = None          # temporal columns only
    order: tuple[str, ...] | None = None  # ordinal columns with a named order (months, weekdays)
    minimum: float | None = None          # measures; for times, POSIX seconds (UTC)
    maximum: float | None = None
    integral: bool = False
    smallest: float | None = None         # measures: the smallest nonzero magnitude (how many decimals to show)

    @property
    def is_dimension(self) -> bool:
        return self.role in (CATEGORY, ORDINAL)

    @property
    def additive(self) -> bool:
        """Whether the column's values add up to a meaningful total, by its name: not an
        average, rate, share, extreme, price, score or rank ("avg_price", "conversion_rate",
        "revenue_per_user", "max_temp"), and never negative. Shares, totals, "as a share"
        follow-ups and insights all ask this one question."""
        if self.minimum is not None and self.minimum < 0:
            return False
        name = _CAMEL_HUMP.sub(" ", self.source).lower()  # "SalesRank": "sales rank"
        words = set(re.split(r"[^a-z0-9]+", name))
        return not (words & _NON_ADDITIVE_WORDS or name.startswith(_NON_ADDITIVE_PREFIXES))


_NON_ADDITIVE_WORDS = frozenset({
    "avg", "average", "mean", "median", "rate", "ratio", "pct", "percent", "percentage", "share", "fraction", "min",
    "max", "minimum", "maximum", "price", "score", "rank", "per", "stddev", "std", "variance"})
_CAMEL_HUMP = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_NON_ADDITIVE_PREFIXES = ("avg", "mean", "median", "pct")  # "avgprice"; not "min"/"max": "minutes", "maxwell"


@dataclass(frozen=True, slots=True)
class ResultProfile:
    columns: tuple[ColumnProfile, ...]
    row_count: int

    def of_role(self, *roles: str) -> list[ColumnProfile]:
        return [c for c in self.columns if c.role in roles]

    @property
    def temporal(self) -> list[ColumnProfile]:
        return self.of_role(TEMPORAL)

    @property
    def measures(self) -> list[ColumnProfile]:
        return self.of_role(MEASURE)

    @property
    def dimensions(self) -> list[ColumnProfile]:
        return self.of_role(CATEGORY, ORDINAL)


# --- value conversion -----------------------------------------------------------------------


def is_null(value: Any) -> bool:
    """None, NaN, NaT, ``pd.NA`` and ``Decimal('NaN')``: the values that mean "no value"."""
    if value is None:
        return True
    if type(value).__name__ in ("NAType", "NaTType"):
        return True
    try:
        return bool(value != value)
    except (TypeError, ValueError):
        return False


def to_number(value: Any) -> float | int | None:
    """A finite number from an int, float, Decimal or numeric string; else None.

    Integers beyond JSON's exactly representable range (2**53) come back as floats (a chart
    renderer refuses integers past 64 bits), and values beyond float range ("1e999", a
    NUMERIC(1000) sum) as None: an infinity is no number to draw or to add up."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return value if abs(value) <= MAX_SAFE_INTEGER else _finite(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Decimal):
        return _finite(value) if value.is_finite() else None
    if isinstance(value, str) and _NUMBER_RE.match(value.strip()):
        try:
            number = Decimal(value.strip())
        except InvalidOperation:
            return None
        if number == number.to_integral_value() and "." not in value and "e" not in value.lower():
            return to_number(int(number))
        return _finite(number)
    if hasattr(value, "item") and hasattr(value, "dtype"):  # numpy scalar
        return to_number(value.item())
    return None


def _finite(value: int | Decimal) -> float | None:
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def parse_temporal(value: Any, *, year_ok: bool = False) -> tuple[dt.datetime, str] | None:
    """``(naive UTC datetime, finest unit the value shows)`` or None when it is no time."""
    if isinstance(value, dt.datetime):
        moment = value.astimezone(dt.UTC).replace(tzinfo=None) if value.tzinfo else value
        return moment, "datetime"
    if isinstance(value, dt.date):
        return dt.datetime(value.year, value.month, value.day), "day"
    if hasattr(value, "to_pydatetime"):  # pandas Timestamp
        return parse_temporal(value.to_pydatetime(), year_ok=year_ok)
    if isinstance(value, (int, float, Decimal)) and not isinstance(value, bool):
        # integer years; PostgreSQL's EXTRACT(YEAR ...) returns numeric, date_part a double
        if year_ok and math.isfinite(value) and value == int(value) and 1000 <= value <= 2999:
            return dt.datetime(int(value), 1, 1), "year"
        return None
    if not isinstance(value, str):
        return None
    text = value.strip()
    if year_ok and _YEAR_RE.match(text):
        return dt.datetime(int(text), 1, 1), "year"
    if m := _QUARTER_RE.match(text):
        return dt.datetime(int(m.group(1)), 3 * int(m.group(2)) - 2, 1), "quarter"
    if m := _MONTH_RE.match(text):
        return dt.datetime(int(m.group(1)), int(m.group(2)), 1), "month"
    if _DAY_RE.match(text) or _DATETIME_RE.match(text):
        try:
            parsed = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            return None
        if parsed.tzinfo:
            parsed = parsed.astimezone(dt.UTC).replace(tzinfo=None)
        return parsed, ("day" if _DAY_RE.match(text) else "datetime")
    return None


def _coarsest_unit(moments: list[dt.datetime], shown: set[str]) -> str:
    finest = max(shown, key=TIME_UNITS.index)
    if finest in ("year", "quarter", "month"):
        return finest
    if any(m.time() != dt.time(0) for m in moments):
        return "datetime"
    if all(m.day == 1 for m in moments):
        if all(m.month == 1 for m in moments) and len({m.year for m in moments}) > 1:
            return "year"
        return "month"
    return "day"


def _named_order(values: list[Any]) -> tuple[str, ...] | None:
    if not all(isinstance(v, str) for v in values):
        return None
    lowered = {v.strip().lower() for v in values}
    for names in (MONTH_NAMES, WEEKDAY_NAMES):
        full, short = set(names), {n[:3] for n in names}
        if lowered <= full or lowered <= short:
            by_key = {v.strip().lower(): v for v in values}
            keys = names if lowered <= full else tuple(n[:3] for n in names)
            return tuple(by_key[k] for k in keys if k in by_key)
    return None


# --- profiling ------------------------------------------------------------------------------


def unique_names(columns: Sequence[str]) -> list[str]:
    """Column names made unique (``a, a`` -> ``a, a_2``) so row dicts lose no column."""
    seen: dict[str, int] = {}
    out: list[str] = []
    taken = set(columns)
    for raw in columns:
        name = str(raw) if str(raw) else "column"
        if name in seen:
            n = seen[name] + 1
            while f"{name}_{n}" in taken:
                n += 1
            seen[name] = n
            name = f"{name}_{n}"
            taken.add(name)
        else:
            seen[name] = 1
        out.append(name)
    return out


def profile_column(name: str, source: str, index: int, values: list[Any], type_hint: str = "") -> ColumnProfile:
    # an infinite float cannot be drawn either: it counts as missing, like NaN
    present = [v for v in values if not is_null(v) and not (isinstance(v, float) and math.isinf(v))]
    distinct = len({repr(v) for v in present})
    # every other role is this one with the role-specific fields replaced
    empty = ColumnProfile(name=name, source=source, index=index, role=EMPTY, distinct=distinct,
                          non_null=len(present))
    if not present:
        return empty

    text_type = bool(_TEXT_TYPE.search(type_hint)) and not _TEMPORAL_TYPE.search(type_hint)
    numeric_type = bool(_NUMERIC_TYPE.search(type_hint)) and not text_type
    year_named = bool(_YEAR_NAME.search(source))

    if not (numeric_type and not year_named):
        year_ok = year_named or bool(_TEMPORAL_TYPE.search(type_hint))
        parsed = [p for p in (parse_temporal(v, year_ok=year_ok) for v in present) if p is not None]
        if len(parsed) == len(present) and not (text_type and not all(isinstance(v, str) for v in present)):
            moments = [p[0] for p in parsed]
            unit = _coarsest_unit(moments, {p[1] for p in parsed})
            first, last = (m.replace(tzinfo=dt.UTC).timestamp() for m in (min(moments), max(moments)))
            return replace(empty, role=TEMPORAL, time_unit=unit, minimum=first, maximum=last)

    if all(isinstance(v, bool) for v in present):
        return replace(empty, role=CATEGORY)

    numbers = [n for n in (to_number(v) for v in present) if n is not None]
    strings = [v for v in present if isinstance(v, str)]
    numeric = len(numbers) == len(present) and not (
        strings and (text_type or any(re.match(r"^[+-]?0\d", s.strip()) for s in strings))
    )
    if numeric:
        if (_ID_NAME.search(source) or _CAMEL_ID_NAME.search(source)) and all(float(n).is_integer() for n in numbers):
            return replace(empty, role=CATEGORY)
        integral = all(float(n).is_integer() for n in numbers)
        if _ORDINAL_NAME.search(source) and integral and distinct <= 60:
            return replace(empty, role=ORDINAL, integral=True)
        nonzero = [abs(float(n)) for n in numbers if n]
        return replace(empty, role=MEASURE, minimum=float(min(numbers)), maximum=float(max(numbers)), integral=integral,
                       smallest=min(nonzero) if nonzero else None)

    order = _named_order(present)
    if order:
        return replace(empty, role=ORDINAL, order=order)
    return replace(empty, role=CATEGORY)


def profile_result(columns: Sequence[str], rows: Sequence[Sequence[Any]], column_types: Sequence[str] = (),
                   *, limit: int | None = None) -> ResultProfile:
    """Profile every column over the first ``limit`` rows (all rows when None)."""
    kept = rows if limit is None else rows[:limit]
    names = unique_names(columns)
    profiles = []
    for i, (name, source) in enumerate(zip(names, columns)):
        hint = str(column_types[i]) if i < len(column_types) and column_types[i] is not None else ""
        values = [row[i] if i < len(row) else None for row in kept]
        profiles.append(profile_column(name, str(source), i, values, hint))
    return ResultProfile(columns=tuple(profiles), row_count=len(rows))


def next_period(moment: dt.date, unit: str | None) -> dt.date | None:
    """The start of the calendar period after ``moment``'s (year, quarter, month, day);
    None for other units (datetimes have no "next period")."""
    if unit == "year":
        return moment.replace(year=moment.year + 1)
    if unit in ("quarter", "month"):
        month = moment.month - 1 + (3 if unit == "quarter" else 1)
        return moment.replace(year=moment.year + month // 12, month=month % 12 + 1, day=1)
    if unit == "day":
        return moment + dt.timedelta(days=1)
    return None
