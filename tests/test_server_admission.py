"""Admission control: past the in-flight limit and its short queue, a question is refused
at once (503, ``Retry-After``, ``error_code: overloaded``; OpenAI's shape on the OpenAI
route), and the admitted questions are answered normally. Shown by order: the refusals come
back while the admitted questions are still held at their model call."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from agent_doubles import TableAgent
from baton.agents import OrchestratorAgent
from baton.llm import FunctionModel, tool_call
from baton.messages import LLMResponse
from baton.server import ApiKeys, SessionStore, Workspace, Workspaces, create_app
from baton.server.limits import Limits

KEY = {"Authorization": "Bearer k"}


@pytest.fixture
async def held():
    return asyncio.Event()


@pytest.fixture
async def client(held):
    async def route(messages, tools):
        await held.wait()
        return "done" if messages[-1].role == "tool" else LLMResponse(tool_calls=[tool_call("units", {"question": "q"})])

    orchestrator = OrchestratorAgent("o", model=FunctionModel(route))
    orchestrator.add_agent(TableAgent("units"))
    app = create_app(Workspaces([Workspace("w", orchestrator, SessionStore())]), ApiKeys({"k": "w"}),
                     limits=Limits(max_in_flight=2, admission_queue=1, admission_wait_s=30))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t", timeout=60) as c:
        c.app = app
        yield c


async def test_past_the_limit_and_the_queue_questions_are_refused_at_once(client, held):
    admitted = [asyncio.ensure_future(client.post("/v1/ask", json={"question": f"q{n}"}, headers=KEY)) for n in range(3)]
    while client.app.state.admission.state()["waiting"] < 1:
        await asyncio.sleep(0.01)
    refused = await client.post("/v1/ask", json={"question": "one too many"}, headers=KEY)
    chat = await client.post("/v1/chat/completions", headers=KEY,
                             json={"model": "o", "messages": [{"role": "user", "content": "one too many"}]})
    stream = await client.post("/v1/ask/stream", json={"question": "one too many"}, headers=KEY)
    still_held = sum(not a.done() for a in admitted)
    held.set()
    answers = await asyncio.gather(*admitted)
    assert still_held == 3  # the refusals did not wait for anyone
    assert refused.status_code == 503 and refused.headers["retry-after"] == "1"
    assert refused.json()["error_code"] == "overloaded"
    assert chat.status_code == 503 and chat.json()["error"]["code"] == "overloaded"
    assert stream.status_code == 503
    assert [a.status_code for a in answers] == [200, 200, 200] and all(a.json()["data"] for a in answers)
    state = client.app.state.admission.state()
    assert (state["in_flight"], state["waiting"], state["refused"]) == (0, 0, 3)
