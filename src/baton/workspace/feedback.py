"""Feedback on one answer: thumbs and data verdicts, kept with the conversation and fed to
memory.

A verdict (``confirmed``, ``approximate``, ``rejected``) or a thumbs-down feeds the memory's
user-feedback cycle (benchmark / session note / learning, and a stale flag on what the
answer relied on); a thumbs-up is kept with the conversation only: liking an answer
verifies no data. A turn of another workspace is ``SessionNotFound``, the same as one that
does not exist.

Order: what memory would refuse (``InvalidRecordError``: a comment over the record limit, a
verdict without the text it needs) is refused before anything is stored, so a refused
feedback leaves no trace. When memory is down the feedback is still kept with the
conversation (``memory_unavailable: true`` in the reply): memory is advice, the
conversation is the record.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from baton.state.conversations import SessionNotFound

if TYPE_CHECKING:
    from baton.workspace.core import Workspace


async def give_feedback(ws: Workspace, turn_id: str, *, thumbs: str | None = None, verdict: str | None = None,
                        comment: str | None = None) -> dict[str, Any]:
    """Record the feedback; returns ``{"recorded": True, "memory": None | {...}}``. Raises
    ``SessionNotFound`` for an unknown turn and ``baton.memory.InvalidRecordError`` for
    feedback memory refuses."""
    from baton.memory import Feedback, record_feedback
    from baton.state.bulkheads import DependencyUnavailable
    from baton.workspace.advisory import read_memory

    found = await ws.sessions.find_turn(ws.name, turn_id)
    if found is None:
        raise SessionNotFound(turn_id)
    session_id, question, answer = found
    given = verdict
    verdict = verdict or ("thumbs_down" if thumbs == "down" else None)
    if verdict is None or ws.memory is None:
        await ws.sessions.add_feedback(ws.name, turn_id, thumbs, given, comment)
        return {"recorded": True, "memory": None}
    item = Feedback(
        question=question, verdict=verdict, sql=answer.query, connection_id=answer.meta.get("connection_id"),
        deviation=comment if verdict == "approximate" else None,
        correction=comment if verdict in ("rejected", "thumbs_down") else None, session_id=session_id,
    )
    try:
        outcome = await read_memory(ws, record_feedback, ws.memory_scope(), item)  # InvalidRecordError: nothing stored
    except DependencyUnavailable:
        await ws.sessions.add_feedback(ws.name, turn_id, thumbs, given, comment)
        return {"recorded": True, "memory": None, "memory_unavailable": True}
    await ws.sessions.add_feedback(ws.name, turn_id, thumbs, given, comment)
    return {"recorded": True, "memory": {"produced": outcome.produced, "record_id": outcome.result.record.id,
                                         "action": outcome.result.action, "flagged_stale": outcome.flagged_stale}}
