"""Questions a semantic model answers, said as a person would ask them.

The empty page and the no-model fallback list them ("what can I ask here?"), so each one
must answer itself when clicked: every question is rendered from a semantic query
(``render.py``) and kept only when the parser reads it back to exactly that query. The
queries are the simplest that show what a model holds: a metric's total (``How many
customers`` for a count) and one breakdown of it — by month, by its first categorical
dimension or a top 5 of its label, in turn — for the metrics a person described first.
"""

from __future__ import annotations

from baton.semantic.model import TIME, SemanticModel
from baton.semantic.parser import QuestionParser
from baton.semantic.query import SemanticQuery, SemanticQueryError
from baton.semantic.render import render_question
from baton.semantic.words import TERMS

MAX_EXAMPLES = 6
_TERMS = frozenset(term.replace(" ", "_") for term in TERMS)


def _candidates(model: SemanticModel, metric: str) -> list[SemanticQuery]:
    measures = model.measures_of(metric)
    grouped = [d.name for d in model.dimensions if not d.shown_with and d.index_values and all(model.reachable(m, d.name) for m in measures)]
    out = [SemanticQuery((metric,))]
    if all(model.reachable(m, TIME) for m in measures):
        out.append(SemanticQuery((metric,), (TIME,), "month"))
    if grouped:
        out.append(SemanticQuery((metric,), (grouped[0],)))
    labelled = [d.name for d in model.dimensions if d.shown_with and all(model.reachable(m, d.name) for m in measures)]
    for name in (labelled or grouped)[:1]:
        out.append(SemanticQuery((metric,), (name, *model.dimension(name).shown_with), order=((metric, True),), limit=5))
    return out


def _counts(model: SemanticModel, metric: str) -> bool:
    found = model.metric(metric)
    return found.type == "simple" and model.measure(found.measure or "").agg in ("count", "count_distinct")


def metric_examples(model: SemanticModel, parser: QuestionParser, limit: int = MAX_EXAMPLES) -> list[str]:
    """Up to ``limit`` questions the model answers (module docstring), each checked to read back."""
    per_metric: list[list[str]] = []
    for metric in sorted(model.metrics, key=lambda m: _rank(model, m.name)):
        said: list[str] = []
        for query in _candidates(model, metric.name):
            try:
                checked = query.check(model)
            except SemanticQueryError:
                continue
            text = None
            if _counts(model, metric.name) and not checked.by and not checked.where:
                asked = f"How many {metric.title}"
                text = asked if parser._reads_back(asked, checked) else None
            text = text or render_question(model, checked, parser._reads_back)
            if text is not None and text not in said:
                said.append(text)
        if said:
            per_metric.append(said)
    out: list[str] = []
    for i, said in enumerate(per_metric):  # each metric's total, and one breakdown (by time, a dimension, a top 5 in turn)
        picked = [said[0], said[1 + i % (len(said) - 1)]] if len(said) > 1 else said
        out += picked[: limit - len(out)]
        if len(out) >= limit:
            break
    return out


def _rank(model: SemanticModel, metric: str) -> int:
    """Business terms first, then metrics a person described (a synonym, a description), counts of what has a
    time, the rest."""
    found = model.metric(metric)
    if metric in _TERMS:  # revenue, profit, cost ...: what a business asks about first
        return -1
    if _counts(model, metric):
        return 1 if all(model.reachable(m, TIME) for m in model.measures_of(metric)) else 2
    return 0 if found.synonyms or found.description else 2

__all__ = ["MAX_EXAMPLES", "metric_examples"]
