"""The one answer path: history in, answer out, the turn persisted, memory and logs fed.

Every surface adapts these two functions (the JSON and SSE endpoints, the OpenAI-compatible
endpoint, the CLI, notebooks), so the same question gets the same answer, the same
follow-up handling, the same insight memory and the same logs everywhere:

1. the conversation: a new session, or the turns of ``session_id`` (``SessionNotFound``
   for a session of another workspace, before anything runs);
2. a follow-up that refers to the previous answer ("Show this as a pie chart", "Show only
   the top 5") is answered without an LLM (``followups.py``); anything else goes to the
   orchestrator with the conversation as history;
3. the turn is stored, the answer's insights go to memory, one log line is written
   (``record_turn``: also how edited SQL and pipeline decisions store their turns).

``answer_stream`` yields every event as it happens and then the answer, after step 3: a
client that saw the answer can continue the session at once. Steps 1-3 are the same for
both, follow-ups included.

``history`` is for callers that keep the conversation themselves (a chat client sending its
messages): it is the orchestrator's history when no session is given, and when its last
assistant message is one of this workspace's answers (found by the digest of its Markdown),
the turn joins that answer's session and a follow-up refers to that answer. ``previous``
lets a caller name the answer a follow-up refers to.

Failures and time (``baton.agents.failures``, ``baton.llm.policy``): the whole question —
follow-up or orchestrator, every model call in it — runs under one deadline (the
workspace's ``deadline_s``, else ``BATON_QUESTION_DEADLINE``, 120 s). A question that runs
out of time is an error answer (``error_code: deadline_exceeded``), stored as its turn like
any answer. Conversations are read and written through the session store's bulkhead: when
the store cannot be reached, ``DependencyUnavailable`` is raised (surfaces answer 503)
rather than an answer that was never recorded — no acknowledged turn is lost. Insights go
to memory as advisory writes (``advisory.py``): never awaited, dropped (counted, logged once
per interval) when memory is down.

``turn_key`` makes a turn idempotent (``baton.state.turn_keys``): a key already stored returns the
stored answer and runs nothing (a ``NewKey`` the server just made is not looked up); a key being answered in this process waits for that turn;
a turn that loses the key at commit returns the turn that won; a store failure is
``TurnUnconfirmed`` (the key, and whether this attempt's write may still commit).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Awaitable
from typing import TYPE_CHECKING, Any, TypeVar

from baton.agents import AgentContext
from baton.agents.failures import explanation
from baton.events import NULL_TRACKER, Event, Followup, WorkflowTracker
from baton.llm.policy import QuestionScope, question_scope
from baton.messages import Message
from baton.response import AIMessage
from baton.state.bulkheads import DependencyUnavailable
from baton.state.conversations import history_of
from baton.state.turn_keys import KEY_RETENTION_S, NewKey, TurnKeyTaken, TurnUnconfirmed, join
from baton.workspace.advisory import harden, remember_insights
from baton.workspace.followups import answer_followup
from baton.workspace.related import may_offer, offer_related
from baton.workspace.verified import annotate_answer

if TYPE_CHECKING:
    from baton.workspace.core import Workspace

log = logging.getLogger("baton.workspace")
T = TypeVar("T")


async def _prepare(ws: Workspace, question: str, session_id: str | None, history: list[Message] | None,
                   previous: AIMessage | None) -> tuple[str, list[Message], AIMessage | None, bool]:
    """(session id, chat history, previous answer, whether the session is new), reading the
    session's turns once. A caller's own history whose last assistant message is one of
    this workspace's answers continues that answer's session (``SessionStore.find_reply``).
    A new conversation gets its id now and is created with its first turn (one write)."""
    if session_id is None and history:
        last = next((m for m in reversed(history) if m.role == "assistant" and m.content), None)
        found = await ws.sessions.find_reply(ws.name, last.content) if last is not None else None
        if found is not None:
            return found[0], list(history), previous or found[1], False
    if session_id is None:
        return ws.sessions.new_id(), list(history or ()), previous, True
    turns = await ws.sessions.turns(ws.name, session_id)  # raises SessionNotFound
    return session_id, history_of(turns), (turns[-1].answer if turns else previous), False


async def _followup(ws: Workspace, question: str, session_id: str, previous: AIMessage | None,
                    tracker: WorkflowTracker | None) -> AIMessage | None:
    if previous is None:
        return None
    context = AgentContext(user_question=question, workspace=ws.name, tracker=tracker or NULL_TRACKER)
    message = await answer_followup(ws.catalog, previous, question, context)
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


async def _finish(ws: Workspace, question: str, session_id: str, message: AIMessage, new: bool = False,
                  key: tuple[str, float] | None = None) -> AIMessage:
    message.session_id = session_id
    await annotate_answer(ws, message)  # "Did you mean", llm_calls with no model, verified-question use
    if may_offer(ws, message):  # a document answer: known questions on its subject (reads the documents: a thread)
        await asyncio.to_thread(offer_related, ws, message)
    return await record_turn(ws, session_id, question, message, new=new, key=key)


async def record_turn(ws: Workspace, session_id: str, question: str, message: AIMessage, *, new: bool = False,
                      key: tuple[str, float] | None = None) -> AIMessage:
    """Record one turn, the one way every turn is stored (an answer's, edited SQL's, a pipeline
    decision's): the answer serialised once (the stored row and the HTTP reply,
    ``stored_json``), its insights to memory (advice, never awaited), one log line. ``key``:
    the turn's idempotency key and how long it is held (a turn stored first under it is returned instead)."""
    message.session_id = session_id
    stored = _ANSWER_JSON.encode(message.to_dict())  # serialised once: the stored turn, and the HTTP reply (``stored_json``)
    try:
        await ws.sessions.append(ws.name, session_id, question, message, new=new, answer_json=stored,
                                 key=key[0] if key else None, key_ttl_s=key[1] if key else KEY_RETENTION_S)
    except TurnKeyTaken as taken:  # another attempt with this key was stored first: that is the turn
        found = await ws.sessions.find_turn(ws.name, taken.turn_id)
        if found is None:
            raise
        return _replayed(found[0], found[2])
    except DependencyUnavailable as exc:
        if key is None or isinstance(exc, TurnUnconfirmed):
            raise
        raise TurnUnconfirmed(exc, key[0], may_be_stored=True) from exc
    message.__dict__[STORED_JSON] = stored
    remember_insights(ws, message.insights, session_id)  # advice: queued, never awaited
    _log(ws, message)
    return message


STORED_JSON = "_stored_json"
# ``json.dumps``'s output, without its check for circular references: ``to_dict`` builds a new
# tree (a cycle would never reach here), and the check cost a sixth of the encoding
_ANSWER_JSON = json.JSONEncoder(check_circular=False)


def _replayed(session_id: str, message: AIMessage) -> AIMessage:
    message.session_id = session_id
    return message


async def _stored_turn(ws: Workspace, key: str) -> AIMessage | None:
    """The answer stored with ``key``, if any (a failed read: ``TurnUnconfirmed``, nothing sent)."""
    try:
        found = await ws.sessions.find_key(ws.name, key)
    except DependencyUnavailable as exc:
        raise TurnUnconfirmed(exc, key, may_be_stored=False) from exc
    return _replayed(found[0], found[2]) if found else None


def stored_json(message: AIMessage) -> str:
    """The answer as JSON exactly as its turn was stored (serialised once per answer), or
    serialised now for an answer that was not stored through ``_finish``."""
    return message.__dict__.get(STORED_JSON) or _ANSWER_JSON.encode(message.to_dict())


def deadline_answer(question: str, scope: QuestionScope) -> AIMessage:
    """The answer of a question that ran out of time."""
    return AIMessage.failed("deadline_exceeded", f"the question's deadline of {scope.deadline_s:g} s passed before it was answered",
                            explanation("deadline_exceeded"), input=question, metadata={"mode": "error"})


async def _within(scope: QuestionScope, question: str, work: Awaitable[T]) -> T | AIMessage:
    """``work`` (an awaitable answer), cut at the question's deadline."""
    limit = asyncio.timeout_at(scope.deadline)
    try:
        async with limit:
            return await work
    except TimeoutError:
        if not limit.expired():
            raise
        return deadline_answer(question, scope)


async def answer(ws: Workspace, question: str, session_id: str | None = None, *, history: list[Message] | None = None,
                 previous: AIMessage | None = None, tracker: WorkflowTracker | None = None, turn_key: str | None = None,
                 key_ttl_s: float = KEY_RETENTION_S, **context_fields: Any) -> AIMessage:
    if turn_key is None:
        return await _answer(ws, question, session_id, history, previous, tracker, None, context_fields)

    async def keyed() -> AIMessage:
        assert turn_key is not None
        stored = None if isinstance(turn_key, NewKey) else await _stored_turn(ws, turn_key)
        if stored is not None:
            return stored
        try:
            return await _answer(ws, question, session_id, history, previous, tracker, (turn_key, key_ttl_s), context_fields)
        except DependencyUnavailable as exc:  # reading the conversation failed: nothing was written
            if isinstance(exc, TurnUnconfirmed):
                raise
            raise TurnUnconfirmed(exc, turn_key, may_be_stored=False) from exc

    return await join(ws.name, turn_key, keyed)


async def _answer(ws: Workspace, question: str, session_id: str | None, history: list[Message] | None,
                  previous: AIMessage | None, tracker: WorkflowTracker | None, key: tuple[str, float] | None,
                  context_fields: dict[str, Any]) -> AIMessage:
    harden(ws)
    tracker = ws.request_tracker(tracker)
    with question_scope(None, ws.deadline_s) as scope:
        session_id, chat, previous, new = await _prepare(ws, question, session_id, history, previous)

        async def work() -> AIMessage:
            message = await _followup(ws, question, session_id, previous, tracker)
            if message is None:
                message = await ws.orchestrator.ask(question, session_id=session_id, chat_history=chat, tracker=tracker,
                                                    workspace=ws.name, **context_fields)
            return message

        message = await _within(scope, question, work())
    return await _finish(ws, question, session_id, message, new, key)


async def answer_stream(ws: Workspace, question: str, session_id: str | None = None, *, history: list[Message] | None = None,
                        previous: AIMessage | None = None, tracker: WorkflowTracker | None = None, turn_key: str | None = None,
                        key_ttl_s: float = KEY_RETENTION_S, **context_fields: Any) -> AsyncIterator[Event | AIMessage]:
    """Every event as it happens, then the final answer (already persisted). The
    workspace's tracker and ``tracker`` also receive every event. With ``turn_key`` already
    stored: only the stored answer."""
    key = (turn_key, key_ttl_s) if turn_key is not None else None
    if turn_key is not None and not isinstance(turn_key, NewKey) and (stored := await _stored_turn(ws, turn_key)) is not None:
        yield stored
        return
    harden(ws)
    tracker = ws.request_tracker(tracker)
    with question_scope(None, ws.deadline_s) as scope:
        try:
            session_id, chat, previous, new = await _prepare(ws, question, session_id, history, previous)
        except DependencyUnavailable as exc:
            if turn_key is None:
                raise
            raise TurnUnconfirmed(exc, turn_key, may_be_stored=False) from exc
        message = await _within(scope, question, _followup(ws, question, session_id, previous, tracker))
        if message is not None:
            if message.error_code != "deadline_exceeded":
                followup = Followup(kind=message.metadata.get("followup"), session_id=session_id, workflow_id=message.workflow_id)
                if tracker is not None:
                    tracker.emit(followup)
                yield followup
            yield await _finish(ws, question, session_id, message, new, key)
            return
        stream = ws.orchestrator.ask_stream(question, session_id=session_id, chat_history=chat, workspace=ws.name,
                                            tracker=tracker, **context_fields)
        # The orchestrator's own deadline (the same scope) ends its answer in time; the
        # stream's events are read as they come.
        async for item in stream:
            if isinstance(item, AIMessage):
                item = await _finish(ws, question, session_id, item, new, key)
            yield item
