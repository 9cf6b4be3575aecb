"""Admission control: past the in-flight limit and its short queue, a question is refused
at once (503, ``Retry-After``, ``error_code: overloaded``; OpenAI's shape on the OpenAI
route), and the admitted questions are answered normally. Shown by order: the refusals come
back while the admitted questions are still held at their model call."""

from __future__ import annotations

import asyncio
import logging

import httpx
import pytest

from agent_doubles import TableAgent
from baton.agents import OrchestratorAgent
from baton.llm import FunctionModel, tool_call
from baton.messages import LLMResponse
from baton.server import ApiKeys, SessionStore, Workspace, Workspaces, create_app
from baton.server.admission import TICK_S, WARN_AFTER_TICKS
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


async def test_past_the_limit_and_the_queue_questions_are_refused_at_once(client, held, caplog):
    caplog.set_level(logging.WARNING, logger="baton.server.admission")
    admitted = [asyncio.ensure_future(client.post("/v1/ask", json={"question": f"q{n}"}, headers=KEY)) for n in range(3)]
    while client.app.state.admission.state()["waiting"] < 1:
        await asyncio.sleep(0.01)
    burst = await client.post("/v1/ask", json={"question": "one too many"}, headers=KEY)  # before the CPU was measured
    assert not [r for r in caplog.records if r.name == "baton.server.admission"]  # so no word on an idle CPU yet
    await asyncio.sleep((WARN_AFTER_TICKS + 2) * TICK_S)
    refused = await client.post("/v1/ask", json={"question": "one too many"}, headers=KEY)
    chat = await client.post("/v1/chat/completions", headers=KEY,
                             json={"model": "o", "messages": [{"role": "user", "content": "one too many"}]})
    stream = await client.post("/v1/ask/stream", json={"question": "one too many"}, headers=KEY)
    still_held = sum(not a.done() for a in admitted)
    held.set()
    answers = await asyncio.gather(*admitted)
    assert still_held == 3  # the refusals did not wait for anyone
    assert burst.status_code == refused.status_code == 503 and refused.headers["retry-after"] == "1"
    assert refused.json()["error_code"] == "overloaded"
    assert chat.status_code == 503 and chat.json()["error"]["code"] == "overloaded"
    assert stream.status_code == 503
    assert [a.status_code for a in answers] == [200, 200, 200] and all(a.json()["data"] for a in answers)
    state = client.app.state.admission.state()
    assert (state["in_flight"], state["waiting"], state["refused"]) == (0, 0, 4)
    # the count refused while the CPU idled: the operator is told which knob, once (not per refusal)
    told = [r.getMessage() for r in caplog.records if r.name == "baton.server.admission"]
    assert len(told) == 1 and "raise BATON_MAX_IN_FLIGHT" in told[0]


async def test_a_saturated_process_refuses_a_question_before_reading_it(client, held, monkeypatch):
    """While the event loop's thread is saturated, a question is refused by the request guard,
    before it is parsed or routed (a refusal must cost next to nothing); other routes and a
    question arriving when none is in flight are served."""
    admission = client.app.state.admission
    monkeypatch.setattr(admission, "_watch_busy", lambda: None)  # the busy share is set by hand below
    first = asyncio.ensure_future(client.post("/v1/ask", json={"question": "q0"}, headers=KEY))
    while admission.state()["in_flight"] < 1:
        await asyncio.sleep(0.01)
    admission.busy = 0.99
    refused = await client.post("/v1/ask", content=b"not even JSON", headers={**KEY, "content-type": "application/json"})
    chat = await client.post("/v1/chat/completions", headers=KEY, json={"model": "o", "messages": []})
    sessions = await client.get("/v1/sessions", headers=KEY)
    held.set()
    answered = await first
    alone = await client.post("/v1/ask", json={"question": "q1"}, headers=KEY)  # none in flight: admitted, however busy
    assert refused.status_code == 503 and refused.headers["retry-after"] == "1"  # not the 422 of a body never read
    assert refused.json()["error_code"] == "overloaded"
    assert chat.status_code == 503 and chat.json()["error"]["code"] == "overloaded"
    assert sessions.status_code == 200 and answered.status_code == 200 and alone.status_code == 200
    assert admission.state()["refused"] == 2


async def test_the_busy_share_is_measured_only_while_two_or_more_are_in_flight():
    """A process answering one question at a time spends nothing on measuring its loop: the
    measuring task starts with a second question in flight and ends when one is left."""
    from baton.server.admission import TICK_S, Admission

    admission = Admission(max_in_flight=4, queue=0, wait_s=0.1, max_busy=0.9)
    async with admission.slot():
        assert admission._watch is None  # one alone: not measured
        async with admission.slot():
            await asyncio.sleep(3 * TICK_S)
            assert admission._watch is not None and not admission._watch.done()
        await asyncio.sleep(3 * TICK_S)  # one left in flight
        assert admission._watch.done() and admission.busy == 0.0
    admission.close()


def test_the_interpreter_lock_is_counted_when_the_loop_is_busy_but_not_native_threads_beside_an_idle_loop():
    """A worker whose loop thread is at 80 % while the process uses a whole core is saturated
    (its threads hold the interpreter lock the loop needs); a DuckDB query on three cores
    beside an idle loop is not the loop's saturation."""
    from baton.server.admission import busy_share

    assert busy_share(0.80, 1.05) == 1.0 > 0.85  # refused at the default max_busy
    assert busy_share(0.60, 0.70) == 0.70
    assert busy_share(0.10, 3.0) == 0.10  # native threads, idle loop: admitted
    assert busy_share(0.90, 0.90) == 0.90
