"""Deterministic findings on a data answer, without an LLM: the largest change between
consecutive periods, the top contributor's share, and outliers. Each comes with the rows
that prove it, so a reader (or the memory) can check it rather than trust it.

Each insight is a JSON-friendly dict::

    {"id": "ins_…", "kind": "largest_change" | "top_share" | "outlier",
     "title": "…", "text": "…", "tooltip": "…the statistics behind the text…",
     "columns": [...result columns...],
     "evidence_rows": [[...], ...],          # the result's own rows, in its column order
     "values": {...the numbers behind the text...}, "confidence_hint": 0.0-1.0}

``text`` is plain words ("December 2025 is far above the other months in revenue"); the
statistics (robust z-score, median, totals) go to ``tooltip`` and ``values``.

Decisions:

- Ids are stable: a hash of the kind and the finding's identity (measure, series, periods,
  category, row label), never of the numbers, so the same finding on refreshed data gets
  the same id and the memory can mark it "resurfaced" (or keep it dismissed).
- Largest change: needs exactly one time column (see ``baton.viz.profile``) whose unit is a
  calendar period (year, quarter, month, day), at least three periods per series, and no
  repeated period within a series (repeats mean the rows are not one value per period, and a
  "change" between them would be invented). Only ADJACENT periods are compared ("consecutive"
  means it: on the top 5 months, August and November are not consecutive, and no change is
  claimed between them). A category column splits the series; one insight per measure (first
  three measures), for the series with the largest absolute change.
- Top share: one category column, no time column, a measure that can be added up. Averages,
  rates, ratios, percentages, minima, maxima, prices and scores cannot (their "share of the
  total" means nothing), so they are skipped; so are negative values. Repeated categories
  are summed first. ``totals`` (a measure's total over the FULL result, when the rows shown
  are only part of it: a top-N follow-up computes it before its LIMIT) is the denominator
  when given, so "top 2" does not make the second-largest product half of everything.
- Outliers: the modified z-score of Iglewicz and Hoaglin, 0.6745·(x − median)/MAD, flagged
  beyond 3.5; when the MAD is 0 (over half the values equal) it uses the mean absolute
  deviation, (x − median)/(1.253314·MeanAD). Needs at least 8 values; at most 3 outliers per
  measure (the most extreme), first three measures.
- ``confidence_hint`` says how clearly a finding stands out, not whether it is true: a change
  twice the next largest, a share twice the runner-up, or |z| near 7 get close to 1. Results
  the engine truncated lower it (the finding may not hold for the rows not returned).
- A cut table (``total_rows`` above the rows shown: a top N, a filter): the largest change
  and outliers are findings on the kept rows only, and their text says so ("..., among the
  5 rows shown (of 12)"); the top share uses the full result's totals.
- At most the first ``MAX_INSIGHT_ROWS`` (50,000) rows are examined.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import statistics
from collections import defaultdict
from typing import Any

from baton.numbers import format_number, format_percent
from baton.response import QueryResult
from baton.viz.profile import ResultProfile, next_period, parse_temporal, profile_result, to_number

MAX_INSIGHT_ROWS = 50_000
MAX_MEASURES = 3
MAX_OUTLIERS_PER_MEASURE = 3
MIN_PERIODS = 3
MIN_OUTLIER_VALUES = 8
OUTLIER_Z = 3.5

def insight_id(kind: str, *key: Any) -> str:
    """A stable id for a finding: the same kind and identity give the same id."""
    raw = json.dumps([kind, *[str(k) for k in key]], ensure_ascii=False)
    return "ins_" + hashlib.sha256(raw.encode()).hexdigest()[:16]


def _plain_period(moment: dt.datetime, unit: str | None) -> str:
    """A period as people say it: "December 2025", "2025 Q4", "3 March 2025"."""
    if unit == "month":
        return f"{moment:%B %Y}"
    if unit == "day":
        return f"{moment.day} {moment:%B %Y}"
    return _period_label(moment, unit)


def adjacent(earlier: dt.datetime, later: dt.datetime, unit: str | None) -> bool:
    """True when ``later`` is the period right after ``earlier``."""
    following = next_period(earlier, unit)
    return following is not None and following == later


_UNIT_PLURAL = {"year": "years", "quarter": "quarters", "month": "months", "day": "days"}


def _plural(word: str) -> str:
    word = word.replace("_", " ")
    if word.endswith("y") and not word.endswith(("ay", "ey", "oy", "uy")):
        return word[:-1] + "ies"
    return word if word.endswith("s") else word + "s"


def _period_label(moment: dt.datetime, unit: str | None) -> str:
    if unit == "year":
        return f"{moment.year}"
    if unit == "quarter":
        return f"{moment.year} Q{(moment.month - 1) // 3 + 1}"
    if unit == "month":
        return f"{moment:%Y-%m}"
    if unit == "day":
        return moment.date().isoformat()
    return moment.isoformat(sep=" ")


def _insight(kind: str, key: tuple, title: str, text: str, columns: list[str], rows: list[list[Any]],
             values: dict[str, Any], confidence: float, truncated: bool, tooltip: str = "") -> dict[str, Any]:
    if truncated:
        confidence -= 0.3
    return {
        "id": insight_id(kind, *key), "kind": kind, "title": title, "text": text, "tooltip": tooltip, "columns": list(columns),
        "evidence_rows": [list(r) for r in rows], "values": values,
        "confidence_hint": round(min(1.0, max(0.05, confidence)), 2),
    }


# --- largest change between consecutive periods ---------------------------------------------


def _largest_changes(profile: ResultProfile, result: QueryResult, rows: list[list[Any]]) -> list[dict[str, Any]]:
    if len(profile.temporal) != 1 or len(profile.dimensions) > 1 or not profile.measures:
        return []
    time = profile.temporal[0]
    if time.time_unit not in _UNIT_PLURAL:
        return []
    split = profile.dimensions[0] if profile.dimensions else None
    found = []
    for measure in profile.measures[:MAX_MEASURES]:
        series: dict[Any, list[tuple[dt.datetime, float, list[Any]]]] = defaultdict(list)
        for row in rows:
            parsed = parse_temporal(row[time.index], year_ok=True)
            value = to_number(row[measure.index])
            if parsed is not None and value is not None:
                series[row[split.index] if split else None].append((parsed[0], float(value), row))
        best = None  # (abs change, change, series key, earlier, later)
        changes: list[float] = []
        for key, points in series.items():
            points.sort(key=lambda p: p[0])
            if len(points) < MIN_PERIODS or len({p[0] for p in points}) != len(points):
                continue
            for earlier, later in zip(points, points[1:]):
                if not adjacent(earlier[0], later[0], time.time_unit):
                    continue  # a gap: these two periods are not consecutive
                change = later[1] - earlier[1]
                changes.append(abs(change))
                if change and (best is None or abs(change) > best[0]):
                    best = (abs(change), change, key, earlier, later)
        if best is None:
            continue
        size, change, key, earlier, later = best
        others = sorted(changes, reverse=True)[1:2]
        stands_out = not others or others[0] == 0 or size >= 2 * others[0]
        frm, to = _period_label(earlier[0], time.time_unit), _period_label(later[0], time.time_unit)
        plain_from, plain_to = _plain_period(earlier[0], time.time_unit), _plain_period(later[0], time.time_unit)
        pct = change / abs(earlier[1]) if earlier[1] else None
        verb = "rose" if change > 0 else "fell"
        pct_text = f" ({format_percent(pct, signed=True)})" if pct is not None else ""
        where = f" for {key}" if split else ""
        found.append(_insight(
            "largest_change", (measure.source, split.source if split else "", key if split else "", frm, to),
            f"Largest change in {measure.source}{where}: {plain_from} → {plain_to}",
            f"{measure.source}{where} {verb} by {format_number(abs(change))}{pct_text} from {plain_from} to {plain_to}, "
            f"the largest change between consecutive {_UNIT_PLURAL[time.time_unit]}.",
            result.columns, [earlier[2], later[2]],
            {"measure": measure.source, "series": key if split else None, "from_period": frm, "to_period": to,
             "from_value": earlier[1], "to_value": later[1], "change": change, "pct_change": pct},
            (0.9 if stands_out else 0.6) - (0.2 if len(changes) < 4 else 0.0), result.truncated,
            tooltip=f"{format_number(earlier[1])} in {plain_from}, {format_number(later[1])} in {plain_to}; "
                    f"{len(changes)} changes between consecutive {_UNIT_PLURAL[time.time_unit]} compared",
        ))
    return found


# --- top contributor's share ----------------------------------------------------------------


def _top_share(profile: ResultProfile, result: QueryResult, rows: list[list[Any]],
               totals: dict[str, float] | None = None, total_rows: int | None = None) -> list[dict[str, Any]]:
    if profile.temporal or len(profile.dimensions) != 1:
        return []
    category = profile.dimensions[0]
    measure = next((m for m in profile.measures if m.additive), None)
    if measure is None:  # additive: never negative either
        return []
    totals_here: dict[Any, float] = defaultdict(float)
    evidence: dict[Any, list[list[Any]]] = defaultdict(list)
    for row in rows:
        value = to_number(row[measure.index])
        if value is not None and row[category.index] is not None:
            totals_here[row[category.index]] += float(value)
            evidence[row[category.index]].append(row)
    full = to_number((totals or {}).get(measure.source))
    grand = float(full) if full is not None else sum(totals_here.values())
    count = int(total_rows) if full is not None and total_rows else len(totals_here)
    if count < 2 or len(totals_here) < 1 or grand <= 0 or (full is None and len(totals_here) < 2):
        return []
    ranked = sorted(totals_here.items(), key=lambda kv: (-kv[1], str(kv[0])))
    (top, top_value) = ranked[0]
    second_value = ranked[1][1] if len(ranked) > 1 else 0.0
    share = top_value / grand
    scope = " of the rows returned" if result.truncated and full is None else ""
    across = f"across all {count} {category.source} values" if full is not None and count > len(totals_here) else \
        f"across {count} {category.source} values"
    return [_insight(
        "top_share", (measure.source, category.source, top),
        f"{top} leads {measure.source} with {format_percent(share)}",
        f"{top} accounts for {format_percent(share)} of total {measure.source}{scope} "
        f"({format_number(top_value)} of {format_number(grand)}, {across}).",
        result.columns, evidence[top],
        {"measure": measure.source, "dimension": category.source, "category": top, "value": top_value,
         "total": grand, "share": share, "runner_up_share": second_value / grand, "categories": count,
         "total_over": "full result" if full is not None else "rows shown"},
        0.9 if top_value >= 2 * second_value else 0.6, result.truncated,
        tooltip=f"{format_number(top_value)} of a total of {format_number(grand)} over {count} {_plural(category.source)}"
                + (f"; next largest {format_percent(second_value / grand)}" if len(ranked) > 1 else ""),
    )]


# --- outliers -------------------------------------------------------------------------------


def _row_label(profile: ResultProfile, row: list[Any]) -> tuple[str, str]:
    """(plain label, the group it stands out from) for an outlier row: ("December 2025",
    "months"), ("Madrid", "cities"), else "column=value" pairs and "rows"."""
    keys = [c for c in profile.columns if c.is_dimension or c.role == "temporal"]
    if len(keys) == 1:
        column, value = keys[0], row[keys[0].index]
        if column.role == "temporal" and (parsed := parse_temporal(value, year_ok=True)):
            return _plain_period(parsed[0], column.time_unit), _UNIT_PLURAL.get(column.time_unit or "", "periods")
        return str(value), _plural(column.source)
    parts = []
    for c in keys:
        value = row[c.index]
        if c.role == "temporal" and (parsed := parse_temporal(value, year_ok=True)):
            value = _plain_period(parsed[0], c.time_unit)
        parts.append(f"{c.source} {value}")
    return ", ".join(parts), "rows"


def _outliers(profile: ResultProfile, result: QueryResult, rows: list[list[Any]]) -> list[dict[str, Any]]:
    found = []
    for measure in profile.measures[:MAX_MEASURES]:
        points = [(float(v), row) for row in rows if (v := to_number(row[measure.index])) is not None]
        if len(points) < MIN_OUTLIER_VALUES:
            continue
        values = [p[0] for p in points]
        median = statistics.median(values)
        mad = statistics.median(abs(v - median) for v in values)
        if mad > 0:
            method, scale = "mad", mad / 0.6745
        else:
            mean_ad = statistics.fmean(abs(v - median) for v in values)
            method, scale = "meanad", 1.253314 * mean_ad
        if scale == 0:
            continue
        flagged = sorted(
            ((abs(v - median) / scale, v, row) for v, row in points if abs(v - median) / scale > OUTLIER_Z),
            key=lambda t: -t[0],
        )[:MAX_OUTLIERS_PER_MEASURE]
        for z, value, row in flagged:
            label, group = _row_label(profile, row)
            label = label or f"{measure.source}={format_number(value)}"
            direction = "high" if value > median else "low"
            where = "far above" if value > median else "far below"
            found.append(_insight(
                "outlier", (measure.source, label),
                f"Unusually {direction} {measure.source}: {label}",
                f"{label} is {where} the other {group} in {measure.source} "
                f"({format_number(value)}, where {format_number(median)} is typical).",
                result.columns, [row],
                {"measure": measure.source, "row_label": label, "value": value, "median": median,
                 "robust_z": round(z * (1 if value > median else -1), 3), "method": method},
                z / 7.0, result.truncated,
                tooltip=f"robust z-score {z:.1f} (median {format_number(median)}, "
                        f"{'median absolute deviation' if method == 'mad' else 'mean absolute deviation'}; flagged beyond {OUTLIER_Z})",
            ))
    return found


def find_insights(result: QueryResult, *, limit: int = 10, totals: dict[str, Any] | None = None,
                  total_rows: int | None = None) -> list[dict[str, Any]]:
    """Findings on ``result``: largest change, top share, outliers (in that order), at most
    ``limit``. An empty or single-row result has none. ``totals`` / ``total_rows``: a
    measure's total and the row count of the FULL result when ``result`` shows only part
    of it (module docstring)."""
    rows = [list(r) for r in result.rows[:MAX_INSIGHT_ROWS]]
    if not rows or not result.columns or (len(rows) < 2 and not totals):
        return []
    rows = [r + [None] * (len(result.columns) - len(r)) for r in rows]
    profile = profile_result(result.columns, rows, result.column_types)
    found = _largest_changes(profile, result, rows) + _top_share(profile, result, rows, totals, total_rows) \
        + _outliers(profile, result, rows)
    whole = int(total_rows) if total_rows else 0
    if whole > result.row_count:  # a cut table: what only its kept rows show says so
        for insight in found:
            if insight["kind"] in ("largest_change", "outlier"):
                insight["text"] = f"{insight['text'].rstrip('.')}, among the {result.row_count} rows shown (of {whole})."
                insight["values"]["rows_shown"], insight["values"]["rows_total"] = result.row_count, whole
    return found[:limit]


__all__ = ["MAX_INSIGHT_ROWS", "adjacent", "find_insights", "insight_id"]
