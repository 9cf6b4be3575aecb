"""Pick a chart for a query result, and correct a chart that does not fit the data.

The rules, from the result's shape (see ``profile`` for the roles):

====================================================  ===============
shape                                                 viz_type
====================================================  ===============
no rows                                               ``table``
one row, one measure (other columns become a caption)  ``big_number``
one time column + 1-6 measures                        ``line`` (one series per measure)
one time column + one category (<= 12) + one measure  ``line`` (one series per category)
one category + one measure, a "share" question or a   ``pie``
share/percent column, 2-8 non-negative slices
one category (<= 100 distinct) + one measure          ``bar`` (horizontal when labels are long
                                                      or there are more than 12)
two categories + one non-negative measure             ``stacked_bar``
two categories + one measure with negatives           ``grouped_bar``
one category (<= 30 rows) + 2-6 measures              ``grouped_bar``
two measures (+ at most one label/colour column)      ``scatter``
anything else                                         ``table``
====================================================  ===============

Validation (seed 002, "Sub-agent retry", viz): a type we do not know, or a known type that
does not fit the shape (a pie with more than 8 slices or negative values, a line without a
time axis, a scatter without two measures ...) becomes ``bar`` when the data can be a bar
chart, else ``table`` (the seed says "bar"; a bar chart of data with no measure would be an
empty picture, so we fall back to the table there).

A chart named in the question ("... as a pie chart", one of the follow-up templates) or
passed as ``requested`` is honoured when it fits and corrected when it does not; the
``reason`` says which.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from baton.response import QueryResult
from baton.viz.profile import CATEGORY, ORDINAL, TEMPORAL, ColumnProfile, ResultProfile, profile_result
from baton.viz.spec import MAX_CHART_ROWS, Layout, build_spec

VIZ_TYPES = ("line", "bar", "stacked_bar", "grouped_bar", "pie", "scatter", "big_number", "table", "text")
MAX_PIE_SLICES = 8
MAX_BAR_CATEGORIES = 100
MAX_SERIES = 12
MAX_MEASURE_SERIES = 6
MAX_GROUPED_ROWS = 30
MAX_STACK_CATEGORIES = 50
MAX_SCATTER_COLORS = 10
HORIZONTAL_AFTER = 12
LONG_LABEL = 14

_SHARE_WORDS = re.compile(
    r"\b(share|shares|percent|percentage|percentages|proportion|proportions|breakdown|composition|split|"
    r"fraction|portion|pie|donut|doughnut|makeup|make-up)\b|%",
    re.IGNORECASE,
)
_SHARE_COLUMN = re.compile(r"share|pct|percent|proportion|fraction", re.IGNORECASE)
_REQUESTS = (
    ("pie", re.compile(r"\b(pie|donut|doughnut)\b", re.IGNORECASE)),
    ("scatter", re.compile(r"\bscatter", re.IGNORECASE)),
    ("stacked_bar", re.compile(r"\bstacked\b", re.IGNORECASE)),
    ("grouped_bar", re.compile(r"\bgrouped\b|\bside[- ]by[- ]side\b", re.IGNORECASE)),
    ("line", re.compile(r"\bline\s+(chart|graph|plot)\b", re.IGNORECASE)),
    ("bar", re.compile(r"\bbar\s*(chart|graph|plot)s?\b|\bbars\b|\bhistogram\b", re.IGNORECASE)),
    ("table", re.compile(r"\b(as|in)\s+a\s+table\b|\btabular\b", re.IGNORECASE)),
)


@dataclass(frozen=True, slots=True)
class ChartChoice:
    """The chosen chart: its type, its Vega-Lite spec (``{}`` for a table) and why."""

    viz_type: str
    viz_config: dict[str, Any] = field(default_factory=dict)
    reason: str = ""


# --- fitting a type to a shape --------------------------------------------------------------


def _unique(column: ColumnProfile, profile: ResultProfile) -> bool:
    """One row per category (a single NULL group allowed: it is drawn as ``(null)``)."""
    nulls = min(profile.row_count, MAX_CHART_ROWS) - column.non_null
    return column.distinct == column.non_null and nulls <= (1 if column.role == CATEGORY else 0)


def _horizontal(column: ColumnProfile, rows: list[list[Any]]) -> bool:
    if column.role in (TEMPORAL, ORDINAL):
        return False
    i = column.index
    longest = max((len(str(r[i])) for r in rows[:MAX_CHART_ROWS] if i < len(r) and r[i] is not None), default=0)
    return column.distinct > HORIZONTAL_AFTER or longest > LONG_LABEL


def fit(viz_type: str, profile: ResultProfile, rows: list[list[Any]]) -> Layout | str:
    """The layout drawing ``viz_type`` for this shape, or the reason it does not fit."""
    t, m, d = profile.temporal, profile.measures, profile.dimensions
    n = profile.row_count
    if viz_type not in VIZ_TYPES:
        return f"{viz_type!r} is not a chart type we draw"
    if viz_type in ("table", "text"):
        return Layout(viz_type)
    if n == 0:
        return "there are no rows"
    if viz_type == "big_number":
        if n == 1 and len(m) == 1:
            return Layout("big_number", y=(m[0],), details=tuple(t + d))
        return "a big number needs one row with one measure"
    if viz_type == "line":
        axis = t if t else [c for c in d if c.role == ORDINAL]
        others = [c for c in d if c not in axis]
        if len(axis) != 1 or len(t) > 1 or n < 2:
            return "a line needs exactly one time (or ordered) axis and at least two rows"
        if 1 <= len(m) <= MAX_MEASURE_SERIES and not others:
            return Layout("line", x=axis[0], y=tuple(m))
        if len(m) == 1 and len(others) == 1 and others[0].distinct <= MAX_SERIES:
            return Layout("line", x=axis[0], y=(m[0],), color=others[0])
        return "a line needs 1-6 measures, or one measure split by one category of at most 12 values"
    if viz_type in ("bar", "pie"):
        dims = d + t
        if len(dims) != 1 or len(m) != 1:
            return f"a {viz_type} needs one category and one measure"
        category, measure = dims[0], m[0]
        if not _unique(category, profile):
            return f"the {viz_type}'s categories repeat or are NULL"
        if viz_type == "bar":
            if category.distinct > MAX_BAR_CATEGORIES:
                return f"{category.distinct} categories are too many bars (at most {MAX_BAR_CATEGORIES})"
            return Layout("bar", x=category, y=(measure,), horizontal=_horizontal(category, rows))
        if category.distinct > MAX_PIE_SLICES:
            return f"a pie with {category.distinct} slices is unreadable (at most {MAX_PIE_SLICES})"
        if category.distinct < 2 or (measure.minimum or 0) < 0 or not measure.maximum:
            return "a pie needs at least two slices and non-negative values that are not all zero"
        if category.role == TEMPORAL:
            return "a pie of periods is not a share of a whole"
        return Layout("pie", x=category, y=(measure,))
    if viz_type in ("stacked_bar", "grouped_bar"):
        if len(m) == 1 and len(d) + len(t) == 2:
            x, color = (t + d)[0], (t + d)[1]  # a time, if any, goes along the axis
            if x.distinct > MAX_STACK_CATEGORIES or color.distinct > MAX_SERIES * 2:
                return "too many categories to stack or group"
            if viz_type == "stacked_bar" and (m[0].minimum or 0) < 0:
                return "stacked bars of negative values mislead"
            return Layout(viz_type, x=x, y=(m[0],), color=color, horizontal=_horizontal(x, rows))
        if viz_type == "grouped_bar" and len(d) + len(t) == 1 and 2 <= len(m) <= MAX_MEASURE_SERIES:
            x = (d + t)[0]
            if not _unique(x, profile) or n > MAX_GROUPED_ROWS:
                return f"grouped bars need at most {MAX_GROUPED_ROWS} distinct categories"
            return Layout("grouped_bar", x=x, y=tuple(m), horizontal=_horizontal(x, rows))
        return f"a {viz_type.replace('_', ' ')} needs two categories and one measure"
    if viz_type == "scatter":
        if len(m) < 2 or n < 2:
            return "a scatter needs two measures and at least two rows"
        dots_by = d[0] if len(d) == 1 and d[0].distinct <= MAX_SCATTER_COLORS and d[0].distinct < n else None
        return Layout("scatter", y=(m[0], m[1]), color=dots_by, details=tuple(c for c in d + t + m[2:] if c is not dots_by))
    return f"{viz_type!r} is not a chart type we draw"  # pragma: no cover - VIZ_TYPES is exhaustive


def _fallback(profile: ResultProfile, rows: list[list[Any]]) -> Layout:
    bar = fit("bar", profile, rows)
    return bar if isinstance(bar, Layout) else Layout("table")


def _natural(profile: ResultProfile, rows: list[list[Any]], question: str | None) -> tuple[Layout, str]:
    t, m, d = profile.temporal, profile.measures, profile.dimensions
    n = profile.row_count
    if n == 0:
        return Layout("table"), "no rows to chart"
    if n == 1:
        layout = fit("big_number", profile, rows)
        if isinstance(layout, Layout):
            return layout, "a single value"
        return Layout("table"), "one row with several values reads best as a table"
    if len(t) == 1:
        layout = fit("line", profile, rows)
        if isinstance(layout, Layout):
            return layout, "values over time"
    if not t and len(d) == 1 and len(m) == 1:
        share_column = bool(_SHARE_COLUMN.search(m[0].source))
        if (question and _SHARE_WORDS.search(question)) or share_column:
            pie = fit("pie", profile, rows)
            if isinstance(pie, Layout):
                return pie, "shares of a whole across a few categories"
        layout = fit("bar", profile, rows)
        if isinstance(layout, Layout):
            return layout, "a measure compared across categories"
        return Layout("table"), str(layout)
    if len(d) + len(t) == 2 and len(m) == 1:
        for kind, why in (("stacked_bar", "a measure by category and subcategory"),
                          ("grouped_bar", "a measure with negatives by category and subcategory")):
            layout = fit(kind, profile, rows)
            if isinstance(layout, Layout):
                return layout, why
    if len(d) + len(t) == 1 and 2 <= len(m):
        layout = fit("grouped_bar", profile, rows)
        if isinstance(layout, Layout):
            return layout, "several measures compared across categories"
    if len(m) == 2 and len(d) + len(t) <= 1:
        layout = fit("scatter", profile, rows)
        if isinstance(layout, Layout):
            return layout, "two measures against each other"
    return Layout("table"), "no chart fits this shape better than a table"


# --- public API -----------------------------------------------------------------------------


def _profile(result: QueryResult) -> ResultProfile:
    return profile_result(result.columns, result.rows, result.column_types, limit=MAX_CHART_ROWS)


def requested_type(question: str | None) -> str | None:
    """The chart type a question names ("show this as a pie chart" -> ``pie``), if any."""
    if not question:
        return None
    for kind, pattern in _REQUESTS:
        if pattern.search(question):
            return kind
    return None


def validate_chart(viz_type: str, result: QueryResult) -> str:
    """``viz_type`` when it fits ``result``; otherwise ``bar`` if that fits, else ``table``."""
    profile = _profile(result)
    layout = fit(viz_type, profile, result.rows)
    return layout.viz_type if isinstance(layout, Layout) else _fallback(profile, result.rows).viz_type


def _default_title(layout: Layout) -> str:
    y = [c.source for c in layout.y]
    what = " and ".join(y) if len(y) <= 2 else ", ".join(y[:-1]) + " and " + y[-1]
    if layout.viz_type == "big_number":
        return what
    if layout.viz_type == "scatter":
        return f"{y[1]} vs {y[0]}"
    by = [c.source for c in (layout.x, layout.color) if c is not None]
    joiner = " over " if layout.x is not None and layout.x.role == TEMPORAL else " by "
    return what + joiner + " and ".join(by) if by else what


def choose_chart(result: QueryResult, *, question: str | None = None, requested: str | None = None) -> ChartChoice:
    """Choose the chart for ``result`` and build its Vega-Lite spec.

    ``requested`` (or a chart the question names) is used when it fits the data and
    corrected (to ``bar``, else ``table``) when it does not; ``reason`` says what happened.
    """
    profile = _profile(result)
    rows = result.rows
    wanted = requested or requested_type(question)
    if wanted:
        fitted = fit(wanted, profile, rows)
        if isinstance(fitted, Layout):
            layout, reason = fitted, f"{wanted} as requested"
        else:
            layout = _fallback(profile, rows)
            reason = f"{wanted} was requested but {fitted}; drawn as {layout.viz_type}"
    else:
        layout, reason = _natural(profile, rows, question)
    title = (question or "").strip() or _default_title(layout)
    if len(title) > 90:
        title = title[:89].rstrip() + "…"
    spec = build_spec(layout, rows, title=title, total_rows=result.row_count, source_truncated=result.truncated)
    return ChartChoice(viz_type=layout.viz_type, viz_config=spec, reason=reason)
