"""How the orchestrator turns its loop's outcome into ONE rich answer (seed 000).

- pass-through: exactly one specialist call was made, it succeeded, and its answer has rich content
  (data, artifacts, images or code): a COPY of the specialist's message, re-stamped with the
  orchestrator's ids and ``metadata`` {orchestrated, mode="passthrough", routed_to}. The
  specialist's own object is never mutated (its fields are never reassigned or appended to;
  the rows and chart spec are shared, since no one edits them in place).
- synthesis: the routing model's text, with every specialist's data merged as
  ``{agent_name: data}``. A specialist called twice in one request gets distinct keys in call
  order: ``name``, ``name#2``, ``name#3`` — each value stays one dataset, so the page renders
  one tab per key and no dataset is lost; each dataset's chart spec is kept under the same
  key in ``metadata["charts"]``. Artifacts are tagged with ``source_agent``;
  source documents are concatenated.
- direct: no specialist was called: the model's answer as is.
"""

from __future__ import annotations

from typing import Any

from baton.agents.result import AgentResult
from baton.response import AIMessage


def is_passthrough(results: list[AgentResult]) -> bool:
    """Exactly one specialist call was made, it succeeded, and its answer is rich. When a
    second call failed, synthesis keeps the model's explanation and the typed errors, which a
    pass-through of the one success would silently drop."""
    return len(results) == 1 and results[0].ok and results[0].ai_message is not None and results[0].ai_message.has_rich_content


def passthrough(result: AgentResult, *, input: str, session_id: str | None, turn_id: str, extra_metadata: dict[str, Any]) -> AIMessage:
    """A copy of the specialist's answer, re-stamped. The copy is shallow below the top
    level (its own metadata dict and its own lists; the rows themselves shared): nothing on
    the answer path changes a row or a chart spec in place, and deep-copying every row of
    every pass-through answer was a measurable share of a question's CPU (issue 13)."""
    specialist = result.ai_message
    assert specialist is not None
    return specialist.shallow_copy(
        session_id=session_id, turn_id=turn_id, input=input,
        metadata={**specialist.metadata, **extra_metadata, "orchestrated": True, "mode": "passthrough",
                  "routed_to": result.agent_name})


def synthesis(text: str, results: list[AgentResult], *, extra_metadata: dict[str, Any]) -> AIMessage:
    message = AIMessage(content=text)
    merged: dict[str, Any] = {}
    charts: dict[str, Any] = {}
    seen: dict[str, int] = {}
    consulted: list[str] = []
    for result in results:
        if result.agent_name not in consulted:
            consulted.append(result.agent_name)
        specialist = result.ai_message
        if not result.ok or specialist is None:
            continue
        seen[result.agent_name] = seen.get(result.agent_name, 0) + 1
        key = result.agent_name if seen[result.agent_name] == 1 else f"{result.agent_name}#{seen[result.agent_name]}"
        if specialist.data is not None:
            merged[key] = specialist.data
            if specialist.viz_config:
                charts[key] = specialist.viz_config
        message.artifacts.extend({**a, "source_agent": key} for a in specialist.artifacts)
        message.images.extend(specialist.images)
        message.source_documents.extend(specialist.source_documents)
        message.insights.extend({**i, "source_agent": key} for i in specialist.insights)
    if merged:
        message.data = merged
    warnings = [r.ai_message.staleness_warning for r in results if r.ok and r.ai_message is not None and r.ai_message.staleness_warning]
    if warnings:
        message.staleness_warning = " ".join(dict.fromkeys(warnings))
    message.metadata = {**extra_metadata, "orchestrated": True, "mode": "synthesis", "agents_consulted": consulted}
    if charts:
        message.metadata["charts"] = charts  # each dataset's own chart, keyed like ``data``
    errors = [{"agent": r.agent_name, "error_type": r.error_type, "error": r.error} for r in results if r.status == "error"]
    if errors:
        message.metadata["agent_errors"] = errors
    return message
