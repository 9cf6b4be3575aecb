"""The Vega-Lite encoding of one column: its channel, axis, number and time formats, tooltip.

How a column is drawn is decided by the column alone (its role, range, time unit and name),
whatever chart it appears in, so the rules live here once and every builder of ``spec.py``
asks for the same channel:

- Readable numbers: percents as % (a name that says so, values in 0..1), large axis values
  in SI ("1.2M") with zero as "0" (``ZERO_LABEL``, a constant label rule: Vega formats every
  tick with the largest tick's prefix, so zero read "0M"); tooltips and big numbers by the
  display rule of ``baton.numbers`` (``d3_format``): 2 decimals, more where the column's
  smallest nonzero value needs them, so 0.0012 beside 1,234.5 reads "0.0012", never "0".
- Times on UTC scales, labelled in their unit (``%b %Y`` for months, ``%Y Q%q`` for
  quarters ...), one tick per period while the span is short (``MAX_UNIT_TICKS``); tooltips
  format times through a UTC time unit.
- Field references are escaped (``escape_field``): Vega-Lite reads ``.``, ``[``, ``]`` and
  quotes in a name as a nested path.
"""

from __future__ import annotations

import re
from typing import Any

from baton.numbers import d3_format
from baton.viz.profile import MEASURE, ORDINAL, TEMPORAL, ColumnProfile

ZERO_LABEL = "datum.value === 0 ? '0' : datum.label"  # constant: no data or name in it
MAX_UNIT_TICKS = 24
_TIME_FORMAT = {"year": "%Y", "quarter": "%Y Q%q", "month": "%b %Y", "day": "%b %d, %Y"}
_TIME_UNIT = {"year": "utcyear", "quarter": "utcyearquarter", "month": "utcyearmonth", "day": "utcyearmonthdate"}
_TICK_INTERVAL = {"year": ("year", 1), "quarter": ("month", 3), "month": ("month", 1), "day": ("day", 1)}
_PERCENT_WORDS = ("pct", "percent", "share", "ratio", "rate", "fraction", "proportion")


def escape_field(name: str) -> str:
    """A field reference Vega-Lite reads as one flat key, not a nested path (quotes too: Vega
    reads a quote in a field name as the start of a quoted path segment)."""
    return re.sub(r"""([\\.\[\]'"])""", r"\\\1", name)


def is_percent_like(column: ColumnProfile) -> bool:
    name = column.source.lower()
    return (
        any(w in name for w in _PERCENT_WORDS)
        and column.minimum is not None and column.maximum is not None
        and 0 <= column.minimum and column.maximum <= 1
    )


def number_format(column: ColumnProfile, *, axis: bool) -> str | None:
    """A d3 format: percents as %, big axis values in SI (1.2M), values (tooltips, a big
    number) by ``baton.numbers.d3_format``, so no nonzero value of the column reads 0.

    ``None`` leaves Vega's own tick labels, which are right for ordinary ranges. A percent
    axis trims zeros ("~%"): ticks of a column below 1% read "0.2%", not "0%"."""
    percent = is_percent_like(column)
    biggest = max(abs(column.minimum or 0), abs(column.maximum or 0))
    if axis:
        return "~%" if percent else "~s" if biggest >= 100_000 else None
    return d3_format(column.smallest, biggest, integral=column.integral, percent=percent)


def column_title(column: ColumnProfile) -> str:
    """What an axis, legend or tooltip calls the column: its name in the result."""
    return column.source


def quantitative_channel(column: ColumnProfile, field: str | None = None, **extra: Any) -> dict[str, Any]:
    """The channel for a measure (``field``: a derived field drawn with the column's format)."""
    enc = {"field": escape_field(field or column.name), "type": "quantitative", "title": column_title(column), **extra}
    axis_format = number_format(column, axis=True)
    if axis_format:
        enc["axis"] = {"format": axis_format}
        if axis_format == "~s":
            enc["axis"]["labelExpr"] = ZERO_LABEL
    return enc


def position_channel(column: ColumnProfile, *, as_bars: bool, sort: Any = None) -> dict[str, Any]:
    """The channel for a dimension or time along an axis."""
    enc: dict[str, Any] = {"field": escape_field(column.name), "title": column_title(column)}
    if column.role == TEMPORAL:
        unit = column.time_unit or "datetime"
        if as_bars and unit in _TIME_UNIT:
            enc.update(type="ordinal", timeUnit=_TIME_UNIT[unit], axis={"format": _TIME_FORMAT[unit], "formatType": "utc"})
            return enc
        axis: dict[str, Any] = {}
        if unit in _TIME_FORMAT:
            axis["format"] = _TIME_FORMAT[unit]
        if unit in _TICK_INTERVAL and _tick_estimate(column) <= MAX_UNIT_TICKS:
            # one tick per period, so "Jan 2024" is never repeated across a month's days;
            # only for short spans: a tick per day over 40 years takes the renderer 30 s
            interval, step = _TICK_INTERVAL[unit]
            axis["tickCount"] = {"interval": interval, "step": step}
        enc.update(type="temporal", scale={"type": "utc"}, axis=axis)
        return enc
    if column.role == ORDINAL:
        enc.update(type="ordinal", sort=list(column.order) if column.order else "ascending")
        if as_bars:
            enc["axis"] = {"labelAngle": 0}
        return enc
    enc["type"] = "nominal"
    if as_bars:
        enc["axis"] = {"labelAngle": 0}
    if sort is not None:
        enc["sort"] = sort
    return enc


def _tick_estimate(column: ColumnProfile) -> float:
    """How many one-period ticks the column's time span would need."""
    span_days = ((column.maximum or 0) - (column.minimum or 0)) / 86400
    per_tick = {"year": 365.25, "quarter": 91.3, "month": 30.44, "day": 1.0}[column.time_unit or "day"]
    return span_days / per_tick + 1


def tooltip_entry(column: ColumnProfile, field: str | None = None, title: str | None = None) -> dict[str, Any]:
    """One tooltip line for the column (``field``/``title``: a derived field's), in its display format."""
    entry: dict[str, Any] = {"field": escape_field(field or column.name), "title": title or column_title(column)}
    if column.role == MEASURE:
        entry.update(type="quantitative", format=number_format(column, axis=False))
    elif column.role == TEMPORAL:
        # formatted in UTC through a UTC time unit: a tooltip's ``formatType: "utc"`` compiles
        # to Vega's ``utc(...)`` date constructor, which shows "NaN" in the page's tooltips
        unit = column.time_unit if column.time_unit in _TIME_UNIT else None
        entry.update(type="temporal", timeUnit=_TIME_UNIT[unit] if unit else "utcyearmonthdatehoursminutesseconds",
                     format=_TIME_FORMAT[unit] if unit else "%Y-%m-%d %H:%M:%S")
    else:
        entry["type"] = "ordinal" if column.role == ORDINAL else "nominal"
    return entry


def color_channel(column: ColumnProfile) -> dict[str, Any]:
    """The channel that colours by a dimension or time (a legend: no axis, times as ordinal)."""
    enc = position_channel(column, as_bars=True)
    enc.pop("axis", None)
    if enc["type"] == "temporal":
        enc["type"] = "ordinal"
    return enc
