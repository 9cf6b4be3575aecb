"""Questions a semantic model answers, said as a person would ask them.

The empty page and the no-model fallback list them ("what can I ask here?"), so each one
must answer itself when clicked: every question is rendered from a semantic query
(``render.py``) and kept only when the parser reads it back to exactly that query. The
queries are the simplest that show what a model holds: each metric's total, by month, by
its first categorical dimension, and a top 5 of that dimension — counts and words first
(``How many customers``), then the others, one question per metric before any second one.
"""

from __future__ import annotations

from baton.semantic.model import TIME, SemanticModel
from baton.semantic.parser import QuestionParser
from baton.semantic.query import SemanticQuery, SemanticQueryError
from baton.semantic.render import render_question

MAX_EXAMPLES = 6


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
    for metric in model.metrics:
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
    for round_ in range(4):  # one question per metric, then a second one each ...
        for said in per_metric:
            if round_ < len(said) and len(out) < limit:
                out.append(said[round_])
    return out


__all__ = ["MAX_EXAMPLES", "metric_examples"]
