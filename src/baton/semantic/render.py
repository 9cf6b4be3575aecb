"""A semantic query said as a question, for the ask-back's clickable suggestions.

A suggestion is only useful if clicking it answers exactly the reading it stands for, so
each wording is checked by reading it back (``reads_back``: the parser must return exactly
this query); wordings are tried from the most natural to the most explicit:

1. metric labels, bare values: "Revenue by quarter for Epson in 2025";
2. values with their dimension: "Revenue by quarter for business unit Epson in 2025";
3. metric and dimension names as the model spells them: "event profit by city";
4. each of the metric's synonyms in turn ("net profit" when "profit" alone is ambiguous).

None reads back -> None (the reading is not offered).
"""

from __future__ import annotations

from collections.abc import Callable

from baton.semantic.model import TIME, SemanticModel
from baton.semantic.periods import period_words
from baton.semantic.query import SemanticQuery

ReadsBack = Callable[[str, SemanticQuery], bool]


def _join(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _wording(model: SemanticModel, query: SemanticQuery, qualify: bool, names: bool, synonym: int = -1) -> str:
    def metric(name: str) -> str:
        m = model.metric(name)
        if synonym >= 0 and m.synonyms:
            return m.synonyms[min(synonym, len(m.synonyms) - 1)]
        return name.replace("_", " ") if names else m.title

    def dimension(name: str) -> str:
        if name == TIME:
            return query.grain or "month"
        if query.time_group(name) is not None:  # metric_time__extract_dow, listing__ds__month
            return name.replace("__", " ").replace("_", " ")
        d = model.dimension(name)
        return name.replace("_", " ") if names else d.title

    metrics = _join([metric(m) for m in query.metrics])
    grouped = [b for b in query.by if not any(b == d and len(v) > 1 for d, v in query.where)]
    if TIME in grouped and len(query.periods) > 1 and query.grain == query.periods[0].grain:
        grouped = [b for b in grouped if b != TIME]
    lead = ""
    first_order = query.order[0] if query.order else None
    if query.limit is not None and first_order is not None:
        direction = "Top" if first_order[1] else "Bottom"
        lead = f"{direction} {query.limit} "
        text = f"{lead}{_join([dimension(b) for b in grouped]) or metrics} by {metrics}" if grouped else f"{lead}{metrics}"
    else:
        text = metrics + (" by " + _join([dimension(b) for b in grouped]) if grouped else "")
        default_desc = bool(query.by) and TIME not in query.by
        if first_order is not None and first_order[0] in query.metrics:
            if first_order[1] and not default_desc:
                text = "Highest " + text
            elif not first_order[1]:
                text = "Lowest " + text
    filters = []
    for name, values in query.where:
        said = _join(list(values)) if len(values) > 1 or not qualify else f"{dimension(name)} {values[0]}"
        if len(values) > 1 and qualify:
            said = dimension(name) + " " + said
        filters.append(said)
    if filters:
        text += " for " + " and ".join(filters)
    if query.periods:
        text += " in " + _join([period_words(p.label) for p in query.periods])
    return text[0].upper() + text[1:]


def render_question(model: SemanticModel, query: SemanticQuery, reads_back: ReadsBack) -> str | None:
    """The most natural wording of ``query`` that reads back to it (module docstring)."""
    tried = []
    most = max((len(model.metric(m).synonyms) for m in query.metrics), default=0)
    variants = [(q, n, -1) for q, n in ((False, False), (True, False), (False, True), (True, True))]
    variants += [(q, False, k) for k in range(min(most, 6)) for q in (False, True)]
    for qualify, names, synonym in variants:
        text = _wording(model, query, qualify, names, synonym)
        if text in tried:
            continue
        tried.append(text)
        if reads_back(text, query):
            return text
    return None


__all__ = ["render_question"]
