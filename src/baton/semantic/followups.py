"""Follow-ups of a semantic answer as edits of its semantic query, not SQL string surgery.

When the previous answer came from the semantic layer (``metadata["semantic_query"]``), a
follow-up made only of edit words is applied to that query and the result compiled afresh:

| follow-up                          | edit                                                        |
|------------------------------------|-------------------------------------------------------------|
| "by quarter instead", "yearly"     | the time grain (time added to the breakdown if absent)      |
| "by product", "by city instead"    | a breakdown added ("instead": replaces the other dimensions) |
| "only Epson", "just printers"      | that dimension filtered to the value(s) (replacing its filter) |
| "for 2024 instead", "in Q3 2025"   | the periods replaced                                        |
| "compare with 2024", "vs 2023"     | the period added, shown side by side (by year)              |
| "top 5", "bottom 3 by cost"        | ranked by the (named) metric, limited                       |
| "add costs", "and profit"          | a metric added ("instead": replaces the metrics)            |

Anything else — an unknown word, a chart request, "compare with the previous period", a
complete new question (a metric named without "add"/"instead") — is not an edit: ``None``,
and the other follow-ups (``baton.workspace.followups``) or the orchestrator answer it.
Readings that disagree are not guessed between (``None`` too). An edit that is understood but
that the model cannot answer ("add costs" to revenue by product) is answered with the reason,
and the previous semantic query is kept (the next follow-up edits it still).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from baton.phrasing import raw_words
from baton.semantic.lexicon import Sense
from baton.semantic.model import TIME
from baton.semantic.query import Period, SemanticQuery, SemanticQueryError

CUES = frozenset("""instead only just compare comparison vs versus against add also plus with and break down this it that same
    but show now rather switch change make them those these the a an to of for in by per each please let me see what about how
    give list display all""".split())
REPLACE = frozenset({"instead", "rather", "switch", "change"})
ADD = frozenset({"add", "also", "plus", "with", "and"})
COMPARE = frozenset({"compare", "comparison", "vs", "versus", "against"})
ONLY = frozenset({"only", "just"})


def _layer(orchestrator: Any) -> Any:
    """The semantic agent and its layer; else an SQL specialist the layer is attached to
    (its answers are then named for it: the semantic agent is preferred, so a follow-up is
    answered under the name of the agent that answered before it)."""
    for attribute in ("layer", "semantic"):
        for tool in orchestrator.agent_tools.values():
            layer = getattr(tool.agent, attribute, None)
            if layer is not None and hasattr(layer, "compile"):
                return tool.agent, layer
    return None, None


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


async def semantic_followup(orchestrator: Any, previous: Any, question: str, context: Any) -> Any:
    """The follow-up's answer (an ``AIMessage``) when it edits the previous semantic query, else None."""
    from baton.semantic.agent import SemanticAgent

    saved = previous.meta.get("semantic_query") if previous is not None else None
    if not isinstance(saved, dict):
        return None
    agent, layer = _layer(orchestrator)
    if layer is None:
        return None
    try:
        before = layer.resolve_values(SemanticQuery.from_dict(saved)).check(layer.model)
    except SemanticQueryError:
        return None
    parser = await layer.ready()
    try:
        edited = edit(before, question, parser)
    except SemanticQueryError as exc:  # an edit the model cannot answer: say why, keep the previous answer
        from baton.response import AIMessage, ResponseType

        reason = str(exc)
        return AIMessage(content=f"{reason[0].upper()}{reason[1:]}, so the previous answer stands.", input=question,
                         response_type=ResponseType.TEXT,
                         metadata={"followup": "semantic_edit_refused", "based_on": previous.turn_id, "llm_calls": 0,
                                   "mode": "direct", "semantic_query": before.to_dict()})
    if edited is None:
        return None
    runner = agent if isinstance(agent, SemanticAgent) else SemanticAgent(layer, name=getattr(agent, "name", None))
    result = await runner.answer(context.derive(user_question=question), question, edited,
                                 extra={"followup": "semantic_edit", "based_on": previous.turn_id,
                                        "semantic_query_before": before.to_dict()})
    message = result.ai_message
    if message is None:
        from baton.response import AIMessage, ResponseType

        message = AIMessage(content=result.result, error=result.error, error_code=result.error_type,
                            response_type=ResponseType.ERROR, metadata={"followup": "semantic_edit", "llm_calls": 0})
    message.metadata.setdefault("routed_to", runner.name)
    _retitle(message, edited.describe(layer.model))
    return message


def _retitle(message: Any, said: str) -> None:
    """The edited answer's own title, what its query now is ("Revenue by quarter; where time
    in 2025"), never the follow-up's words ("Break this down by quarter"). The chart spec
    may be shared with the presentation cache, so it is replaced, never edited in place."""
    title = f"{said[0].upper()}{said[1:]}" if said else ""
    if not title:
        return
    message.metadata["title"] = title
    config = message.viz_config
    if isinstance(config, dict) and isinstance(config.get("title"), dict):
        message.viz_config = {**config, "title": {**config["title"], "text": title if len(title) <= 90 else title[:89].rstrip() + "…"}}


__all__ = ["edit", "semantic_followup"]
