"""Hostile and oversized input gets a small 4xx that does not echo it, and nothing happens:
no model call, no stored turn, no feedback row, no memory record.

Also over real sockets: a half-sent request is answered 408 and closed, and a client that
disconnects mid-question stops the question (no further model call, no turn stored).
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time

import httpx
import pytest

from agent_doubles import TableAgent
from baton.agents import OrchestratorAgent
from baton.llm import FunctionModel, tool_call
from baton.memory import MemoryStore, TrustedAuthenticator
from baton.messages import LLMResponse
from baton.server import ApiKeys, SessionStore, Workspace, Workspaces, create_app
from baton.server.limits import Limits
from live_server import serve

KEY = {"Authorization": "Bearer key-a"}
BIG = "x" * 30_000


class Counting:
    def __init__(self) -> None:
        self.calls = 0
        self.gate: threading.Event | None = None

    async def route(self, messages, tools):
        self.calls += 1
        if self.gate is not None:
            while not self.gate.is_set():
                await asyncio.sleep(0.01)
        if messages[-1].role == "tool":
            return "done"
        return LLMResponse(tool_calls=[tool_call("units", {"question": messages[-1].content})])


@pytest.fixture
def model():
    return Counting()


@pytest.fixture
def app(model, tmp_path):
    memory = MemoryStore(f"sqlite:///{tmp_path / 'memory.sqlite'}", authenticator=TrustedAuthenticator())
    orchestrator = OrchestratorAgent("a-orchestrator", model=FunctionModel(model.route))
    orchestrator.add_agent(TableAgent("units"))
    ws = Workspace("a", orchestrator, SessionStore(tmp_path / "sessions.sqlite"), memory=memory)
    return create_app(Workspaces([ws]), ApiKeys({"key-a": "a"}), limits=Limits(body_timeout_s=0.5))


@pytest.fixture
async def client(app):
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as c:
        yield c


async def nothing_stored(client) -> None:
    assert (await client.get("/v1/sessions", headers=KEY)).json() == {"sessions": []}


async def test_an_oversized_question_is_refused_small_without_echo_on_every_route(client, model):
    cases = [("/v1/ask", {"question": BIG}), ("/v1/ask/stream", {"question": BIG}),
             ("/v1/pipelines", {"question": BIG}),
             ("/v1/chat/completions", {"model": "a-orchestrator", "messages": [{"role": "user", "content": BIG}]})]
    for path, body in cases:
        response = await client.post(path, json=body, headers=KEY)
        assert response.status_code in (400, 404, 422), path
        assert len(response.content) < 2000 and "xxxxxxxxxx" not in response.text, path
    assert model.calls == 0
    await nothing_stored(client)


async def test_a_body_over_the_limit_is_refused_before_it_is_read(client, model):
    huge = b'{"question": "' + b"y" * (2 << 20) + b'"}'
    response = await client.post("/v1/ask", content=huge, headers={**KEY, "content-type": "application/json"})
    assert response.status_code == 413 and len(response.content) < 200
    chat = await client.post("/v1/chat/completions", content=b"z" * (5 << 20), headers={**KEY, "content-type": "application/json"})
    assert chat.status_code == 413 and chat.json()["error"]["type"] == "invalid_request_error"
    assert model.calls == 0


@pytest.mark.parametrize("raw", [
    b'{"question": NaN}', b'{"question": "a", "session_id": Infinity}', b'{"question": -Infinity}',
    b'{"question": "lone \\ud800 surrogate"}', b'{"question": "nul \\u0000 inside"}', b'{"question": "esc \\u001b[31m"}',
    b'{"question": "ok", "\\udfff": 1}', b'{"question": ' + b"[" * 5000 + b"]" * 5000 + b"}",
])
async def test_json_that_would_break_later_is_refused_up_front(client, model, raw):
    response = await client.post("/v1/ask", content=raw, headers={**KEY, "content-type": "application/json"})
    assert response.status_code == 422 and len(response.content) < 300
    chat = await client.post("/v1/chat/completions", headers={**KEY, "content-type": "application/json"},
                             content=b'{"model": "a-orchestrator", "messages": [{"role": "user", "content": ' + raw + b"}]}")
    assert chat.status_code == 400 and "error" in chat.json()
    assert model.calls == 0
    await nothing_stored(client)


async def test_a_chart_spec_nested_500_deep_is_refused(client):
    spec = b'{"layer": [' * 500 + b'{"mark": "bar"}' + b"]}" * 500
    response = await client.post("/v1/charts/render", content=b'{"spec": ' + spec + b"}",
                                 headers={**KEY, "content-type": "application/json"})
    assert response.status_code == 422 and "nested" in response.json()["detail"]


async def test_chat_content_parts_must_be_text(client, model):
    for parts in ([{"type": "text", "text": 5}], [{"type": "image_url", "image_url": {"url": "http://x"}}], [{"type": "text"}],
                  [7], ["plain string"]):
        response = await client.post("/v1/chat/completions", headers=KEY, json={
            "model": "a-orchestrator", "messages": [{"role": "user", "content": parts}]})
        assert response.status_code == 400 and response.json()["error"]["type"] == "invalid_request_error", parts
    assert model.calls == 0


async def test_a_validation_error_names_the_field_without_echoing_the_value(client):
    response = await client.post("/v1/ask", json={"question": "ok", "x" * 5000: "y" * 100_000}, headers=KEY)
    assert response.status_code == 422
    assert len(response.content) < 1000 and "yyyyyyyy" not in response.text
    detail = response.json()["detail"][0]
    assert detail["type"] == "extra_forbidden" and "input" not in detail


async def test_static_names_with_odd_bytes_are_404(client):
    for name in ("%00.js", "..%2fapp.js", "a%0a.css", "%ff.svg"):
        assert (await client.get(f"/static/{name}")).status_code == 404


async def test_feedback_memory_would_refuse_is_refused_and_not_stored(client, app):
    answer = (await client.post("/v1/ask", json={"question": "units?"}, headers=KEY)).json()
    too_long = await client.post("/v1/feedback", headers=KEY,
                                 json={"turn_id": answer["turn_id"], "verdict": "rejected", "comment": "c" * 4_001})
    assert too_long.status_code == 422 and "cccccccc" not in too_long.text
    ws = app.state.workspaces.get("a")
    with ws.sessions.engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT count(*) FROM baton_feedback").scalar() == 0
    assert ws.memory.list_records(ws.memory_scope(), kind="learning") == []
    fine = await client.post("/v1/feedback", headers=KEY, json={"turn_id": answer["turn_id"], "verdict": "rejected", "comment": "c" * 4_000})
    assert fine.status_code == 200


def _raw_request(port: int, data: bytes, wait: float = 5.0) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=wait) as sock:
        sock.sendall(data)
        chunks = []
        while True:
            try:
                chunk = sock.recv(65536)
            except (TimeoutError, ConnectionResetError):
                break
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks)


def test_a_half_sent_request_is_answered_408_and_closed(app, model):
    with serve(app) as url:
        port = int(url.rsplit(":", 1)[1])
        head = (b"POST /v1/ask HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer key-a\r\nContent-Type: application/json\r\n"
                b"Content-Length: 100\r\n\r\n{\"question\": ")
        reply = _raw_request(port, head)
    assert reply.startswith(b"HTTP/1.1 408") and model.calls == 0


@pytest.mark.parametrize("path, payload", [
    ("/v1/ask", {"question": "units?"}),
    ("/v1/ask/stream", {"question": "units?"}),
    ("/v1/chat/completions", {"model": "a-orchestrator", "messages": [{"role": "user", "content": "units?"}]}),
])
def test_a_client_that_disconnects_stops_its_question(app, model, path, payload):
    model.gate = threading.Event()
    with serve(app) as url:
        port = int(url.rsplit(":", 1)[1])
        body = json.dumps(payload).encode()
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.sendall(b"POST " + path.encode() + b" HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer key-a\r\nContent-Type: application/json\r\n"
                         b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
            while model.calls == 0:  # the question reached its model call
                time.sleep(0.01)
        # the client is gone: the question must be cancelled while its model call is still held
        for _ in range(500):
            if _no_question_running(app):
                break
            time.sleep(0.01)
        cancelled_while_held = _no_question_running(app) and not model.gate.is_set()
        model.gate.set()
        sessions = httpx.get(f"{url}/v1/sessions", headers=KEY).json()["sessions"]
    assert cancelled_while_held  # it could not have finished: its model call had not returned
    assert model.calls == 1
    assert all(s["turns"] == 0 for s in sessions)  # the unanswered turn was never stored


def _no_question_running(app) -> bool:
    return app.state.admission.in_flight == 0
