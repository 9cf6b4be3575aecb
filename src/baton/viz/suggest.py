"""Follow-up suggestions for a data answer, from templates (seed 002, "Suggestion Engine (No
LLM Cost)"): no model call, so every data answer can carry them for free.

The pool is the seed's five templates; a query with aggregate keywords adds "Show percentage
breakdown" and "Average instead of count?"; a result with more than one row and at least two
columns adds "Sort by <last column> descending". The pool is shuffled and the first ``k``
(3) are returned.

Decisions:

- The shuffle uses a local ``random.Random(seed)``, never the global random state: the same
  seed gives the same suggestions, and callers' own use of ``random`` is neither disturbed
  nor able to change ours. ``seed=None`` draws a fresh order each time.
- Aggregate keywords are matched as whole words, case-insensitively, after SQL comments and
  string literals are removed (``WHERE status = 'count'`` is no aggregate): COUNT, SUM, AVG,
  MIN, MAX, MEDIAN, STDDEV/STDEV, VARIANCE, GROUP BY, HAVING, and "average" for when
  the query passed in is the user's question rather than SQL.
- ``query`` may be None or empty (a DataFrame answer with no SQL): the templates still apply.

Suggestions that fit (issue 14): given the ``result`` (and the chart drawn, ``viz_type``),
the pool holds only what the LLM-free follow-ups (``baton.workspace.followups``) can answer
on THIS result, phrased the way they understand it:

- a chart type that fits the data and is not the one shown ("Show this as a pie chart"
  only for 2-8 non-negative slices of one category; bar/line alternatives likewise);
- "Show only the top 5 results" when there are more than five rows and a measure;
- "Show only the top 3 results" when there are four or five;
- "Sort by <measure> descending" unless the rows are already in that order (then
  "ascending" unless in that one), and "Sort by <its label column>" unless already so;
- "Show this as a table" when a chart is shown and fewer than three others fit (every
  answer with a table offers at least three);
- "Show percentage breakdown" for one category (or period) and an additive, non-negative
  measure that is not already a share;
- "Break this down by quarter" (by year, by month) when one time column can be rolled up to
  a coarser period and every measure is a SUM or a COUNT in the SQL;
- "Compare with the previous period" for a series over calendar periods, with the SQL.

"What is the trend over time?" and "Average instead of count?" need a model, so they are
never offered with a result. Without a result (``result=None``) the seed's pool stays.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from typing import Any

FOLLOWUP_TEMPLATES = [
    "Show this as a pie chart",
    "Break this down by month",
    "Compare with the previous period",
    "Show only the top 5 results",
    "What is the trend over time?",
]
AGGREGATE_FOLLOWUPS = ["Show percentage breakdown", "Average instead of count?"]

_AGGREGATE = re.compile(
    r"\b(count|sum|avg|average|min|max|median|stddev|stdev|stddev_pop|stddev_samp|variance|having|group\s+by)\b",
    re.IGNORECASE,
)
_NOISE = re.compile(r"--[^\n]*|/\*.*?\*/|'(?:[^']|'')*'", re.DOTALL)


def has_aggregate_keywords(query: str | None) -> bool:
    """True when ``query`` aggregates (COUNT/SUM/AVG/MIN/MAX/GROUP BY ...), ignoring comments
    and string literals."""
    if not query:
        return False
    return bool(_AGGREGATE.search(_NOISE.sub(" ", query)))


def generate_followups(
    query: str | None, columns: Sequence[str], row_count: int, *, seed: int | None = None, k: int = 3,
    result: Any = None, dialect: str | None = None, viz_type: str | None = None,
) -> list[str]:
    """Up to ``k`` follow-up questions for an answer to ``query`` with these columns and rows
    (with ``result``: only those that fit it, module docstring)."""
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    if result is not None:
        pool = fitting_followups(result, query=query, dialect=dialect, viz_type=viz_type)
        random.Random(seed).shuffle(pool)
        return pool[:k]
    pool = list(FOLLOWUP_TEMPLATES)
    if has_aggregate_keywords(query):
        pool.extend(AGGREGATE_FOLLOWUPS)
    if row_count > 1 and len(columns) >= 2:
        pool.append(f"Sort by {columns[-1]} descending")
    random.Random(seed).shuffle(pool)
    return pool[:k]


_COARSER = {"day": ("month", "Break this down by month"), "month": ("quarter", "Break this down by quarter"),
            "quarter": ("year", "Break this down by year")}


def _sorted_descending(result: Any, index: int) -> bool:
    from baton.viz.profile import to_number

    values = [to_number(row[index]) for row in result.rows[:5000]]
    return all(a is not None and b is not None and a >= b for a, b in zip(values, values[1:]))


def _sorted_ascending(result: Any, index: int) -> bool:
    from baton.viz.profile import to_number

    raw = [row[index] for row in result.rows[:5000]]
    numbers = [to_number(v) for v in raw]
    if all(n is not None for n in numbers):
        return all(a <= b for a, b in zip(numbers, numbers[1:]))  # type: ignore[operator]
    text = [str(v).lower() if v is not None else "" for v in raw]
    return text == sorted(text)


def fitting_followups(result: Any, *, query: str | None = None, dialect: str | None = None, viz_type: str | None = None) -> list[str]:
    """Every follow-up the LLM-free follow-ups can answer on ``result`` (module docstring)."""
    from baton.followup_sql import aggregate_of
    from baton.viz.choose import fit
    from baton.viz.profile import profile_result
    from baton.viz.spec import Layout

    rows = result.rows
    if not rows or not result.columns:
        return []
    profile = profile_result(result.columns, rows, result.column_types, limit=5000)
    t, m, d = profile.temporal, profile.measures, profile.dimensions
    pool: list[str] = []
    for kind, text in (("pie", "Show this as a pie chart"), ("bar", "Show this as a bar chart"), ("line", "Show this as a line chart")):
        if kind != viz_type and (viz_type in ("line", "bar", "pie", "table") or kind == "pie") and isinstance(fit(kind, profile, rows), Layout):
            pool.append(text)
    if not m:
        return pool
    if profile.row_count > 5:
        pool.append("Show only the top 5 results")
    elif profile.row_count > 3:
        pool.append("Show only the top 3 results")
    last = m[-1]
    if profile.row_count > 1 and not _sorted_descending(result, last.index):
        pool.append(f"Sort by {last.source} descending")
    elif profile.row_count > 1 and not _sorted_ascending(result, last.index):
        pool.append(f"Sort by {last.source} ascending")
    label = next(iter((*d, *t)), None)
    if profile.row_count > 1 and label is not None and not _sorted_ascending(result, label.index):
        pool.append(f"Sort by {label.source}")
    additive = [c for c in m if c.additive and c.maximum]
    if profile.row_count > 1 and len(d) + len(t) == 1 and additive and "share_pct" not in result.columns:
        pool.append("Show percentage breakdown")
    if query and len(t) == 1 and t[0].time_unit in _COARSER and len(d) <= 1:
        if all(aggregate_of(query, dialect, c.source) is not None for c in m):
            pool.append(_COARSER[t[0].time_unit][1])
    compared = any(str(c).startswith(("previous_", "change_")) for c in result.columns)
    if query and len(t) == 1 and t[0].time_unit in ("year", "quarter", "month", "day") and len(d) <= 1 and profile.row_count > 1 \
            and not compared:
        pool.append("Compare with the previous period")
    if profile.row_count > 1 and len(pool) < 3 and viz_type not in (None, "table", "text"):
        pool.append("Show this as a table")  # always answerable: the rows as they are
    return pool
