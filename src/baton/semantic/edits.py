"""Edits of a semantic query read from a follow-up's words ("by quarter instead", "only Epson",
"top 5"), and the edits worth offering; the table of what is read is in
``baton.semantic.followups``, which answers with them.

Pure: a query and the layer's parser in, a query out (or None: not an edit; or
``SemanticQueryError``: an edit the model cannot answer). Nothing here runs SQL, so the
semantic agent can ask it which edits to offer without importing the follow-up path.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from baton.phrasing import raw_words
from baton.semantic.lexicon import Sense
from baton.semantic.model import TIME
from baton.semantic.periods import Period
from baton.semantic.query import SemanticQuery, SemanticQueryError

CUES = frozenset("""instead only just compare comparison vs versus against add also plus with and break down this it that same
    but show now rather switch change make them those these the a an to of for in by per each please let me see what about how
    give list display all""".split())
REPLACE = frozenset({"instead", "rather", "switch", "change"})
ADD = frozenset({"add", "also", "plus", "with", "and"})
COMPARE = frozenset({"compare", "comparison", "vs", "versus", "against"})
ONLY = frozenset({"only", "just"})


def edit(previous: SemanticQuery, question: str, parser: Any) -> SemanticQuery | None:
    """The edited query, or None when ``question`` is not an edit (module docstring)."""
    words = raw_words(question)[:30]
    if not words:
        return None
    segmentations = parser._segmentations(words)
    if not segmentations:
        return None
    fewest = min(len(s) for s in segmentations)
    results, errors = set(), set()
    for seq in (s for s in segmentations if len(s) == fewest):
        try:
            results.add(_apply(previous, seq, parser))
        except SemanticQueryError as exc:
            errors.add(str(exc))
    edits = results - {None}  # a reading that changes nothing (a context word) does not compete with one that does
    if errors and not edits and len(errors) == 1:
        raise SemanticQueryError(errors.pop())  # understood as an edit, but the model cannot answer it
    if len(edits) != 1 or errors:
        return None
    return edits.pop()


def _apply(previous: SemanticQuery, seq: tuple[Sense, ...], parser: Any) -> SemanticQuery | None:
    model = parser.model
    cues = {s.name for s in seq if s.kind in ("filler", "unknown", "compare", "negation") and s.name in CUES}
    cues |= {s.name for s in seq if s.kind == "compare"}
    if any(s.kind in ("unknown", "negation", "relative") and s.name not in CUES for s in seq):
        return None
    meaningful = [s for s in seq if s.kind not in ("filler",) and not (s.kind == "unknown" and s.name in CUES)
                  and s.kind != "compare"]
    if not meaningful:
        return None
    replacing = bool(cues & REPLACE)
    query = previous
    metrics = [s.name for s in meaningful if s.kind == "metric"]
    if metrics:
        if not (cues & (REPLACE | ADD)):
            return None  # a metric named without "add" or "instead": a new question
        query = replace(query, metrics=tuple(metrics) if replacing else tuple(dict.fromkeys((*query.metrics, *metrics))), order=())
    grains = [s.name or "month" for s in meaningful if s.kind == "grain"]
    dims = [s.name for s in meaningful if s.kind == "dimension"]
    values: dict[str, list[str]] = {}
    for s in meaningful:
        if s.kind == "value":
            values.setdefault(s.name, []).append(s.value)
    dims = [d for d in dims if d not in values]  # "the Epson business unit": a qualifier
    if grains or dims:
        by = list(query.by)
        if replacing and dims:
            by = [b for b in by if b == TIME]
        elif replacing and TIME not in by:  # "by quarter instead" of by product: time replaces the breakdown
            by = []
        for d in dims:
            if d not in by:
                by.append(d)
        grain = query.grain
        if grains:
            grain = grains[0]
            if TIME not in by:
                by.insert(0, TIME)
        query = replace(query, by=tuple(by), grain=grain if TIME in by else None, order=())
    if values:
        where = dict(query.where)
        by = list(query.by)
        for dimension, listed in values.items():
            where[dimension] = tuple(dict.fromkeys(listed))
            if len(listed) == 1 and dimension in by:
                by.remove(dimension)
        query = replace(query, where=tuple(where.items()), by=tuple(by), order=())
    periods = _periods(meaningful)
    if periods is None:
        return None
    if periods:
        if cues & COMPARE or (cues & ADD and not replacing):
            merged = tuple(dict.fromkeys((*query.periods, *periods)))
            by, grain = list(query.by), query.grain
            if TIME not in by:
                by.append(TIME)
                grain = merged[0].grain
            query = replace(query, periods=merged, by=tuple(by), grain=grain, order=())
        else:
            query = replace(query, periods=tuple(periods), order=())
    ranking = [s for s in meaningful if s.kind == "direction"]
    numbers = [s.number for s in meaningful if s.kind == "number"]
    if ranking or numbers:
        if not ranking or len(numbers) > 1 or not query.by:
            return None
        metric = next((s.name for s in meaningful if s.kind == "metric"), query.metrics[0])
        query = replace(query, order=((metric, bool(ranking[0].number)),), limit=numbers[0] if numbers else None)
    elif query.limit is not None and query.by != previous.by:
        query = replace(query, limit=None)
    checked = query.check(model)
    return None if checked == previous else checked


def _periods(meaningful: list[Sense]) -> list[Period] | None:
    out: list[Period] = []
    years = [s.number for s in meaningful if s.kind == "year"]
    parts = [s for s in meaningful if s.kind in ("month", "quarter", "range")]
    if parts:
        if len(years) != 1:
            return None
        from baton.semantic.named_periods import expand_period

        for part in parts:
            out += expand_period(part, years[0])
        return out
    return [Period.parse(str(y)) for y in years]


def offers(query: SemanticQuery, parser: Any, limit: int = 3) -> list[str]:
    """Edits of ``query`` to offer beside the SQL follow-ups (``baton.viz.suggest``), for what only
    the model can do: a finer period ("Break this down by month" after by year: the rows to
    add up are not in the result) and time added to a single value. Each is kept only when
    ``edit`` reads it as an edit that the model can answer, so an offer is never refused."""
    candidates = []
    if TIME in query.by and query.grain in ("year", "quarter"):
        candidates += [f"Break this down by {g}" for g in ("quarter", "month") if g != query.grain and
                       (query.grain == "year" or g == "month")]
    elif TIME not in query.by:
        candidates += ["Break this down by month", "Break this down by quarter"]
    kept = []
    for text in candidates:
        try:
            edited = edit(query, text, parser)
        except SemanticQueryError:
            continue
        if edited is not None:
            kept.append(text)
    return kept[:limit]


__all__ = ["ADD", "COMPARE", "CUES", "ONLY", "REPLACE", "edit", "offers"]
