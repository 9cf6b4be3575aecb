"""Feedback on one answer: thumbs and data verdicts, kept with the conversation and fed to
memory.

A verdict (``confirmed``, ``approximate``, ``rejected``) or a thumbs-down feeds the memory's
user-feedback cycle (benchmark / session note / learning, and a stale flag on what the
answer relied on); a thumbs-up is kept with the conversation only: liking an answer
verifies no data. A turn of another workspace is ``SessionNotFound``, the same as one that
does not exist.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from baton.workspace.sessions import SessionNotFound

if TYPE_CHECKING:
    from baton.workspace.core import Workspace


async def give_feedback(ws: Workspace, turn_id: str, *, thumbs: str | None = None, verdict: str | None = None,
                        comment: str | None = None) -> dict[str, Any]:
    """Record the feedback; returns ``{"recorded": True, "memory": None | {...}}``. Raises
    ``SessionNotFound`` for an unknown turn and ``baton.memory.InvalidRecordError`` for
    feedback memory refuses."""
    from baton.memory import Feedback, record_feedback

    found = await ws.sessions.find_turn(ws.name, turn_id)
    if found is None:
        raise SessionNotFound(turn_id)
    session_id, question, answer = found
    await ws.sessions.add_feedback(ws.name, turn_id, thumbs, verdict, comment)
    verdict = verdict or ("thumbs_down" if thumbs == "down" else None)
    if verdict is None or ws.memory is None:
        return {"recorded": True, "memory": None}
    item = Feedback(
        question=question, verdict=verdict, sql=answer.query, connection_id=answer.metadata.get("connection_id"),
        deviation=comment if verdict == "approximate" else None,
        correction=comment if verdict in ("rejected", "thumbs_down") else None, session_id=session_id,
    )
    outcome = await asyncio.to_thread(record_feedback, ws.memory_scope(), item)
    return {"recorded": True, "memory": {"produced": outcome.produced, "record_id": outcome.result.record.id,
                                         "action": outcome.result.action, "flagged_stale": outcome.flagged_stale}}
