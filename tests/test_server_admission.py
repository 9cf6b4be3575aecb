"""Admission control over HTTP: past the hard cap, or while the process is saturated, a
question is refused at once (503, ``Retry-After``, ``error_code: overloaded``; OpenAI's
shape on the OpenAI route) by the request guard, before it is parsed; the admitted questions
are answered normally. Shown by order: the refusals come back while the admitted questions
are still held at their model call."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from agent_doubles import TableAgent
from baton.agents import OrchestratorAgent
from baton.llm import FunctionModel, tool_call
from baton.messages import LLMResponse
from baton.server import ApiKeys, SessionStore, Workspace, Workspaces, create_app
from baton.server.admission import QUIET_TICKS, STREAM, TICK_S
from baton.server.limits import Limits

KEY = {"Authorization": "Bearer k"}


@pytest.fixture
async def held():
    return asyncio.Event()


def _app(held, limits):
    async def route(messages, tools):
        await held.wait()
        return "done" if messages[-1].role == "tool" else LLMResponse(tool_calls=[tool_call("units", {"question": "q"})])

    orchestrator = OrchestratorAgent("o", model=FunctionModel(route))
    orchestrator.add_agent(TableAgent("units"))
    return create_app(Workspaces([Workspace("w", orchestrator, SessionStore())]), ApiKeys({"k": "w", "k2": "w"}), limits=limits)


@pytest.fixture
async def client(held):
    app = _app(held, Limits(max_in_flight=2))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t", timeout=60) as c:
        c.app = app
        yield c


async def test_past_the_cap_questions_are_refused_at_once(client, held):
    admitted = [asyncio.ensure_future(client.post("/v1/ask", json={"question": f"q{n}"}, headers=KEY)) for n in range(2)]
    while client.app.state.admission.state()["in_flight"] < 2:
        await asyncio.sleep(0.01)
    refused = await client.post("/v1/ask", json={"question": "one too many"}, headers=KEY)
    chat = await client.post("/v1/chat/completions", headers=KEY,
                             json={"model": "o", "messages": [{"role": "user", "content": "one too many"}]})
    stream = await client.post("/v1/ask/stream", json={"question": "one too many"}, headers=KEY)
    still_held = sum(not a.done() for a in admitted)
    held.set()
    answers = await asyncio.gather(*admitted)
    assert still_held == 2  # the refusals did not wait for anyone
    assert refused.status_code == 503 and refused.json()["error_code"] == "overloaded"
    assert chat.status_code == 503 and chat.json()["error"]["code"] == "overloaded"
    assert stream.status_code == 503
    assert all(int(r.headers["retry-after"]) >= 1 for r in (refused, chat, stream))  # nothing drains: at least 1 s
    assert [a.status_code for a in answers] == [200, 200] and all(a.json()["data"] for a in answers)
    state = client.app.state.admission.state()
    assert (state["in_flight"], state["questions"], state["refused"], state["keys"]) == (0, 0, 3, 0)
    assert state["refusals"] == {"memory": 3}


async def test_a_saturated_process_refuses_a_question_before_reading_it(held, monkeypatch):
    """While the process is saturated, a question over its key's share is refused by the
    request guard, before it is parsed or routed (a refusal must cost next to nothing), with
    ``Retry-After`` from the measured drain rate; other routes, another key within its share,
    and a question arriving when none is in flight are served."""
    app = _app(held, Limits())
    admission = app.state.admission
    monkeypatch.setattr(admission, "_watch_headroom", lambda: None)  # saturation is set by hand below
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t", timeout=60) as client:
        first = [asyncio.ensure_future(client.post("/v1/ask", json={"question": f"q{n}"}, headers=KEY)) for n in range(2)]
        while admission.state()["in_flight"] < 2:
            await asyncio.sleep(0.01)
        admission.why, admission.limit = "the event loop runs 400 ms late: the CPU is saturated", 2.0
        admission.headroom.drain_per_s = 0.5  # half a question a second drains: the key's 2 over 1 take 2 s
        refused = await client.post("/v1/ask", content=b"not even JSON", headers={**KEY, "content-type": "application/json"})
        chat = await client.post("/v1/chat/completions", headers=KEY, json={"model": "o", "messages": []})
        sessions = await client.get("/v1/sessions", headers=KEY)
        other = asyncio.ensure_future(client.post("/v1/ask", json={"question": "q"}, headers={"Authorization": "Bearer k2"}))
        while admission.state()["keys"] < 2:
            await asyncio.sleep(0.01)
        held.set()
        answered = await asyncio.gather(*first, other)
        admission.why = None
        alone = await client.post("/v1/ask", json={"question": "q1"}, headers=KEY)
    assert refused.status_code == 503 and refused.json()["error_code"] == "overloaded"  # not the 422 of a body never read
    assert int(refused.headers["retry-after"]) >= 2
    assert chat.status_code == 503 and chat.json()["error"]["code"] == "overloaded"
    assert sessions.status_code == 200 and alone.status_code == 200
    assert [a.status_code for a in answered] == [200, 200, 200]  # k2 was within its share of the limit
    assert admission.state()["refused"] == 2


async def test_a_stream_holds_its_units_until_it_ends():
    """A stream counts ``STREAM`` units while it runs (seen from its model call), a streamed
    chat completion too (its route raises the guard's ticket), and gives them back at its end."""
    seen: list[int] = []

    async def route(messages, tools):
        seen.append(app.state.admission.in_flight)
        return "done" if messages[-1].role == "tool" else LLMResponse(tool_calls=[tool_call("units", {"question": "q"})])

    orchestrator = OrchestratorAgent("o", model=FunctionModel(route))
    orchestrator.add_agent(TableAgent("units"))
    app = create_app(Workspaces([Workspace("w", orchestrator, SessionStore())]), ApiKeys({"k": "w"}), limits=Limits())
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t", timeout=60) as client:
        stream = await client.post("/v1/ask/stream", json={"question": "q"}, headers=KEY)
        chat = await client.post("/v1/chat/completions", headers=KEY,
                                 json={"model": "o", "stream": True, "messages": [{"role": "user", "content": "q"}]})
        ask = await client.post("/v1/ask", json={"question": "q"}, headers=KEY)
    assert stream.status_code == chat.status_code == ask.status_code == 200 and "event: answer" in stream.text
    assert seen and seen[0] == STREAM and seen[-1] == 1  # the stream's units, then the plain ask's one
    assert STREAM in seen[1:-1]  # the streamed completion's, raised by its route
    assert app.state.admission.state()["in_flight"] == 0 and app.state.admission.state()["questions"] == 0


async def test_the_headroom_is_measured_only_while_two_or_more_are_in_flight_lately():
    """A process answering one question at a time spends nothing on measuring its loop: the
    measuring task starts with a second question in flight and ends when one has been left
    alone for a second."""
    from baton.server.admission import Admission

    admission = Admission(Limits(max_in_flight=4))
    first = admission.take("a")
    assert admission._watch is None  # one alone: not measured
    second = admission.take("a")
    await asyncio.sleep(3 * TICK_S)
    assert admission._watch is not None and not admission._watch.done()
    second.release()
    await asyncio.sleep(3 * TICK_S)  # one left in flight: measured through a short gap
    assert not admission._watch.done()
    await asyncio.sleep((QUIET_TICKS + 3) * TICK_S)  # one alone for a second: no more
    assert admission._watch.done() and admission.headroom.busy == 0.0
    first.release()
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
