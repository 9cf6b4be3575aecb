"""Charts people can read: lines broken at gaps between periods, labels that fit.

- A line over calendar periods (years, quarters, months, days) with gaps, such as the top 5
  months of a year, is drawn as separate segments of adjacent periods (a ``_segment`` field
  and a ``detail`` channel), with points: months that are not adjacent are never joined. A
  series without a gap is drawn as before (no extra field).
- Category labels along a vertical axis are rotated (-40°) and cut at ``LABEL_LIMIT`` pixels
  when they would not fit side by side at ``CHAR_PX`` per character; time labels are rotated
  (-45°) when one per period would overlap.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from baton.viz.profile import TEMPORAL, next_period

SEGMENT = "_segment"
LABEL_LIMIT = 120
CHAR_PX = 6.5  # an average label character at the default 10px font


def break_gaps(layout: Any, values: list[dict[str, Any]], spec: dict[str, Any]) -> None:
    """Number the runs of adjacent periods (``_segment``) and draw each as its own line
    when a series has a gap; nothing changes for a series without one."""
    x = layout.x
    if x is None or x.role != TEMPORAL or x.time_unit not in ("year", "quarter", "month", "day"):
        return
    series_field = layout.color.name if layout.color is not None else None
    by_series: dict[Any, list[tuple[dt.date, dict[str, Any]]]] = {}
    for record in values:
        raw = record.get(x.name)
        try:
            moment = dt.date.fromisoformat(str(raw)[:10])
        except ValueError:
            return
        by_series.setdefault(record.get(series_field) if series_field else None, []).append((moment, record))
    segment, gapped = 0, False
    for points in by_series.values():
        points.sort(key=lambda p: p[0])
        previous = None
        for moment, record in points:
            if previous is not None and next_period(previous, x.time_unit) != moment:
                segment += 1
                gapped = True
            record[SEGMENT] = segment
            previous = moment
        segment += 1
    if not gapped:
        for record in values:
            record.pop(SEGMENT, None)
        return
    spec["mark"] = {**spec.get("mark", {}), "point": True}
    spec.setdefault("encoding", {})["detail"] = {"field": SEGMENT, "type": "nominal"}


def fit_labels(x: Any, values: list[dict[str, Any]], spec: dict[str, Any], *, field: str, width: int, max_ticks: int) -> None:
    """Rotate category labels that would not fit side by side, and time labels that would
    overlap at one per period (module docstring). ``field``: the x channel's field."""
    channel = spec.get("encoding", {}).get("x")
    if not isinstance(channel, dict) or channel.get("field") != field:
        return
    labels = {str(v.get(x.name)) for v in values}
    if x.role == TEMPORAL:
        count = min(len(labels), max_ticks) if channel.get("type") == "temporal" else len(labels)
        longest = {"year": 4, "quarter": 7, "month": 8, "day": 12}.get(x.time_unit or "", 16)
    else:
        count, longest = len(labels), max((len(label) for label in labels), default=0)
    if count * (longest * CHAR_PX + 8) > width:
        axis = channel.setdefault("axis", {})
        axis.update(labelAngle=-45 if x.role == TEMPORAL else -40, labelAlign="right", labelLimit=LABEL_LIMIT)


__all__ = ["SEGMENT", "break_gaps", "fit_labels"]
