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

from typing import Any

from baton.semantic.edits import edit
from baton.semantic.query import SemanticQuery, SemanticQueryError


async def semantic_followup(agent: Any, layer: Any, previous: Any, question: str, context: Any) -> Any:
    """The follow-up's answer (an ``AIMessage``) when it edits the previous semantic query, else
    None. ``agent`` and ``layer``: the workspace's semantic agent and its layer, else an SQL
    specialist the layer is attached to (``Catalog.semantic_answerer``: the semantic agent is
    preferred, so a follow-up is answered under the name of the agent that answered before it)."""
    from baton.semantic.agent import SemanticAgent

    saved = previous.meta.get("semantic_query") if previous is not None else None
    if not isinstance(saved, dict):
        return None
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
        from baton.agents.failures import code_of_result
        from baton.response import AIMessage

        message = AIMessage.failed(code_of_result(result.error_type, result.metadata), result.error or result.result, result.result,
                                   metadata={"followup": "semantic_edit", "llm_calls": 0})
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
