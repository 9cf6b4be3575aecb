"""The one answer path: the same steps (session, follow-up, memory, log) whether a surface
asks for the whole answer or a stream, and every event reaches the workspace's tracker."""

import logging

import pytest

from baton.agents import AgentResult, BaseAgent, OrchestratorAgent
from baton.events import RecordingTracker
from baton.llm import FunctionModel, tool_call
from baton.messages import LLMResponse, Message
from baton.response import AIMessage, QueryResult
from baton.state import SessionNotFound, SessionStore
from baton.workspace import Workspace


def route(messages, tools):
    if messages[-1].role == "tool":
        return messages[-1].content
    return LLMResponse(tool_calls=[tool_call("sales", {"question": messages[-1].content})])


class SalesAgent(BaseAgent):
    """Answers with a real table (a ``QueryResult``), as a SQL specialist does."""

    async def run(self, context, *, question, **kw):
        results = QueryResult(["region", "total"], [["north", 10.0], ["south", 4.5], ["east", 7.0]])
        message = AIMessage(content="Sales by region.", results=results, data=results.records())
        return AgentResult(agent_name=self.name, task=question, result=message.content, ai_message=message)


@pytest.fixture
async def ws():
    orchestrator = OrchestratorAgent("ShopOrchestrator", model=FunctionModel(route))
    orchestrator.add_agent(SalesAgent("sales", "Sales figures"))
    tracker = RecordingTracker()
    async with Workspace("shop", orchestrator, SessionStore(), tracker=tracker) as workspace:
        yield workspace


async def test_answer_keeps_the_turn_and_the_workspace_tracker_sees_every_event(ws):
    request = RecordingTracker()
    answer = await ws.answer("Sales by region?", tracker=request)
    assert answer.metadata["routed_to"] == "sales" and len(answer.data) == 3
    assert request.types() == ws.tracker.types() and "agent.start" in request.types()
    turns = await ws.sessions.turns("shop", answer.session_id)
    assert [t.answer.turn_id for t in turns] == [answer.turn_id]


async def test_a_streamed_follow_up_is_stored_and_logged_like_any_answer(ws, caplog):
    first = await ws.answer("Sales by region?")
    with caplog.at_level(logging.INFO, logger="baton.workspace"):
        items = [item async for item in ws.answer_stream("Show this as a pie chart", first.session_id)]
    answer = items[-1]
    assert isinstance(answer, AIMessage) and answer.metadata["followup"] == "rechart" and answer.viz_type == "pie"
    assert items[0].type == "followup" and "followup" in ws.tracker.types()
    turns = await ws.sessions.turns("shop", first.session_id)
    assert [t.question for t in turns] == ["Sales by region?", "Show this as a pie chart"]
    assert any("mode=rechart" in r.getMessage() for r in caplog.records)


async def test_a_streamed_answer_ends_with_the_stored_answer(ws):
    items = [item async for item in ws.answer_stream("Sales by region?")]
    answer = items[-1]
    assert isinstance(answer, AIMessage) and not isinstance(items[-2], AIMessage)
    turns = await ws.sessions.turns("shop", answer.session_id)
    assert turns[0].answer.turn_id == answer.turn_id


async def test_history_kept_by_the_caller_reaches_the_orchestrator(ws):
    seen = []
    ws.orchestrator.model = FunctionModel(lambda messages, tools: seen.append(messages) or "ok")
    await ws.answer("and the south?", history=[Message.user("north?"), Message.assistant("10")])
    assert [m.content for m in seen[0][1:3]] == ["north?", "10"]


async def test_another_workspaces_session_is_not_found_before_anything_runs(ws):
    other = await ws.sessions.create("elsewhere", "theirs")
    calls = len(ws.tracker.events)
    with pytest.raises(SessionNotFound):
        await ws.answer("Sales by region?", other)
    with pytest.raises(SessionNotFound):
        [item async for item in ws.answer_stream("Sales by region?", other)]
    assert len(ws.tracker.events) == calls
