"""The one answer path: history in, answer out, the turn persisted, memory and logs fed.

Every surface adapts these two functions (the JSON and SSE endpoints, the OpenAI-compatible
endpoint, the CLI, notebooks), so the same question gets the same answer, the same
follow-up handling, the same insight memory and the same logs everywhere:

1. the conversation: a new session, or the turns of ``session_id`` (``SessionNotFound``
   for a session of another workspace, before anything runs);
2. a follow-up that refers to the previous answer ("Show this as a pie chart", "Show only
   the top 5") is answered without an LLM (``followups.py``); anything else goes to the
   orchestrator with the conversation as history;
3. the turn is stored, the answer's insights go to memory, one log line is written.

``answer_stream`` yields every event as it happens and then the answer, after step 3: a
client that saw the answer can continue the session at once. Steps 1-3 are the same for
both, follow-ups included.

``history`` is for callers that keep the conversation themselves (a chat client sending its
messages): it is the orchestrator's history when no session is given, and when its last
assistant message is one of this workspace's answers (found by the digest of its Markdown),
the turn joins that answer's session and a follow-up refers to that answer. ``previous``
lets a caller name the answer a follow-up refers to.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any, AsyncIterator

from baton.agents import AgentContext
from baton.events import NULL_TRACKER, Event, WorkflowTracker
from baton.messages import Message
from baton.response import AIMessage
from baton.workspace.followups import answer_followup
from baton.workspace.verified import annotate_answer
from baton.workspace.sessions import history_of

if TYPE_CHECKING:
    from baton.workspace.core import Workspace

log = logging.getLogger("baton.workspace")


async def _prepare(ws: Workspace, question: str, session_id: str | None, history: list[Message] | None,
                   previous: AIMessage | None):
    """(session id, chat history, previous answer), reading the session's turns once.
    A caller's own history whose last assistant message is one of this workspace's
    answers continues that answer's session (``SessionStore.find_reply``)."""
    if session_id is None and history:
        last = next((m for m in reversed(history) if m.role == "assistant" and m.content), None)
        found = await ws.sessions.find_reply(ws.name, last.content) if last is not None else None
        if found is not None:
            return found[0], list(history), previous or found[1]
    if session_id is None:
        return await ws.sessions.create(ws.name, question), list(history or ()), previous
    turns = await ws.sessions.turns(ws.name, session_id)  # raises SessionNotFound
    return session_id, history_of(turns), (turns[-1].answer if turns else previous)


async def _followup(ws: Workspace, question: str, session_id: str, previous: AIMessage | None,
                    tracker: WorkflowTracker | None) -> AIMessage | None:
    if previous is None:
        return None
    context = AgentContext(user_question=question, workspace=ws.name, tracker=tracker or NULL_TRACKER)
    message = await answer_followup(ws.orchestrator, previous, question, context)
    if message is not None:
        message.session_id = session_id
        message.input = question
    return message


def _log(ws: Workspace, message: AIMessage) -> None:
    meta = message.metadata
    log.info(
        "answered in workspace %s: mode=%s routed_to=%s llm_calls=%s fast_path=%s error=%s",
        ws.name, meta.get("followup") or meta.get("mode"), meta.get("routed_to") or meta.get("agents_consulted"),
        meta.get("llm_calls"), meta.get("fast_path"), message.error,
    )


async def _remember(ws: Workspace, message: AIMessage, session_id: str) -> None:
    """The answer's insights go to memory (new, or resurfaced when found again). Memory is
    advisory: a failure here is logged, never the answer's failure."""
    if ws.memory is None or not message.insights:
        return
    from baton.memory.bridge import remember_insights

    try:
        await asyncio.to_thread(remember_insights, ws.memory, ws.memory_scope(), message.insights, session_id=session_id)
    except Exception:
        log.warning("storing insights failed", exc_info=True)


async def _finish(ws: Workspace, question: str, session_id: str, message: AIMessage) -> AIMessage:
    message.session_id = session_id
    await annotate_answer(ws, message)  # "Did you mean", llm_calls with no model, verified-question use
    await ws.sessions.append(ws.name, session_id, question, message)
    await _remember(ws, message, session_id)
    _log(ws, message)
    return message


async def answer(ws: Workspace, question: str, session_id: str | None = None, *, history: list[Message] | None = None,
                 previous: AIMessage | None = None, tracker: WorkflowTracker | None = None, **context_fields: Any) -> AIMessage:
    tracker = ws.request_tracker(tracker)
    session_id, chat, previous = await _prepare(ws, question, session_id, history, previous)
    message = await _followup(ws, question, session_id, previous, tracker)
    if message is None:
        message = await ws.orchestrator.ask(question, session_id=session_id, chat_history=chat, tracker=tracker,
                                            workspace=ws.name, **context_fields)
    return await _finish(ws, question, session_id, message)


async def answer_stream(ws: Workspace, question: str, session_id: str | None = None, *, history: list[Message] | None = None,
                        previous: AIMessage | None = None, tracker: WorkflowTracker | None = None,
                        **context_fields: Any) -> AsyncIterator[Event | AIMessage]:
    """Every event as it happens, then the final answer (already persisted). The
    workspace's tracker and ``tracker`` also receive every event."""
    tracker = ws.request_tracker(tracker)
    session_id, chat, previous = await _prepare(ws, question, session_id, history, previous)
    message = await _followup(ws, question, session_id, previous, tracker)
    if message is not None:
        followup = Event("followup", {"kind": message.metadata.get("followup"), "session_id": session_id})
        if tracker is not None:
            tracker.emit(followup)
        yield followup
        yield await _finish(ws, question, session_id, message)
        return
    async for item in ws.orchestrator.ask_stream(question, session_id=session_id, chat_history=chat, workspace=ws.name,
                                                 tracker=tracker, **context_fields):
        if isinstance(item, AIMessage):
            item = await _finish(ws, question, session_id, item)
        yield item
