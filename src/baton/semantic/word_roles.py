"""What a word's neighbours say it does in a question, beyond what it names (``parser.py``):

- ``counted``: "how many tracks were sold": the words after "how many" are what is counted,
  never a breakdown;
- ``names_value_type``: "the Rock genre": a dimension word next to one of its own values
  names the value's type, not a breakdown;
- ``names_period_grain``: "the month of March 2025", "the year 2025": a grain word next to
  its own period names the period's kind, not a grouping.
"""

from __future__ import annotations

from baton.semantic.lexicon import Sense

_PERIOD_KINDS = {"month": ("month", "range"), "quarter": ("quarter",), "year": ("year",)}


def counted(seq: tuple[Sense, ...], sense: Sense) -> bool:
    i = seq.index(sense)
    return i >= 2 and [s.name.lower() for s in seq[i - 2:i] if s.kind == "filler"] == ["how", "many"]


def names_value_type(meaningful: list[Sense], index: int) -> bool:
    sense = meaningful[index]
    return any(n.kind == "value" and n.name == sense.name for n in _neighbours(meaningful, index))


def names_period_grain(meaningful: list[Sense], index: int) -> bool:
    kinds = _PERIOD_KINDS.get(meaningful[index].name, ())
    return any(n.kind in kinds for n in _neighbours(meaningful, index))


def _neighbours(meaningful: list[Sense], index: int) -> list[Sense]:
    return [meaningful[j] for j in (index - 1, index + 1) if 0 <= j < len(meaningful)]
