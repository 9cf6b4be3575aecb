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
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence

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
    query: str | None, columns: Sequence[str], row_count: int, *, seed: int | None = None, k: int = 3
) -> list[str]:
    """Up to ``k`` follow-up questions for an answer to ``query`` with these columns and rows."""
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    pool = list(FOLLOWUP_TEMPLATES)
    if has_aggregate_keywords(query):
        pool.extend(AGGREGATE_FOLLOWUPS)
    if row_count > 1 and len(columns) >= 2:
        pool.append(f"Sort by {columns[-1]} descending")
    random.Random(seed).shuffle(pool)
    return pool[:k]
