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
  rule (``encoding.ZERO_LABEL``): Vega formats every tick of an SI axis with the largest
  tick's prefix, so zero read "0M"; it reads "0".
- Readable axes: SI labels for large values ("1.2M", zero as "0"; ``encoding``); rotated
  labels where they would not fit, and lines broken at gaps between periods (``readability``).
- Times are written as ISO strings and drawn on UTC scales (see ``profile``), with axis
  labels that match the time unit (``%b %Y`` for months, ``%Y Q%q`` for quarters, ...;
  ``encoding``).
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from baton.numbers import d3_format, format_cell
from baton.viz.encoding import (
    MAX_UNIT_TICKS,
    color_channel,
    column_title,
    escape_field,
    number_format,
    position_channel,
    quantitative_channel,
    tooltip_entry,
)  # fmt: skip
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
NULL_LABEL = "(null)"
MAX_LINE_POINTS = 100


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


# --- builders -------------------------------------------------------------------------------


def _tooltips(layout: Layout) -> list[dict[str, Any]]:
    """Every column the layout draws, once each, in tooltip order (x and colour first)."""
    seen, out = set(), []
    for column in (layout.x, layout.color, *layout.y, *layout.details):
        if column is not None and column.name not in seen:
            seen.add(column.name)
            out.append(tooltip_entry(column))
    return out


def _folded(measures: Sequence[ColumnProfile]) -> tuple[list[dict[str, Any]], dict[str, Any], dict[str, Any], dict[str, Any]]:
    """Several measures folded into one value column: (transform, y, colour, value tooltip)."""
    transform = [{"fold": [escape_field(m.name) for m in measures], "as": [SERIES, VALUE]}]
    smallest = [m.smallest for m in measures if m.smallest is not None]
    merged = ColumnProfile(
        name=VALUE, source="value", index=-1, role=MEASURE, distinct=0, non_null=0,
        minimum=min(m.minimum or 0 for m in measures), maximum=max(m.maximum or 0 for m in measures),
        integral=all(m.integral for m in measures), smallest=min(smallest) if smallest else None,
    )
    y = quantitative_channel(merged, VALUE)
    y["title"] = None
    color = {"field": SERIES, "type": "nominal", "title": None, "sort": [m.name for m in measures]}
    tooltip = {"field": VALUE, "type": "quantitative", "title": "value", "format": number_format(merged, axis=False)}
    return transform, y, color, tooltip


def _line(layout: Layout) -> dict[str, Any]:
    assert layout.x is not None, "fit() gives every line an x column"
    x = position_channel(layout.x, as_bars=False)
    points = layout.x.non_null <= MAX_LINE_POINTS  # dots help on short series, clutter long ones
    spec: dict[str, Any] = {"mark": {"type": "line", "point": points, "interpolate": "linear"}}
    if len(layout.y) > 1:
        transform, y, color, value = _folded(layout.y)
        tooltip = [tooltip_entry(layout.x), {"field": SERIES, "type": "nominal", "title": "series"}, value]
        spec.update(transform=transform, encoding={"x": x, "y": y, "color": color, "tooltip": tooltip})
        return spec
    encoding = {"x": x, "y": quantitative_channel(layout.y[0]), "tooltip": _tooltips(layout)}
    if layout.color is not None:
        encoding["color"] = color_channel(layout.color)
    spec["encoding"] = encoding
    return spec


def _bar(layout: Layout) -> dict[str, Any]:
    assert layout.x is not None, "fit() gives every bar chart an x column"
    measure = layout.y[0]
    cat_axis, val_axis = ("y", "x") if layout.horizontal else ("x", "y")
    sort = f"-{val_axis}" if layout.x.role not in (ORDINAL, TEMPORAL) else None
    encoding: dict[str, Any] = {cat_axis: position_channel(layout.x, as_bars=True, sort=sort),
                                val_axis: quantitative_channel(measure), "tooltip": _tooltips(layout)}
    if layout.viz_type == "stacked_bar":
        assert layout.color is not None, "fit() gives every stacked bar chart a color column"
        encoding["color"] = color_channel(layout.color)
        encoding[val_axis]["stack"] = "zero"
        if sort:
            encoding[cat_axis]["sort"] = {"op": "sum", "field": escape_field(measure.name), "order": "descending"}
    return {"mark": {"type": "bar", "tooltip": True}, "encoding": encoding}


def _grouped_bar(layout: Layout) -> dict[str, Any]:
    cat_axis, val_axis = ("y", "x") if layout.horizontal else ("x", "y")
    offset = "yOffset" if layout.horizontal else "xOffset"
    assert layout.x is not None, "fit() gives every grouped bar chart an x column"
    spec: dict[str, Any] = {"mark": {"type": "bar"}}
    x = position_channel(layout.x, as_bars=True)
    if len(layout.y) > 1:
        transform, y, color, value = _folded(layout.y)
        tooltip = [tooltip_entry(layout.x), {"field": SERIES, "type": "nominal", "title": "series"}, value]
        spec.update(transform=transform, encoding={
            cat_axis: x, val_axis: y, "color": color, offset: {"field": SERIES, "sort": color["sort"]},
            "tooltip": tooltip})
        return spec
    assert layout.color is not None, "fit() groups a single measure's bars by a color column"
    color = color_channel(layout.color)
    spec["encoding"] = {cat_axis: x, val_axis: quantitative_channel(layout.y[0]), "color": color,
                        offset: {"field": color["field"]}, "tooltip": _tooltips(layout)}
    return spec


def _pie(layout: Layout, values: list[dict[str, Any]]) -> dict[str, Any]:
    measure, category = layout.y[0], layout.x
    assert category is not None, "fit() gives every pie a category column"
    total = sum(v[measure.name] or 0 for v in values)
    for v in values:
        v[SHARE] = (v[measure.name] or 0) / total if total else None
    shares = [abs(v[SHARE]) for v in values if v[SHARE]]
    share_format = d3_format(min(shares) if shares else None, 1.0, integral=False, percent=True)  # a thin slice is not "0.0%"
    tooltip = [tooltip_entry(category), tooltip_entry(measure),
               {"field": SHARE, "type": "quantitative", "title": "share", "format": share_format}]
    return {
        "width": 300, "height": 300,
        "mark": {"type": "arc", "innerRadius": 0, "tooltip": True},
        "encoding": {
            "theta": {"field": escape_field(measure.name), "type": "quantitative", "stack": True},
            "color": {"field": escape_field(category.name), "type": "nominal", "title": column_title(category),
                      "sort": {"field": escape_field(measure.name), "order": "descending"}},
            "order": {"field": escape_field(measure.name), "type": "quantitative", "sort": "descending"},
            "tooltip": tooltip,
        },
        "view": {"stroke": None},
    }


def _scatter(layout: Layout) -> dict[str, Any]:
    x_measure, y_measure = layout.y[0], layout.y[1]
    encoding: dict[str, Any] = {
        "x": quantitative_channel(x_measure, scale={"zero": False}),
        "y": quantitative_channel(y_measure, scale={"zero": False}),
        "tooltip": _tooltips(layout),
    }
    if layout.color is not None:
        encoding["color"] = color_channel(layout.color)
    return {"mark": {"type": "point", "filled": True, "opacity": 0.75}, "encoding": encoding}


def _big_number(layout: Layout, values: list[dict[str, Any]]) -> dict[str, Any]:
    measure = layout.y[0]
    caption = ", ".join(
        f"{c.source}: {format_cell(c.source, values[0].get(c.name))}" for c in layout.details
        if values and values[0].get(c.name) is not None
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
