"""MCPAgent over small MCP servers written for these tests (stdio, the official SDK on both
sides): routed to by the orchestrator like any specialist, the server's structured result
passed through intact, the allowlist enforced, timeouts and hostile inputs typed."""

from __future__ import annotations

import pytest

from baton.agents import AgentContext, OrchestratorAgent
from baton.errors import AgentFatalError, ConfigurationError
from baton.events import RecordingTracker
from baton.llm import FunctionModel, ScriptedModel, tool_call
from baton.messages import LLMResponse
from baton.specialists.mcp import (
    MCPAgent,
    MCPProtocolError,
    MCPResultError,
    MCPServerConfig,
    MCPServerUnavailableError,
    MCPTimeoutError,
    MCPToolArgumentsError,
    MCPToolError,
    MCPToolNotAllowedError,
    parse_mcp_options,
)
from mcp_test_servers import REVENUE, calls_in, finance_command, garbage_command


def mcp_model(arguments: dict, reply: str = "Pokemon revenue for two months.", tool: str = "revenue"):
    """The MCP specialist's own model: call ``tool`` with ``arguments``, then reply. It
    records the tool names it was offered."""
    offered: list[list[str]] = []

    def fn(messages, tools):
        offered.append(sorted(t.name for t in tools))
        if messages[-1].role == "tool":
            return reply
        return LLMResponse(tool_calls=[tool_call(tool, arguments)])

    return FunctionModel(fn), offered


@pytest.fixture
def finance(tmp_path):
    command, calls = finance_command(tmp_path)

    def make(allowed, **options) -> MCPAgent:
        return MCPAgent("finance_mcp", command, allowed_tools=allowed, description="Revenue by business unit", **options)

    return make, calls  # each test closes the agents it opens, on its own loop


async def test_orchestrator_routes_to_mcp_agent_and_passes_the_structured_result_through_exactly(finance):
    make, calls = finance
    model, offered = mcp_model({"unit": "pokemon", "year": 2025})
    agent = make(["revenue"], model=model)
    orchestrator = OrchestratorAgent("Finance", model=ScriptedModel([
        LLMResponse(tool_calls=[tool_call("finance_mcp", {"question": "Pokemon revenue by month in 2025"})]),
    ]))
    orchestrator.add_agent(agent)
    tracker = RecordingTracker()
    try:
        answer = await orchestrator.ask("Pokemon revenue by month in 2025?", tracker=tracker)
    finally:
        await agent.aclose()
    assert answer.error is None
    assert answer.data == {"unit": "pokemon", "year": 2025, "rows": REVENUE["pokemon"]}
    assert answer.content == "Pokemon revenue for two months."
    assert answer.metadata["mode"] == "passthrough" and answer.metadata["routed_to"] == "finance_mcp"
    assert answer.metadata["mcp_calls"][0]["tool"] == "revenue"
    assert offered == [["revenue"], ["revenue"]]  # only the allowlist reaches the model
    assert calls_in(calls) == [{"tool": "revenue", "arguments": {"unit": "pokemon", "year": 2025}}]
    types = tracker.types()
    assert types.index("mcp.call.start") < types.index("mcp.call.end")


async def test_a_tool_outside_the_allowlist_is_refused_and_never_sent(finance):
    make, calls = finance
    model, offered = mcp_model({}, reply="I could not do that.", tool="drop_everything")
    agent = make(["revenue"], model=model)
    orchestrator = OrchestratorAgent("Finance", model=ScriptedModel([
        LLMResponse(tool_calls=[tool_call("finance_mcp", {"question": "drop everything"})]),
        "The specialist refused.",
    ]))
    orchestrator.add_agent(agent)
    try:
        with pytest.raises(MCPToolNotAllowedError):
            await agent.call_tool("drop_everything", {})
        answer = await orchestrator.ask("Please drop everything")
        tools = await agent.link.tools()
    finally:
        await agent.aclose()
    assert "drop_everything" in {t.name for t in tools}  # the server has it ...
    assert offered == [["revenue"], ["revenue"]]  # ... the model is never offered it
    [failure] = answer.metadata["agent_errors"]
    assert failure["agent"] == "finance_mcp" and failure["error_type"] == "MCPToolNotAllowedError"
    assert failure["error"] == "'drop_everything' is not an allowed tool of 'finance_mcp'"
    assert answer.data is None
    assert calls_in(calls) == []  # nothing reached the server


async def test_a_hung_tool_times_out_with_a_typed_error_and_the_connection_survives(finance):
    make, calls = finance
    model, _ = mcp_model({}, reply="It timed out.", tool="hang")
    agent = make(["hang", "revenue"], model=model, call_timeout=0.5)
    try:
        with pytest.raises(MCPTimeoutError) as raised:
            await agent.call_tool("hang", {})
        assert raised.value.tool == "hang" and raised.value.server == "finance_mcp"
        result = await agent.run(AgentContext(user_question="hang please"), question="hang please")
        after = await agent.call_tool("revenue", {"unit": "epson"})
    finally:
        await agent.aclose()
    assert result.status == "error" and result.error_type == "MCPTimeoutError"
    assert result.ai_message.response_type == "error"
    assert after.structured == {"unit": "epson", "year": 2025, "rows": REVENUE["epson"]}
    recorded = [c["tool"] for c in calls_in(calls)]
    assert recorded.count("hang") == 2 and recorded.count("hang.cancelled") == 2  # the server was told to stop


async def test_a_server_that_never_answers_the_handshake_times_out(tmp_path):
    agent = MCPAgent("silent", garbage_command(tmp_path, "silent"), allowed_tools=["t"], connect_timeout=1.0)
    try:
        with pytest.raises(MCPTimeoutError):
            await agent.available_tools()
    finally:
        await agent.aclose()


@pytest.mark.parametrize("arguments, where", [
    ({"unit": 5}, "unit"),
    ({"year": 2025}, "arguments"),  # the required unit is missing
    (["pokemon"], None),
    ({"unit": "pokemon" * 50_000}, None),  # 350 kB of argument
    ({"unit": float("nan")}, None),
])
async def test_malformed_or_huge_arguments_get_typed_errors_and_reach_no_server(finance, arguments, where):
    make, calls = finance
    agent = make(["revenue"])
    try:
        with pytest.raises(MCPToolArgumentsError) as raised:
            await agent.call_tool("revenue", arguments)
    finally:
        await agent.aclose()
    if where:
        assert f"at {where}" in str(raised.value)
    assert calls_in(calls) == []


@pytest.mark.parametrize("mode, error", [
    ("list", MCPResultError),        # structured content that is not an object
    ("string", MCPResultError),
    ("nan", MCPResultError),         # NaN is no JSON value
    ("badcontent", MCPResultError),  # content that is not a list of blocks
    ("badimage", MCPResultError),    # binary content that is not base64
    ("error", MCPProtocolError),     # a JSON-RPC error
    ("nonjson", MCPTimeoutError),    # a line that is not JSON: no answer ever comes
])
async def test_a_server_answering_garbage_gets_a_typed_error(tmp_path, mode, error):
    agent = MCPAgent("garbage", garbage_command(tmp_path, mode), allowed_tools=["t"], call_timeout=1.5)
    try:
        with pytest.raises(error):
            await agent.call_tool("t", {"q": "x"})
    finally:
        await agent.aclose()


async def test_a_failing_tool_and_a_crashing_server_are_typed_and_the_next_call_reconnects(finance):
    make, calls = finance
    agent = make(["fail", "crash", "revenue"])
    try:
        with pytest.raises(MCPToolError) as failed:
            await agent.call_tool("fail", {})
        assert failed.value.text == "the ledger is closed"
        with pytest.raises(MCPServerUnavailableError):
            await agent.call_tool("crash", {})
        after = await agent.call_tool("revenue", {"unit": "pokemon"})
    finally:
        await agent.aclose()
    assert after.structured["rows"] == REVENUE["pokemon"]
    assert [c["tool"] for c in calls_in(calls)] == ["fail", "crash", "revenue"]


async def test_without_a_model_a_single_string_tool_is_asked_directly(finance):
    make, calls = finance
    agent = make(["lookup"])
    try:
        answer = await agent.ask("What is the answer?")
    finally:
        await agent.aclose()
    assert answer.data == {"question": "What is the answer?", "answer": 42}
    assert answer.content == "looked up"
    assert answer.images and answer.images[0]["mime_type"] == "image/png"
    assert answer.metadata["fast_path"] == "single_tool" and answer.metadata["llm_calls"] == 0
    assert calls_in(calls) == [{"tool": "lookup", "arguments": {"question": "What is the answer?"}}]


async def test_without_a_model_several_tools_need_one(finance):
    make, calls = finance
    agent = make(["revenue", "lookup"])
    try:
        with pytest.raises(AgentFatalError, match="needs a model"):
            await agent.run(AgentContext(user_question="revenue?"), question="revenue?")
    finally:
        await agent.aclose()
    assert calls_in(calls) == []


def test_configuration_requires_an_allowlist_and_reads_the_command_line():
    with pytest.raises(ConfigurationError, match="allowed_tools"):
        MCPAgent("x", "python server.py")
    with pytest.raises(ConfigurationError, match="allowlist"):
        MCPAgent("x", "python server.py", allowed_tools=[])
    with pytest.raises(ConfigurationError):
        MCPServerConfig.of("x", "ftp://example.com/mcp", ["t"])
    http = MCPServerConfig.of("weather", "https://mcp.example.com/mcp", ["forecast"], headers={"Authorization": "Bearer s3cret"})
    assert http.transport == "http" and "s3cret" not in repr(http)
    stdio = MCPServerConfig.of("files", "uvx 'my server' --root /data", ["read"])
    assert stdio.command == ("uvx", "my server", "--root", "/data")
    configs = parse_mcp_options(["weather=https://mcp.example.com/mcp", "files=uvx my-server"],
                                ["weather=forecast,alerts", "files=read"])
    assert [(c.name, c.allowed_tools) for c in configs] == [("weather", ("forecast", "alerts")), ("files", ("read",))]
    with pytest.raises(ConfigurationError, match="--mcp-allow files"):
        parse_mcp_options(["files=uvx my-server"], [])
    with pytest.raises(ConfigurationError, match="no --mcp gives"):
        parse_mcp_options(["files=uvx my-server"], ["files=read", "other=x"])
    with pytest.raises(ConfigurationError, match="NAME=VALUE"):
        parse_mcp_options(["just-a-command"], [])


async def test_the_mcp_specialists_own_context_usage_reaches_its_answer_and_the_pass_through(finance):
    make, _ = finance

    def fn(messages, tools):  # its own loop: a 200-token prompt, then a 600-token one
        if messages[-1].role == "tool":
            return LLMResponse(content="Pokemon revenue for two months.", usage={"input_tokens": 600})
        return LLMResponse(tool_calls=[tool_call("revenue", {"unit": "pokemon", "year": 2025})], usage={"input_tokens": 200})

    agent = make(["revenue"], model=FunctionModel(fn), context_window=1000)
    orchestrator = OrchestratorAgent("Finance", context_window=1000, model=ScriptedModel([
        LLMResponse(tool_calls=[tool_call("finance_mcp", {"question": "Pokemon revenue in 2025"})], usage={"input_tokens": 100}),
    ]))
    orchestrator.add_agent(agent)
    try:
        routed = await orchestrator.ask("Pokemon revenue in 2025?")
        direct = await agent.ask("Pokemon revenue in 2025?")
    finally:
        await agent.aclose()
    assert routed.metadata["mode"] == "passthrough" and routed.context_usage_pct == 60  # not the routing call's 10
    assert direct.context_usage_pct == 60
