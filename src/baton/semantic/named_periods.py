"""The periods a question names: months and quarters paired with their years, ranges expanded.

"March 2025", "Q3 and Q4 2025", "from March to June 2025", "2024 and 2025": a month or
quarter takes the year next to it, or the question's only year; one without a year (and a
relative period, "last year") is handed back as needing one, for the parser to ask. It is its
own module because the pairing and expansion rules are one decision that two readers share:
the question parser reads a whole question's periods with them, and the follow-up editor
("in Q3 2025 instead") expands the same months, quarters and ranges.
"""

from __future__ import annotations

from baton.semantic.lexicon import Sense
from baton.semantic.periods import Period
from baton.semantic.query import SemanticQueryError


def named_periods(meaningful: list[Sense], problems: list[str]) -> tuple[list[Period], list[Sense]]:
    """The periods named, and the months or quarters that lack their year (and relative
    periods: "last year"); what cannot be read is added to ``problems``."""
    years = [(i, s) for i, s in enumerate(meaningful) if s.kind == "year"]
    parts = [(i, s) for i, s in enumerate(meaningful) if s.kind in ("month", "quarter", "range")]
    used: set[int] = set()
    periods: list[Period] = []
    needs_year: list[Sense] = [s for s in meaningful if s.kind == "relative"]
    for i, part in parts:
        year = None
        for j in (i + 1, i - 1):
            if 0 <= j < len(meaningful) and meaningful[j].kind == "year" and j not in used:
                year = meaningful[j].number
                used.add(j)
                break
        if year is None:
            free = [(j, s) for j, s in years if j not in used]
            if len(free) == 1 and len(parts) == 1:
                year = free[0][1].number
                used.add(free[0][0])
            elif not free:
                needs_year.append(part)
                continue
            else:
                problems.append("the question names several years and months: say which month of which year")
                continue
        try:
            periods += expand_period(part, year)
        except SemanticQueryError as exc:
            problems.append(str(exc))
    periods += [Period.parse(str(s.number)) for j, s in years if j not in used]
    if len({p.grain for p in periods}) > 1:
        problems.append("the question mixes whole years with months or quarters")
    return list(dict.fromkeys(periods)), needs_year


def expand_period(part: Sense, year: int) -> list[Period]:
    """A month, quarter or range of them (``part``) in ``year``, as periods."""
    if part.kind == "month":
        return [Period.parse(f"{year}-{part.number:02d}")]
    if part.kind == "quarter":
        return [Period.parse(f"{year}-Q{part.number}")]
    (kind, first), (_, last) = part.extra
    if last < first:
        raise SemanticQueryError("a range runs forwards (from March to June)")
    if kind == "month":
        return [Period.parse(f"{year}-{m:02d}") for m in range(first, last + 1)]
    return [Period.parse(f"{year}-Q{q}") for q in range(first, last + 1)]
