"""Answering inside a workspace: history in, answer out, the turn persisted.

Shared by the JSON endpoint, the SSE endpoint, the OpenAI-compatible endpoint and the CLI,
so every surface gives the same answer for the same question.
"""

from __future__ import annotations

import asyncio
import logging
from typing import AsyncIterator

from baton.agents import AgentContext
from baton.events import NULL_TRACKER, Event, WorkflowTracker
from baton.response import AIMessage
from baton.server.followups import answer_followup
from baton.server.sessions import history_of
from baton.server.workspace import Workspace

log = logging.getLogger(__name__)


async def _prepare(ws: Workspace, question: str, session_id: str | None):
    """(session id, chat history, previous answer), reading the session's turns once."""
    if session_id is None:
        return await ws.sessions.create(ws.name, question), [], None
    turns = await ws.sessions.turns(ws.name, session_id)  # raises SessionNotFound
    return session_id, history_of(turns), (turns[-1].answer if turns else None)


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
        ws.name, meta.get("mode") or meta.get("followup"), meta.get("routed_to") or meta.get("agents_consulted"),
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


async def answer(ws: Workspace, question: str, session_id: str | None = None, *, tracker: WorkflowTracker | None = None) -> AIMessage:
    session_id, history, previous = await _prepare(ws, question, session_id)
    message = await _followup(ws, question, session_id, previous, tracker)
    if message is None:
        message = await ws.orchestrator.ask(question, session_id=session_id, chat_history=history, tracker=tracker, workspace=ws.name)
    await ws.sessions.append(ws.name, session_id, question, message)
    await _remember(ws, message, session_id)
    _log(ws, message)
    return message


async def answer_stream(ws: Workspace, question: str, session_id: str | None = None, *,
                        tracker: WorkflowTracker | None = None) -> AsyncIterator[Event | AIMessage]:
    """Every event as it happens, then the final answer (already persisted). ``tracker``
    also receives every event (observability)."""
    session_id, history, previous = await _prepare(ws, question, session_id)
    message = await _followup(ws, question, session_id, previous, tracker)
    if message is not None:
        await ws.sessions.append(ws.name, session_id, question, message)
        yield Event("followup", {"kind": message.metadata.get("followup")})
        yield message
        return
    async for item in ws.orchestrator.ask_stream(question, session_id=session_id, chat_history=history, workspace=ws.name, tracker=tracker):
        if isinstance(item, AIMessage):
            await ws.sessions.append(ws.name, session_id, question, item)
            await _remember(ws, item, session_id)
            _log(ws, item)
        yield item
