"""Comparing an answer's rows with gold rows, for the semantic-layer question set.

Rows match when they are the same multiset (in the same order when the gold is ordered):
text equal, numbers equal within half a cent (engines and Python round a sum of floats a
hair differently; 0.005 is below every metric's own rounding), ``Decimal`` as a number.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

CASES = Path(__file__).resolve().parent / "data" / "semantic_questions.json"
TOLERANCE = 0.005


def load_cases() -> dict[str, Any]:
    return json.loads(CASES.read_text(encoding="utf-8"))


def _value(v: Any) -> Any:
    if isinstance(v, Decimal):
        return float(v)
    if isinstance(v, bool):
        return v
    if isinstance(v, int):
        return float(v)
    return v


def _key(row: Sequence[Any]) -> tuple:
    return tuple((0, round(v, 1)) if isinstance(v, float) else (1, str(v)) for v in row)


def same_value(a: Any, b: Any) -> bool:
    a, b = _value(a), _value(b)
    if isinstance(a, float) and isinstance(b, float):
        return abs(a - b) <= TOLERANCE
    return a == b


def rows_match(got: Sequence[Sequence[Any]], gold: Sequence[Sequence[Any]], *, ordered: bool = False) -> bool:
    got = [[_value(v) for v in row] for row in got]
    gold = [[_value(v) for v in row] for row in gold]
    if len(got) != len(gold) or any(len(a) != len(b) for a, b in zip(got, gold)):
        return False
    if not ordered:
        got, gold = sorted(got, key=_key), sorted(gold, key=_key)
    return all(same_value(a, b) for row_a, row_b in zip(got, gold) for a, b in zip(row_a, row_b))
