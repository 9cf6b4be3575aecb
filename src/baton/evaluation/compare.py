"""Execution accuracy: is the produced result set the expected one?

Equivalence, as text-to-SQL evaluation defines it and a user checking by eye would:

- column names never matter and column order does not either: the produced columns may be
  any permutation of the expected ones (found by matching each column's values);
- the number of columns must match: an answer with an extra column is a different answer;
- row order matters only when the gold query orders (an ORDER BY on its outermost query,
  ``gold_orders``) or the golden question says ``ordered: true``; otherwise rows are
  compared as a multiset;
- duplicates count: ``[a, a, b]`` is not ``[a, b]`` (a DISTINCT the gold query lacks is wrong);
- numbers compare within the question's ``Tolerance`` (two integers exactly, within its
  absolute part only, so 64-bit ids never round together); an integer equals the same float
  (``3 == 3.0``), ``Decimal`` is a number, booleans are 0/1; dates and times compare by ISO
  text (so a PostgreSQL ``date`` equals SQLite's ``'2025-01-31'``); bytes by hex; NULL
  equals only NULL; text is compared exactly (``'3'`` is not ``3``).

Decisions (the issue was silent):
- When ordered, ties are not forgiven: rows must come in the gold order exactly, as in
  Spider's evaluation. A gold query that orders by a non-unique key should say
  ``ordered: false``.
- Column matching tries at most ``MAX_PERMUTATIONS`` assignments; past that the answer is
  judged unequal with that reason rather than searched for minutes.
"""

from __future__ import annotations

import datetime as dt
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from baton.evaluation.golden import Tolerance

MAX_PERMUTATIONS = 2_000
MAX_GREEDY_ROWS = 3_000


@dataclass(frozen=True, slots=True)
class Comparison:
    """The verdict, and in words why not when unequal."""

    equal: bool
    reason: str = ""


def gold_orders(sql: str, dialect: str | None = None) -> bool:
    """Whether the outermost query of ``sql`` has an ORDER BY (an ORDER BY inside a
    subquery or a window does not order the result). Unparseable SQL: ``False``."""
    import sqlglot
    from sqlglot import exp

    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except Exception:
        return False
    while isinstance(tree, exp.Subquery):  # (SELECT ... ORDER BY ...)
        if tree.args.get("order"):
            return True
        tree = tree.this
    return bool(tree is not None and tree.args.get("order"))


def normalise(value: Any) -> Any:
    """One cell as a comparable scalar (module docstring)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, Decimal):
        return float(value) if value.is_finite() else str(value)
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    return str(value)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def cells_equal(a: Any, b: Any, tol: Tolerance) -> bool:
    if isinstance(a, int) and isinstance(b, int):  # exact arithmetic: no float rounding of big integers
        return abs(a - b) <= tol.abs
    if _is_number(a) and _is_number(b):
        return a == b or tol.close(float(a), float(b))
    return a == b and type(a) is type(b)


def _key(v: Any) -> tuple:
    """A sort key that groups equal-within-tolerance values together (numbers to 9
    significant digits), and orders values of different types consistently."""
    if v is None:
        return (0, 0)
    if _is_number(v):
        return (1, float(f"{float(v):.9g}"))
    return (2, str(v))


def rows_equal(a: Sequence[Any], b: Sequence[Any], tol: Tolerance) -> bool:
    return len(a) == len(b) and all(cells_equal(x, y, tol) for x, y in zip(a, b))


def _multiset_equal(expected: list[tuple], produced: list[tuple], tol: Tolerance) -> bool:
    if Counter(expected) == Counter(produced):
        return True
    key = lambda row: tuple(_key(v) for v in row)
    e, p = sorted(expected, key=key), sorted(produced, key=key)
    if all(rows_equal(x, y, tol) for x, y in zip(e, p)):
        return True
    if len(e) > MAX_GREEDY_ROWS:
        return False
    unmatched = list(p)  # values near a rounding boundary sorted apart: match greedily
    for row in e:
        for i, candidate in enumerate(unmatched):
            if rows_equal(row, candidate, tol):
                del unmatched[i]
                break
        else:
            return False
    return True


def _columns_compatible(e: list[Any], p: list[Any], tol: Tolerance) -> bool:
    return all(cells_equal(x, y, tol) for x, y in zip(sorted(e, key=_key), sorted(p, key=_key)))


def compare_results(expected: Sequence[Sequence[Any]], produced: Sequence[Sequence[Any]], *, ordered: bool,
                    tolerance: Tolerance | None = None) -> Comparison:
    """Whether ``produced`` is ``expected`` (module docstring); rows are sequences of cells."""
    tol = tolerance or Tolerance()
    exp_rows = [tuple(normalise(v) for v in row) for row in expected]
    got_rows = [tuple(normalise(v) for v in row) for row in produced]
    if len(exp_rows) != len(got_rows):
        return Comparison(False, f"{len(got_rows)} row(s), expected {len(exp_rows)}")
    width = len(exp_rows[0]) if exp_rows else None
    got_width = len(got_rows[0]) if got_rows else None
    if width != got_width:
        return Comparison(False, f"{got_width} column(s), expected {width}")
    if width is None:  # no rows on either side
        return Comparison(True)
    if any(len(r) != width for r in exp_rows) or any(len(r) != width for r in got_rows):
        return Comparison(False, "rows of different widths")
    exp_cols = [[r[i] for r in exp_rows] for i in range(width)]
    got_cols = [[r[i] for r in got_rows] for i in range(width)]
    candidates = [[j for j in range(width) if _columns_compatible(exp_cols[i], got_cols[j], tol)] for i in range(width)]
    for i, options in enumerate(candidates):
        if not options:
            return Comparison(False, "different values" if width == 1 else f"no produced column holds the values of expected column {i + 1}")
    tried = 0
    mapping: list[int] = []

    def search(i: int) -> bool | None:
        nonlocal tried
        if i == width:
            tried += 1
            reordered = [tuple(row[j] for j in mapping) for row in got_rows]
            if ordered:
                return all(rows_equal(x, y, tol) for x, y in zip(exp_rows, reordered))
            return _multiset_equal(exp_rows, reordered, tol)
        for j in candidates[i]:
            if j in mapping:
                continue
            mapping.append(j)
            found = search(i + 1)
            mapping.pop()
            if found or tried >= MAX_PERMUTATIONS:
                return found
        return False

    if search(0):
        return Comparison(True)
    if tried >= MAX_PERMUTATIONS:
        return Comparison(False, f"no match found within {MAX_PERMUTATIONS} column orders")
    if ordered and _any_order_matches(exp_rows, got_rows, candidates, tol):
        return Comparison(False, "the right rows in the wrong order")
    return Comparison(False, "different values")


def _any_order_matches(exp_rows: list[tuple], got_rows: list[tuple], candidates: list[list[int]], tol: Tolerance) -> bool:
    """For the failure's reason only: would the rows match if order did not matter?"""
    import itertools

    for count, perm in enumerate(itertools.product(*candidates)):
        if count >= 200:
            return False
        if len(set(perm)) == len(perm) and _multiset_equal(exp_rows, [tuple(r[j] for j in perm) for r in got_rows], tol):
            return True
    return False
