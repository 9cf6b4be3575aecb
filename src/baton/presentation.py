"""Dress a data answer for people: chart, follow-up suggestions, insights.

``present(message)`` is the one call a specialist makes on an ``AIMessage`` that carries
``results``. It returns a copy with ``viz_type``/``viz_config`` (``baton.viz``),
``suggested_followups`` (``baton.suggest``) and ``insights`` (``baton.insights``) filled in;
the message passed in is never changed.

The presentation layer depends only on the protocol layer (``baton.response``, plus
``baton.errors``), never on agents, specialists, the loop or the memory, so any specialist
may call it without an import cycle.

Decisions:

- A ``viz_type`` already on the message (other than the default ``"text"``), e.g. one an LLM
  proposed, is treated as a request: kept when it fits the data, corrected (to bar, else
  table) when it does not. The spec itself is always rebuilt from ``results``: a spec that
  came from a model is untrusted input (it could name an external data URL) and may not
  match the rows.
- The chart's title is the user's question (``message.input``) when there is one.
- Follow-ups use ``message.query`` (the SQL), the result and the chart drawn, so only those
  that fit this result and can be answered are offered (``baton.suggest``); ``seed``
  makes them reproducible.
"""

from __future__ import annotations

from baton.insights import find_insights
from baton.response import AIMessage
from baton.suggest import generate_followups
from baton.viz import choose_chart


def present(message: AIMessage, *, seed: int | None = None) -> AIMessage:
    """A copy of ``message`` with chart, follow-ups and insights; unchanged if it has no results."""
    result = message.results
    if result is None:
        return message
    requested = message.viz_type if message.viz_type and message.viz_type != "text" else None
    choice = choose_chart(result, question=message.input, requested=requested)
    return message.copy(
        viz_type=choice.viz_type,
        viz_config=choice.viz_config,
        suggested_followups=generate_followups(message.query, result.columns, result.row_count, seed=seed, result=result,
                                               dialect=message.metadata.get("dialect"), viz_type=choice.viz_type),
        insights=find_insights(result),
    )
