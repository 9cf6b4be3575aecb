"""Idempotent turns (``baton.state.turn_keys``): a key is stored once per workspace, a
repeated key returns the stored answer without asking the model again, a keyless chat
request is keyed by its content (the ``openai`` SDK's own retries send the same body), and
a 503 during a hung state database names the key and says the turn may be stored; the
write that hung commits late and the retry with its key stores nothing more."""

import asyncio
import threading

import httpx
import openai
import pytest
import sqlalchemy as sa

from baton.agents import AgentResult, BaseAgent, OrchestratorAgent
from baton.llm import FunctionModel, tool_call
from baton.messages import LLMResponse
from baton.response import AIMessage, QueryResult
from baton.server import create_app
from baton.state import ApiKeys, SessionStore
from baton.state.turn_keys import TurnKeyTaken, join
from baton.workspace import Workspace, Workspaces
from fault_proxy import proxied
from live_server import serve

HEADERS = {"Authorization": "Bearer key-acme"}


class SalesAgent(BaseAgent):
    async def run(self, context, *, question, **kw):
        results = QueryResult(["region", "total"], [["north", 10.0], ["south", 4.5]])
        message = AIMessage(content="Sales by region.", results=results, data=results.records(), query="SELECT 1")
        return AgentResult(agent_name=self.name, task=question, result=message.content, ai_message=message)


class Counting:
    """The orchestrator's model: routes every question to ``sales``, counting the questions."""

    def __init__(self, on_question=None) -> None:
        self.questions = 0
        self.lock = threading.Lock()
        self.on_question = on_question

    def __call__(self, messages, tools):
        if messages[-1].role == "tool":
            return messages[-1].content
        with self.lock:
            self.questions += 1
        if self.on_question is not None:
            self.on_question(messages[-1].content)
        return LLMResponse(tool_calls=[tool_call("sales", {"question": messages[-1].content})])


def workspace(store: SessionStore, model: Counting, name: str = "acme") -> Workspace:
    orchestrator = OrchestratorAgent(f"{name}-orchestrator", model=FunctionModel(model))
    orchestrator.add_agent(SalesAgent("sales", description="sales figures"))
    return Workspace(name, orchestrator, store)


def turn_rows(engine: sa.Engine) -> int:
    with engine.connect() as conn:
        return conn.execute(sa.text("SELECT COUNT(*) FROM baton_turns")).scalar_one()


def answer(text: str = "Sales.") -> AIMessage:
    return AIMessage(content=text)


# --- the store -------------------------------------------------------------------------------


@pytest.fixture(params=["sqlite", "postgres"])
def store(request, tmp_path):
    if request.param == "sqlite":
        store = SessionStore(tmp_path / "sessions.sqlite")
        yield store
        store.close()
        return
    state_db = request.getfixturevalue("state_db")
    store = SessionStore(state_db)
    yield store
    store.close()


async def test_a_key_is_stored_once_per_workspace(store):
    first = await store.append("acme", None, "q", answer(), key="k-1")
    with pytest.raises(TurnKeyTaken) as taken:
        await store.append("acme", None, "q", answer(), key="k-1")
    assert taken.value.session_id == first
    await store.append("other", None, "q", answer(), key="k-1")  # another workspace's key is its own
    assert turn_rows(store.engine) == 2
    found = await store.find_key("acme", "k-1")
    assert found is not None and found[0] == first and found[1] == "q"
    assert await store.find_key("other-ws", "k-1") is None


async def test_one_group_with_a_key_twice_stores_it_once_and_the_rest(store):
    results = await asyncio.gather(*(store.append("acme", None, f"q{i}", answer(), key="same" if i < 3 else f"k{i}")
                                     for i in range(6)), return_exceptions=True)
    assert sum(isinstance(r, TurnKeyTaken) for r in results) == 2
    assert sum(isinstance(r, str) for r in results) == 4
    assert turn_rows(store.engine) == 4


async def test_an_expired_key_is_claimed_again(store):
    await store.append("acme", None, "q", answer(), key="short", key_ttl_s=-1)
    assert await store.find_key("acme", "short") is None
    await store.append("acme", None, "q", answer(), key="short")
    assert turn_rows(store.engine) == 2


async def test_a_second_request_with_a_running_key_gets_its_outcome():
    started, release, runs = asyncio.Event(), asyncio.Event(), []

    async def work():
        runs.append(1)
        started.set()
        await release.wait()
        return "the answer"

    first = asyncio.create_task(join("acme", "k", work))
    await started.wait()
    second = asyncio.create_task(join("acme", "k", work))
    await asyncio.sleep(0)
    release.set()
    assert await asyncio.gather(first, second) == ["the answer", "the answer"]
    assert runs == [1]


# --- the routes --------------------------------------------------------------------------------


@pytest.fixture
def served(tmp_path):
    model = Counting()
    ws = workspace(SessionStore(tmp_path / "s.sqlite"), model)
    with serve(create_app(Workspaces([ws]), ApiKeys({"key-acme": "acme"}))) as url:
        yield url, model, ws


def test_ask_with_a_key_twice_answers_once(served):
    url, model, ws = served
    one = httpx.post(f"{url}/v1/ask", json={"question": "Sales by region?"}, headers={**HEADERS, "Idempotency-Key": "abc-1"})
    two = httpx.post(f"{url}/v1/ask", json={"question": "Sales by region?"}, headers={**HEADERS, "Idempotency-Key": "abc-1"})
    three = httpx.post(f"{url}/v1/ask", json={"question": "Sales by region?", "turn_id": "abc-1"}, headers=HEADERS)
    assert one.status_code == two.status_code == three.status_code == 200
    assert one.json()["turn_id"] == two.json()["turn_id"] == three.json()["turn_id"]
    assert model.questions == 1 and turn_rows(ws.sessions.engine) == 1
    other = httpx.post(f"{url}/v1/ask", json={"question": "Sales by region?"}, headers=HEADERS)  # no key: a new turn
    assert other.json()["turn_id"] != one.json()["turn_id"] and turn_rows(ws.sessions.engine) == 2


def test_ask_stream_with_a_stored_key_sends_the_stored_answer(served):
    url, model, ws = served
    first = httpx.post(f"{url}/v1/ask", json={"question": "Sales?", "turn_id": "page-1"}, headers=HEADERS).json()
    with httpx.stream("POST", f"{url}/v1/ask/stream", json={"question": "Sales?", "turn_id": "page-1"}, headers=HEADERS) as r:
        text = "".join(r.iter_text())
    assert "event: answer" in text and first["turn_id"] in text
    assert model.questions == 1 and turn_rows(ws.sessions.engine) == 1


@pytest.mark.parametrize("key", ["", "x" * 101, "with space", "é"])
def test_a_malformed_key_is_refused(served, key):
    url, model, ws = served
    response = httpx.post(f"{url}/v1/ask", json={"question": "Sales?"}, headers={**HEADERS, "Idempotency-Key": key.encode("utf-8")})
    assert response.status_code == 422 and response.json()["error_code"] == "invalid_idempotency_key"
    body = httpx.post(f"{url}/v1/ask", json={"question": "Sales?", "turn_id": key}, headers=HEADERS)
    assert body.status_code == 422
    chat = httpx.post(f"{url}/v1/chat/completions", json={"model": "acme-orchestrator", "messages": [
        {"role": "user", "content": "Sales?"}]}, headers={**HEADERS, "Idempotency-Key": key.encode("utf-8")})
    assert chat.status_code == 400 and chat.json()["error"]["code"] == "invalid_idempotency_key"
    assert model.questions == 0 and turn_rows(ws.sessions.engine) == 0


def test_a_keyless_chat_request_sent_again_is_the_same_turn(served):
    url, model, ws = served
    client = openai.OpenAI(base_url=f"{url}/v1", api_key="key-acme")
    messages = [{"role": "user", "content": "Sales by region?"}]
    one = client.chat.completions.create(model="acme-orchestrator", messages=messages)
    two = client.chat.completions.create(model="acme-orchestrator", messages=messages)
    streamed = list(client.chat.completions.create(model="acme-orchestrator", messages=messages, stream=True))
    assert one.model_extra["baton"]["turn_id"] == two.model_extra["baton"]["turn_id"]
    assert model.questions == 2  # the streamed request is another request (its body differs), answered once
    assert streamed[-1].model_extra["baton"]["turn_id"] != one.model_extra["baton"]["turn_id"]
    other = client.chat.completions.create(model="acme-orchestrator", messages=[{"role": "user", "content": "And costs?"}])
    keyed = client.chat.completions.create(model="acme-orchestrator", messages=messages, extra_headers={"Idempotency-Key": "c-1"})
    assert other.model_extra["baton"]["turn_id"] != keyed.model_extra["baton"]["turn_id"] != one.model_extra["baton"]["turn_id"]
    assert model.questions == 4 and turn_rows(ws.sessions.engine) == 4


# --- a hung state database -----------------------------------------------------------------------


def test_a_hung_write_is_503_with_its_key_and_the_retry_stores_nothing_more(state_db):
    with proxied(state_db) as (proxy, url):
        frozen = set()

        def freeze_once(question):  # the key was looked up: the first attempt's write hangs
            if question not in frozen:
                frozen.add(question)
                proxy.set("freeze")

        model = Counting(on_question=freeze_once)
        store = SessionStore(url, timeout_s=1.0)
        ws = workspace(store, model)
        with serve(create_app(Workspaces([ws]), ApiKeys({"key-acme": "acme"}))) as base:
            ask = httpx.post(f"{base}/v1/ask", json={"question": "Sales?"}, headers=HEADERS, timeout=30)
            chat = httpx.post(f"{base}/v1/chat/completions", headers=HEADERS, timeout=30, json={
                "model": "acme-orchestrator", "messages": [{"role": "user", "content": "Sales, in chat?"}]})
            assert ask.status_code == 503 and ask.headers["Retry-After"]
            key = ask.json()["turn_id"]
            assert ask.json()["may_be_stored"] is True and key
            proxy.set("pass")
            while chat.status_code == 503 and not chat.json()["may_be_stored"]:  # its key lookup met the breaker
                threading.Event().wait(0.2)
                chat = httpx.post(f"{base}/v1/chat/completions", headers=HEADERS, timeout=30, json={
                    "model": "acme-orchestrator", "messages": [{"role": "user", "content": "Sales, in chat?"}]})
            assert chat.status_code == 503 and chat.headers["x-should-retry"] == "false"
            assert chat.json()["may_be_stored"] is True and chat.json()["turn_id"].startswith("chat:")
            proxy.set("pass")
            for _ in range(100):  # a stream's write hangs after the stream started: the error event names the key
                with httpx.stream("POST", f"{base}/v1/ask/stream", json={"question": "Sales, streamed?", "turn_id": "s-1"},
                                  headers=HEADERS, timeout=30) as streamed:
                    text = "".join(streamed.iter_text())
                if streamed.status_code == 200:
                    break
                proxy.set("pass")  # the key lookup met the breaker: again
                threading.Event().wait(0.2)
            assert "event: error" in text and '"turn_id": "s-1"' in text and '"may_be_stored": true' in text
            proxy.set("pass")  # the hung writes are released: they commit now
            for _ in range(100):
                retry = httpx.post(f"{base}/v1/ask", json={"question": "Sales?", "turn_id": key}, headers=HEADERS, timeout=30)
                if retry.status_code == 200:
                    break
                assert retry.status_code == 503
                threading.Event().wait(0.2)
            assert retry.status_code == 200
            with httpx.stream("POST", f"{base}/v1/ask/stream", json={"question": "Sales, streamed?", "turn_id": "s-1"},
                              headers=HEADERS, timeout=30) as streamed:
                assert "event: answer" in "".join(streamed.iter_text())
        store.close()
    engine = sa.create_engine(state_db)
    with engine.connect() as conn:
        rows = conn.execute(sa.text("SELECT question, COUNT(*) FROM baton_turns GROUP BY question")).all()
    engine.dispose()
    assert dict(rows)["Sales?"] == dict(rows)["Sales, streamed?"] == 1
    assert all(count == 1 for _, count in rows)


# --- MCP ---------------------------------------------------------------------------------------


async def test_mcp_ask_with_a_turn_id_twice_answers_once(tmp_path):
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    from baton.mcp import mcp_http_router
    from mcp_test_servers import served as served_mcp

    model = Counting()
    ws = workspace(SessionStore(tmp_path / "s.sqlite"), model)
    workspaces = Workspaces([ws])
    async with workspaces, served_mcp(mcp_http_router(workspaces, ApiKeys({"key-acme": "acme"}))) as url:
        http = httpx2.AsyncClient(headers=HEADERS, timeout=httpx2.Timeout(60.0, read=120.0))
        async with Client(streamable_http_client(url, http_client=http), read_timeout_seconds=120) as mcp:
            one = await mcp.call_tool("ask", {"question": "Sales?", "turn_id": "m-1", "chart_image": False})
            two = await mcp.call_tool("ask", {"question": "Sales?", "turn_id": "m-1", "chart_image": False})
            bad = await mcp.call_tool("ask", {"question": "Sales?", "turn_id": "with space"})
    assert not one.is_error and one.structured_content == two.structured_content
    assert bad.is_error and bad.structured_content["error"]["type"] == "InvalidTurnId"
    assert model.questions == 1 and turn_rows(ws.sessions.engine) == 1
