"""MCP over Streamable HTTP, driven by the official SDK's own client against a real socket:
the demo's verified question answered with its rows, a wrong key refused before anything
runs, one workspace's key never reaching another workspace's data, a cancelled question
stopping, and an ``MCPAgent`` asking Baton's own MCP endpoint over HTTP."""

from __future__ import annotations

import asyncio
import json

import httpx
import httpx2
import pytest
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client

from baton.agents import AgentResult, BaseAgent, OrchestratorAgent
from baton.demo.workspace import build_demo_workspace
from baton.llm import FunctionModel, tool_call
from baton.mcp import mcp_http_router
from baton.messages import LLMResponse
from baton.response import AIMessage
from baton.specialists.mcp import MCPAgent, MCPAuthenticationError
from baton.state import ApiKeys, SessionStore
from baton.workspace import Workspace, Workspaces
from mcp_test_servers import served

DEMO_QUESTION = "What was Pokemon revenue by month in 2025?"
KEY_DEMO, KEY_OTHER = "bt_demo_key_for_tests", "bt_other_key_for_tests"


class Ledger(BaseAgent):
    """The other workspace's only specialist: its own rows, which the demo must never see."""

    async def run(self, context, **kw):
        message = AIMessage(content="other ledger", data=[{"account": "only-in-other", "balance": 7}])
        return AgentResult(agent_name=self.name, result=message.content, ai_message=message)


class Slow(BaseAgent):
    """Runs until cancelled; says when it started and when it was cancelled."""

    def __init__(self, name: str) -> None:
        super().__init__(name, "Answers slowly.")
        self.started, self.cancelled = asyncio.Event(), asyncio.Event()

    async def run(self, context, **kw):
        self.started.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            self.cancelled.set()
            raise
        return AgentResult(agent_name=self.name, result="finished")


def routed_to(agent: str) -> FunctionModel:
    def route(messages, tools):
        if messages[-1].role == "tool":
            return "done"
        return LLMResponse(tool_calls=[tool_call(agent, {"question": messages[-1].content})])

    return FunctionModel(route)


@pytest.fixture
async def endpoint(tmp_path):
    """Three workspaces behind one MCP endpoint: the demo, another with its own ledger (its
    conversations in the demo's own session database, told apart only by workspace), and a
    slow one; each key opens one."""
    demo = build_demo_workspace(tmp_path / "demo")
    other_orchestrator = OrchestratorAgent("OtherOrchestrator", model=routed_to("ledger"))
    other_orchestrator.add_agent(Ledger("ledger", "The other company's ledger."))
    other = Workspace("other", other_orchestrator, SessionStore(tmp_path / "demo" / "sessions.sqlite"))
    slow_agent = Slow("slow")
    slow_orchestrator = OrchestratorAgent("SlowOrchestrator", model=routed_to("slow"))
    slow_orchestrator.add_agent(slow_agent)
    slow = Workspace("slow", slow_orchestrator)
    workspaces = Workspaces([demo, other, slow])
    keys = ApiKeys({KEY_DEMO: "demo", KEY_OTHER: "other", "bt_slow_key_for_tests": "slow"})
    async with workspaces:
        async with served(mcp_http_router(workspaces, keys)) as url:
            yield Endpoint(url, slow_agent, demo)


class Endpoint(tuple):
    """(url, the slow workspace's agent), and the demo workspace."""

    def __new__(cls, url, slow, demo):
        made = super().__new__(cls, (url, slow))
        made.demo = demo
        return made


def client(url: str, key: str, **options) -> Client:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=httpx2.Timeout(60.0, read=120.0))
    return Client(streamable_http_client(url, http_client=http), read_timeout_seconds=120, **options)


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_ask_a_verified_question_over_http_and_get_its_rows(endpoint, mode):
    url, _ = endpoint
    progress: list[str | None] = []

    async def on_progress(done, total, message):
        progress.append(message)

    async with client(url, KEY_DEMO, mode=mode) as mcp:
        tools = {t.name for t in (await mcp.list_tools()).tools}
        answer = await mcp.call_tool("ask", {"question": DEMO_QUESTION, "chart_image": False}, progress_callback=on_progress)
    assert tools == {"ask", "list_specialists", "check_sql", "search_memory", "list_verified_questions"}
    assert not answer.is_error
    rows = answer.structured_content["rows"]
    assert len(rows) == 12 and rows[0] == {"month": "2025-01", "revenue": 752670.22}
    assert answer.structured_content["llm_calls"] == 0
    assert "agent.start: pokemon_finance" in progress


async def test_a_wrong_key_is_refused_before_anything_runs(endpoint):
    url, _ = endpoint
    demo = endpoint.demo
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "ask", "arguments": {"question": DEMO_QUESTION}}}
    headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2026-07-28"}
    async with httpx.AsyncClient() as raw:
        wrong = await raw.post(url, json=body, headers={**headers, "Authorization": "Bearer bt_not_a_key"})
        missing = await raw.post(url, json=body, headers=headers)
        cookie_only = await raw.post(url, json=body, headers={**headers, "Cookie": f"baton_key={KEY_DEMO}"})
    assert wrong.status_code == 401 and wrong.json() == {"detail": "missing or invalid API key"}
    assert wrong.headers["www-authenticate"] == "Bearer"
    assert missing.status_code == 401 and missing.json() == {"detail": "an API key is required"}
    assert cookie_only.status_code == 401  # the page's cookie is not an MCP credential
    with pytest.raises(BaseExceptionGroup) as refused:  # the SDK's client cannot even connect
        async with client(url, "bt_not_a_key") as mcp:
            await mcp.list_tools()
    assert refused.group_contains(MCPError)
    assert await demo.sessions.list("demo") == []  # nothing was asked
    async with client(url, KEY_DEMO) as mcp:
        history = await mcp.call_tool("ask", {"question": "Show only the top 5", "session_id": "none"})
    assert history.structured_content["error"]["type"] == "SessionNotFound"


async def test_one_workspaces_key_never_reaches_another_workspaces_data(endpoint):
    url, _ = endpoint
    async with client(url, KEY_DEMO) as demo:
        demo_answer = await demo.call_tool("ask", {"question": DEMO_QUESTION, "chart_image": False})
        demo_session = demo_answer.structured_content["session_id"]
        demo_specialists = (await demo.call_tool("list_specialists", {})).structured_content
    async with client(url, KEY_OTHER) as other:
        specialists = (await other.call_tool("list_specialists", {})).structured_content
        own = await other.call_tool("ask", {"question": "What is in the ledger?"})
        borrowed = await other.call_tool("ask", {"question": "Show only the top 5", "session_id": demo_session})
        memory = await other.call_tool("search_memory", {"query": "Pokemon revenue"})
        schema = json.loads((await other.read_resource("baton://workspace/schema")).contents[0].text)
        verified = (await other.call_tool("list_verified_questions", {})).structured_content
    assert specialists["workspace"] == "other" and [s["name"] for s in specialists["specialists"]] == ["ledger"]
    assert "ledger" not in {s["name"] for s in demo_specialists["specialists"]}
    assert own.structured_content["rows"] == [{"account": "only-in-other", "balance": 7}]
    assert borrowed.is_error and borrowed.structured_content["error"]["type"] == "SessionNotFound"
    assert memory.is_error and memory.structured_content["error"]["type"] == "MemoryNotConfigured"
    assert schema == {"workspace": "other", "connections": []}
    assert verified == {"verified_questions": []}


async def test_an_mcp_session_of_one_workspace_is_unknown_to_another_key(endpoint):
    """The handshake era's session ids live in each workspace's own session manager."""
    url, _ = endpoint
    base = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}
    async with httpx.AsyncClient() as raw:
        opened = await raw.post(url, json=initialize, headers={**base, "Authorization": f"Bearer {KEY_DEMO}"})
        session = opened.headers["mcp-session-id"]
        version = {"MCP-Protocol-Version": "2025-11-25", "Mcp-Session-Id": session}
        await raw.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                       headers={**base, **version, "Authorization": f"Bearer {KEY_DEMO}"})
        foreign = await raw.post(url, json=listing, headers={**base, **version, "Authorization": f"Bearer {KEY_OTHER}"})
        own = await raw.post(url, json=listing, headers={**base, **version, "Authorization": f"Bearer {KEY_DEMO}"})
    assert opened.status_code == 200
    assert foreign.status_code == 404
    assert own.status_code == 200 and '"name":"ask"' in own.text.replace(" ", "")


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_cancelled_question_stops_over_http(endpoint, mode):
    url, slow = endpoint
    async with client(url, "bt_slow_key_for_tests", mode=mode) as mcp:
        call = asyncio.ensure_future(mcp.call_tool("ask", {"question": "take your time"}))
        await asyncio.wait_for(slow.started.wait(), 30)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        await asyncio.wait_for(slow.cancelled.wait(), 30)  # the question itself stopped
        assert (await mcp.call_tool("list_specialists", {})).structured_content["workspace"] == "slow"


async def test_an_mcp_agent_asks_batons_own_mcp_endpoint_over_http(endpoint):
    """Baton as an MCP server, consumed by Baton's MCP specialist: without a model the
    single string tool (``ask``) is called with the question; the data is its structured content."""
    url, _ = endpoint
    remote = MCPAgent("remote_demo", url, allowed_tools=["ask"], headers={"Authorization": f"Bearer {KEY_DEMO}"})
    refused = MCPAgent("remote_wrong_key", url, allowed_tools=["ask"], headers={"Authorization": "Bearer bt_wrong"},
                       connect_timeout=10)
    try:
        answer = await remote.ask(DEMO_QUESTION)
        with pytest.raises(MCPAuthenticationError) as wrong_key:
            await refused.available_tools()
        assert wrong_key.value.status == 401
    finally:
        await remote.aclose()
        await refused.aclose()
    assert answer.data["rows"][0] == {"month": "2025-01", "revenue": 752670.22}
    assert answer.data["sql"].startswith("SELECT month")
    assert answer.images and answer.images[0]["mime_type"] == "image/png"  # the chart, as the remote rendered it
    assert answer.metadata["mcp_transport"] == "http"


async def test_baton_serve_speaks_mcp_at_slash_mcp_behind_the_workspace_key(tmp_path):
    """``create_app`` (what ``baton serve`` and ``baton demo`` run) mounts the endpoint at
    ``/mcp``; its lifespan ends MCP sessions before it closes the workspaces."""
    from baton.events import RecordingTracker
    from baton.server import create_app

    demo = build_demo_workspace(tmp_path / "demo")
    app = create_app(Workspaces([demo]), ApiKeys({KEY_DEMO: "demo"}), tracker=RecordingTracker())
    async with served(app, lifespan="on") as url:
        async with client(url, KEY_DEMO) as mcp:
            answer = await mcp.call_tool("ask", {"question": DEMO_QUESTION, "chart_image": False})
        async with httpx.AsyncClient() as raw:
            refused = await raw.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                                     headers={"Authorization": "Bearer bt_wrong", "Accept": "application/json, text/event-stream"})
            api = await raw.get(url.replace("/mcp", "/v1/agents"), headers={"Authorization": f"Bearer {KEY_DEMO}"})
    assert answer.structured_content["rows"][0] == {"month": "2025-01", "revenue": 752670.22}
    assert refused.status_code == 401
    assert api.status_code == 200  # the rest of the API is untouched
    assert demo.closed  # the app owned the workspace and closed it after the MCP sessions
