"""Vega-Lite v5 specs for a chosen chart, with the data inlined.

Decisions:

- Data is always inlined (``data.values``); a spec never names a URL to fetch, so it renders
  offline and cannot be pointed at someone else's server. ``$schema`` is the usual Vega-Lite
  v5 identifier (never fetched; vega-embed reads it to pick the version).
- At most ``MAX_CHART_ROWS`` (5,000) rows are inlined. When a result is longer the subtitle
  says "first 5,000 of N rows" and ``usermeta.baton`` records both counts, so a cut chart is
  never mistaken for the whole answer.
- Only the columns the chart uses are inlined. Keys are the profile's unique column names;
  names with ``.``/``[``/``]`` are escaped in field references, because Vega-Lite reads
  them as nested paths.
- Text that XML cannot hold (control characters, lone surrogates, U+FFFE/U+FFFF) is
  replaced by U+FFFD everywhere in the spec: the offline renderer aborts the process on it.
- No Vega expressions are generated from data or names (no ``calculate``/``filter``
  strings): column names are model-influenced text, and derived values (a pie slice's share,
  a line's segments) are computed here instead. The one expression is a constant axis label
  rule (``ZERO_LABEL``): Vega formats every tick of an SI axis with the largest tick's
  prefix, so zero read "0M"; it reads "0".
- Readable axes: SI labels for large values ("1.2M", zero as "0"); rotated labels where they
  would not fit, and lines broken at gaps between periods (``readability``).
- Times are written as ISO strings and drawn on UTC scales (see ``profile``), with axis
  labels that match the time unit (``%b %Y`` for months, ``%Y Q%q`` for quarters, ...).
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from baton.viz.profile import (
    CATEGORY,
    MAX_SAFE_INTEGER,
    MEASURE,
    ORDINAL,
    TEMPORAL,
    ColumnProfile,
    is_null,
    parse_temporal,
    to_number,
)  # fmt: skip
from baton.viz.readability import break_gaps, fit_labels

SCHEMA = "https://vega.github.io/schema/vega-lite/v5.json"
MAX_CHART_ROWS = 5000
WIDTH, HEIGHT = 560, 320
SERIES, VALUE, SHARE = "_series", "_value", "_share"
ZERO_LABEL = "datum.value === 0 ? '0' : datum.label"  # constant: no data or name in it
NULL_LABEL = "(null)"
MAX_UNIT_TICKS = 24
MAX_LINE_POINTS = 100

_TIME_FORMAT = {"year": "%Y", "quarter": "%Y Q%q", "month": "%b %Y", "day": "%b %d, %Y"}
_TIME_UNIT = {"year": "utcyear", "quarter": "utcyearquarter", "month": "utcyearmonth", "day": "utcyearmonthdate"}
_TICK_INTERVAL = {"year": ("year", 1), "quarter": ("month", 3), "month": ("month", 1), "day": ("day", 1)}


@dataclass(frozen=True, slots=True)
class Layout:
    """Which columns a chart puts where (the chooser decides, the builder draws)."""

    viz_type: str
    x: ColumnProfile | None = None
    y: tuple[ColumnProfile, ...] = ()
    color: ColumnProfile | None = None
    details: tuple[ColumnProfile, ...] = ()  # shown in tooltips (or a big number's caption)
    horizontal: bool = False


# Characters XML 1.0 cannot hold. The SVG renderer aborts the whole process (a Rust panic,
# not an exception) on any of them, so they are replaced before a spec leaves this module.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def scrub(value: Any) -> Any:
    """``value`` (a spec, or part of one) with every string made XML-safe (U+FFFD for the rest)."""
    if isinstance(value, str):
        return _NOT_XML.sub("\ufffd", value)
    if isinstance(value, dict):
        return {scrub(k): scrub(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [scrub(v) for v in value]
    return value


def escape_field(name: str) -> str:
    """A field reference Vega-Lite reads as one flat key, not a nested path (quotes too: Vega
    reads a quote in a field name as the start of a quoted path segment)."""
    return re.sub(r"""([\\.\[\]'"])""", r"\\\1", name)


# --- values ---------------------------------------------------------------------------------


def _iso(moment: dt.datetime, unit: str | None) -> str:
    if unit == "datetime":
        return moment.isoformat(timespec="milliseconds") + "Z"
    return moment.date().isoformat()


def chart_value(column: ColumnProfile, value: Any) -> Any:
    """``value`` as JSON the chart can read: numbers for measures, ISO text for times."""
    if is_null(value):
        return NULL_LABEL if column.role == CATEGORY else None
    if column.role == MEASURE:
        return to_number(value)
    if column.role == TEMPORAL:
        parsed = parse_temporal(value, year_ok=True)
        return _iso(parsed[0], column.time_unit) if parsed else str(value)
    if column.role == ORDINAL and column.order is None:
        number = to_number(value)
        return number if number is not None else str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return f"<{len(bytes(value))} bytes>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int) and abs(value) > MAX_SAFE_INTEGER:
        return str(value)  # an id past 2**53: exact as text (the renderer refuses > 64-bit ints)
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value if isinstance(value, (str, int, float)) else str(value)


def records(layout: Layout, rows: Sequence[Sequence[Any]]) -> list[dict[str, Any]]:
    used: dict[str, ColumnProfile] = {}
    for column in (layout.x, *layout.y, layout.color, *layout.details):
        if column is not None:
            used.setdefault(column.name, column)
    return [
        {c.name: chart_value(c, row[c.index] if c.index < len(row) else None) for c in used.values()}
        for row in rows[:MAX_CHART_ROWS]
    ]


# --- formats --------------------------------------------------------------------------------

_PERCENT_WORDS = ("pct", "percent", "share", "ratio", "rate", "fraction", "proportion")


def is_percent_like(column: ColumnProfile) -> bool:
    name = column.source.lower()
    return (
        any(w in name for w in _PERCENT_WORDS)
        and column.minimum is not None and column.maximum is not None
        and 0 <= column.minimum and column.maximum <= 1
    )


def number_format(column: ColumnProfile, *, axis: bool) -> str | None:
    """A d3 format: percents as %, big axis values in SI (1.2M), tooltips with 2 decimals.

    ``None`` leaves Vega's own tick labels, which are right for ordinary ranges."""
    if is_percent_like(column):
        return ".0%" if axis else ".1%"
    biggest = max(abs(column.minimum or 0), abs(column.maximum or 0))
    if axis:
        return "~s" if biggest >= 100_000 else None
    return ",d" if column.integral else ",.2~f" if biggest >= 1 else ".3~g"


def _title(column: ColumnProfile) -> str:
    return column.source


def _quantitative(column: ColumnProfile, field: str | None = None, **extra: Any) -> dict[str, Any]:
    enc = {"field": escape_field(field or column.name), "type": "quantitative", "title": _title(column), **extra}
    axis_format = number_format(column, axis=True)
    if axis_format:
        enc["axis"] = {"format": axis_format}
        if axis_format == "~s":
            enc["axis"]["labelExpr"] = ZERO_LABEL
    return enc


def _position(column: ColumnProfile, *, as_bars: bool, sort: Any = None) -> dict[str, Any]:
    """The channel for a dimension or time along an axis."""
    enc: dict[str, Any] = {"field": escape_field(column.name), "title": _title(column)}
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


def _tooltip_entry(column: ColumnProfile, field: str | None = None, title: str | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {"field": escape_field(field or column.name), "title": title or _title(column)}
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


def _tooltips(layout: Layout) -> list[dict[str, Any]]:
    seen, out = set(), []
    for column in (layout.x, layout.color, *layout.y, *layout.details):
        if column is not None and column.name not in seen:
            seen.add(column.name)
            out.append(_tooltip_entry(column))
    return out


def _color(column: ColumnProfile) -> dict[str, Any]:
    enc = _position(column, as_bars=True)
    enc.pop("axis", None)
    if enc["type"] == "temporal":
        enc["type"] = "ordinal"
    return enc


# --- builders -------------------------------------------------------------------------------


def _folded(measures: Sequence[ColumnProfile]) -> tuple[list[dict[str, Any]], dict[str, Any], dict[str, Any]]:
    transform = [{"fold": [escape_field(m.name) for m in measures], "as": [SERIES, VALUE]}]
    merged = ColumnProfile(
        name=VALUE, source="value", index=-1, role=MEASURE, distinct=0, non_null=0,
        minimum=min(m.minimum or 0 for m in measures), maximum=max(m.maximum or 0 for m in measures),
        integral=all(m.integral for m in measures),
    )
    y = _quantitative(merged, VALUE)
    y["title"] = None
    color = {"field": SERIES, "type": "nominal", "title": None, "sort": [m.name for m in measures]}
    return transform, y, color


def _line(layout: Layout) -> dict[str, Any]:
    assert layout.x is not None, "fit() gives every line an x column"
    x = _position(layout.x, as_bars=False)
    points = layout.x.non_null <= MAX_LINE_POINTS  # dots help on short series, clutter long ones
    spec: dict[str, Any] = {"mark": {"type": "line", "point": points, "interpolate": "linear"}}
    if len(layout.y) > 1:
        transform, y, color = _folded(layout.y)
        tooltip = [_tooltip_entry(layout.x), {"field": SERIES, "type": "nominal", "title": "series"},
                   {"field": VALUE, "type": "quantitative", "title": "value", "format": ",.2~f"}]
        spec.update(transform=transform, encoding={"x": x, "y": y, "color": color, "tooltip": tooltip})
        return spec
    encoding = {"x": x, "y": _quantitative(layout.y[0]), "tooltip": _tooltips(layout)}
    if layout.color is not None:
        encoding["color"] = _color(layout.color)
    spec["encoding"] = encoding
    return spec


def _bar(layout: Layout) -> dict[str, Any]:
    assert layout.x is not None, "fit() gives every bar chart an x column"
    measure = layout.y[0]
    cat_axis, val_axis = ("y", "x") if layout.horizontal else ("x", "y")
    sort = f"-{val_axis}" if layout.x.role not in (ORDINAL, TEMPORAL) else None
    encoding: dict[str, Any] = {cat_axis: _position(layout.x, as_bars=True, sort=sort), val_axis: _quantitative(measure),
                "tooltip": _tooltips(layout)}
    if layout.viz_type == "stacked_bar":
        assert layout.color is not None, "fit() gives every stacked bar chart a color column"
        encoding["color"] = _color(layout.color)
        encoding[val_axis]["stack"] = "zero"
        if sort:
            encoding[cat_axis]["sort"] = {"op": "sum", "field": escape_field(measure.name), "order": "descending"}
    return {"mark": {"type": "bar", "tooltip": True}, "encoding": encoding}


def _grouped_bar(layout: Layout) -> dict[str, Any]:
    cat_axis, val_axis = ("y", "x") if layout.horizontal else ("x", "y")
    offset = "yOffset" if layout.horizontal else "xOffset"
    assert layout.x is not None, "fit() gives every grouped bar chart an x column"
    spec: dict[str, Any] = {"mark": {"type": "bar"}}
    x = _position(layout.x, as_bars=True)
    if len(layout.y) > 1:
        transform, y, color = _folded(layout.y)
        tooltip = [_tooltip_entry(layout.x), {"field": SERIES, "type": "nominal", "title": "series"},
                   {"field": VALUE, "type": "quantitative", "title": "value", "format": ",.2~f"}]
        spec.update(transform=transform, encoding={
            cat_axis: x, val_axis: y, "color": color, offset: {"field": SERIES, "sort": color["sort"]},
            "tooltip": tooltip})
        return spec
    assert layout.color is not None, "fit() groups a single measure's bars by a color column"
    color = _color(layout.color)
    spec["encoding"] = {cat_axis: x, val_axis: _quantitative(layout.y[0]), "color": color,
                        offset: {"field": color["field"]}, "tooltip": _tooltips(layout)}
    return spec


def _pie(layout: Layout, values: list[dict[str, Any]]) -> dict[str, Any]:
    measure, category = layout.y[0], layout.x
    assert category is not None, "fit() gives every pie a category column"
    total = sum(v[measure.name] or 0 for v in values)
    for v in values:
        v[SHARE] = (v[measure.name] or 0) / total if total else None
    tooltip = [_tooltip_entry(category), _tooltip_entry(measure),
               {"field": SHARE, "type": "quantitative", "title": "share", "format": ".1%"}]
    return {
        "width": 300, "height": 300,
        "mark": {"type": "arc", "innerRadius": 0, "tooltip": True},
        "encoding": {
            "theta": {"field": escape_field(measure.name), "type": "quantitative", "stack": True},
            "color": {"field": escape_field(category.name), "type": "nominal", "title": _title(category),
                      "sort": {"field": escape_field(measure.name), "order": "descending"}},
            "order": {"field": escape_field(measure.name), "type": "quantitative", "sort": "descending"},
            "tooltip": tooltip,
        },
        "view": {"stroke": None},
    }


def _scatter(layout: Layout) -> dict[str, Any]:
    x_measure, y_measure = layout.y[0], layout.y[1]
    encoding: dict[str, Any] = {
        "x": _quantitative(x_measure, scale={"zero": False}),
        "y": _quantitative(y_measure, scale={"zero": False}),
        "tooltip": _tooltips(layout),
    }
    if layout.color is not None:
        encoding["color"] = _color(layout.color)
    return {"mark": {"type": "point", "filled": True, "opacity": 0.75}, "encoding": encoding}


def _big_number(layout: Layout, values: list[dict[str, Any]]) -> dict[str, Any]:
    measure = layout.y[0]
    caption = ", ".join(
        f"{c.source}: {values[0].get(c.name)}" for c in layout.details if values and values[0].get(c.name) is not None
    )
    spec: dict[str, Any] = {
        "width": 300, "height": 110,
        "mark": {"type": "text", "fontSize": 56, "fontWeight": "bold", "align": "center", "baseline": "middle"},
        "encoding": {
            "text": {"field": escape_field(measure.name), "type": "quantitative", "format": number_format(measure, axis=False)},
            "x": {"value": 150}, "y": {"value": 55},
        },
        "view": {"stroke": None},
    }
    if caption:
        spec["_caption"] = caption
    return spec


def build_spec(layout: Layout, rows: Sequence[Sequence[Any]], *, title: str, total_rows: int,
               source_truncated: bool = False) -> dict[str, Any]:
    """The Vega-Lite v5 spec for ``layout`` over ``rows`` (tables have no spec: ``{}``)."""
    if layout.viz_type in ("table", "text"):
        return {}
    values = records(layout, rows)
    builders = {"line": _line, "bar": _bar, "stacked_bar": _bar, "grouped_bar": _grouped_bar, "scatter": _scatter}
    if layout.viz_type == "pie":
        body = _pie(layout, values)
    elif layout.viz_type == "big_number":
        body = _big_number(layout, values)
    else:
        body = builders[layout.viz_type](layout)
    shown = len(values)
    subtitle = [body.pop("_caption")] if "_caption" in body else []
    if shown < total_rows:
        subtitle.append(f"first {shown:,} of {total_rows:,} rows")
    title_obj: dict[str, Any] = {"text": title, "anchor": "start"}
    if subtitle:
        title_obj["subtitle"] = " · ".join(subtitle)
    spec: dict[str, Any] = {"$schema": SCHEMA, "title": title_obj, "width": WIDTH, "height": HEIGHT}
    if layout.horizontal and layout.viz_type in ("bar", "stacked_bar", "grouped_bar"):
        spec["height"] = {"step": 18 if layout.viz_type != "grouped_bar" else 12}
    spec.update(body)
    if layout.viz_type == "line":
        break_gaps(layout, values, spec)
    if layout.x is not None and not layout.horizontal:
        fit_labels(layout.x, values, spec, field=escape_field(layout.x.name), width=WIDTH, max_ticks=MAX_UNIT_TICKS)
    spec["data"] = {"values": values}
    spec["usermeta"] = {"baton": {"viz_type": layout.viz_type, "rows_shown": shown, "rows_total": total_rows,
                                  "truncated": shown < total_rows or source_truncated}}
    return scrub(spec)
