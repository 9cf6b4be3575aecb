"""Anthropic through the real ``anthropic`` SDK against the local stub server."""

from __future__ import annotations

import pytest

from baton.errors import (
    ConfigurationError,
    ContextLengthExceededError,
    ProviderAuthError,
    ProviderBadRequestError,
    ProviderRateLimitError,
    ProviderServerError,
    ProviderTimeoutError,
)
from baton.llm import Anthropic
from baton.llm.anthropic_provider import to_anthropic_messages
from baton.messages import Message, Tool, ToolCall, ToolParameter
from stub_llm_server import (
    Reply,
    StubLLMServer,
    anthropic_error,
    anthropic_message,
    anthropic_stream,
    anthropic_text,
    running_stub,
)


@pytest.fixture
def stub():
    with running_stub() as server:
        yield server


SQL_TOOL = Tool("run_sql", "Run a read-only SQL query", [ToolParameter("query", "string", "the SQL")])


def make(stub: StubLLMServer, **kw) -> Anthropic:
    return Anthropic("claude-stub", api_key="test-key", base_url=stub.base_url, timeout=kw.pop("timeout", 5.0), **kw)


async def collect(stream):
    deltas, final = [], None
    async for chunk in stream:
        if chunk.response is not None:
            final = chunk.response
        else:
            deltas.append(chunk.delta)
    return deltas, final


async def test_plain_answer_with_separate_system_prompt(stub):
    stub.script("anthropic", anthropic_text("42 orders", usage=(13, 8)))
    response = await make(stub).complete([Message.system("be brief"), Message.user("how many?")])
    assert (response.content, response.finish_reason, response.provider) == ("42 orders", "stop", "anthropic")
    assert response.usage == {"input_tokens": 13, "output_tokens": 8}
    sent = stub.requests_of("anthropic")[0]
    # the SDK sends the key as x-api-key or, in newer versions, as a bearer token
    assert "test-key" in sent.headers.get("x-api-key", "") + sent.headers.get("authorization", "")
    assert sent.body["system"] == "be brief"
    assert sent.body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "how many?"}]}]
    assert sent.body["max_tokens"] == 4096


async def test_usage_counts_cached_prompt_tokens(stub):
    reply = anthropic_text("ok")
    reply.body["usage"].update(cache_read_input_tokens=100, cache_creation_input_tokens=20)
    stub.script("anthropic", reply)
    response = await make(stub).complete([Message.user("q")])
    assert response.usage == {"input_tokens": 133, "output_tokens": 8}


async def test_tool_use_round_trip_in_wire_format(stub):
    stub.script("anthropic", anthropic_message(
        [{"type": "text", "text": "Let me check."},
         {"type": "tool_use", "id": "toolu_1", "name": "run_sql", "input": {"query": "SELECT 1"}}],
        stop_reason="tool_use"))
    response = await make(stub).complete([Message.user("q")], [SQL_TOOL])
    assert response.content == "Let me check." and response.finish_reason == "tool_calls"
    assert [(c.id, c.name, c.arguments) for c in response.tool_calls] == [("toolu_1", "run_sql", {"query": "SELECT 1"})]
    assert stub.requests_of("anthropic")[0].body["tools"] == [
        {"name": "run_sql", "description": "Run a read-only SQL query", "input_schema": SQL_TOOL.to_json_schema()}]


def test_consecutive_tool_results_merge_into_one_user_turn():
    a = ToolCall(id="t1", name="run_sql", arguments={"query": "SELECT 1"})
    b = ToolCall(id="t2", name="run_sql", raw_arguments="{", arguments_error="truncated")
    system, turns = to_anthropic_messages([
        Message.system("rules"),
        Message.user("q"),
        Message.assistant("", [a, b]),
        Message.tool(a, "1 row"),
        Message.tool(b, "error: bad arguments"),
        Message.system("IMPORTANT: Stop making tool calls."),
    ])
    assert system == "rules"
    assert [t["role"] for t in turns] == ["user", "assistant", "user"]
    assert turns[1]["content"] == [
        {"type": "tool_use", "id": "t1", "name": "run_sql", "input": {"query": "SELECT 1"}},
        {"type": "tool_use", "id": "t2", "name": "run_sql", "input": {}},
    ]
    assert turns[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "t1", "content": "1 row"},
        {"type": "tool_result", "tool_use_id": "t2", "content": "error: bad arguments"},
        {"type": "text", "text": "IMPORTANT: Stop making tool calls."},
    ]


async def test_stream_text_and_tool_use(stub):
    stub.script("anthropic", anthropic_stream(
        [{"type": "text", "pieces": ["Check", "ing"]},
         {"type": "tool_use", "id": "toolu_s", "name": "run_sql", "pieces": ['{"query": ', '"SELECT 2"}']}],
        stop_reason="tool_use", usage=(9, 4)))
    deltas, final = await collect(make(stub).stream([Message.user("q")], [SQL_TOOL]))
    assert deltas == ["Check", "ing"]
    assert final.content == "Checking" and final.finish_reason == "tool_calls"
    assert final.usage == {"input_tokens": 9, "output_tokens": 4}
    assert [(c.id, c.arguments) for c in final.tool_calls] == [("toolu_s", {"query": "SELECT 2"})]
    assert stub.requests_of("anthropic")[0].body["stream"] is True


async def test_stream_with_broken_tool_json_keeps_the_text(stub):
    stub.script("anthropic", anthropic_stream(
        [{"type": "tool_use", "id": "toolu_b", "name": "run_sql", "pieces": ['{"query": "SEL']}], stop_reason="max_tokens"))
    _, final = await collect(make(stub).stream([Message.user("q")], [SQL_TOOL]))
    call = final.tool_calls[0]
    assert call.arguments == {} and call.raw_arguments == '{"query": "SEL' and "truncated" in call.arguments_error
    assert final.finish_reason == "length"


async def test_overloaded_error_event_mid_stream_is_retryable(stub):
    stub.script("anthropic", Reply(sse=[("error", {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})]))
    with pytest.raises(ProviderServerError) as info:
        await collect(make(stub).stream([Message.user("q")]))
    assert info.value.retryable


async def test_429_with_retry_after(stub):
    stub.script("anthropic", anthropic_error(429, "rate_limit_error", "slow down", headers={"retry-after": "2"}))
    with pytest.raises(ProviderRateLimitError) as info:
        await make(stub).complete([Message.user("q")])
    assert info.value.retry_after == 2.0


@pytest.mark.parametrize("status, type_", [(500, "api_error"), (529, "overloaded_error")])
async def test_server_errors_and_overloaded(stub, status, type_):
    stub.script("anthropic", anthropic_error(status, type_, "try later"))
    with pytest.raises(ProviderServerError) as info:
        await make(stub).complete([Message.user("q")])
    assert info.value.status_code == status


async def test_timeout(stub):
    stub.script("anthropic", Reply(delay=30, body={}))
    with pytest.raises(ProviderTimeoutError):
        await make(stub, timeout=0.3).complete([Message.user("q")])


async def test_auth_error(stub):
    stub.script("anthropic", anthropic_error(401, "authentication_error", "invalid x-api-key"))
    with pytest.raises(ProviderAuthError):
        await make(stub).complete([Message.user("q")])


async def test_prompt_too_long_is_a_context_length_error(stub):
    stub.script("anthropic", anthropic_error(400, "invalid_request_error", "prompt is too long: 208310 tokens > 200000 maximum"))
    with pytest.raises(ContextLengthExceededError):
        await make(stub).complete([Message.user("q")])


async def test_other_invalid_request_is_bad_request(stub):
    stub.script("anthropic", anthropic_error(400, "invalid_request_error", "messages: roles must alternate"))
    with pytest.raises(ProviderBadRequestError) as info:
        await make(stub).complete([Message.user("q")])
    assert not isinstance(info.value, ContextLengthExceededError)


def test_missing_credentials_fail_at_construction(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    with pytest.raises(ConfigurationError, match="ANTHROPIC_API_KEY"):
        Anthropic("claude-x")


async def test_a_corrupted_stream_frame_is_a_provider_error(stub):
    stub.script("anthropic", Reply(sse=[("message_start", "{broken")]))
    with pytest.raises(ProviderServerError, match="not valid JSON"):
        await collect(make(stub).stream([Message.user("q")]))


async def test_a_200_that_is_not_a_message_is_a_typed_error(stub):
    stub.script("anthropic", Reply(body="<html>proxy login</html>"))
    with pytest.raises(ProviderBadRequestError, match="check the base URL"):
        await make(stub).complete([Message.user("q")])


async def test_thinking_blocks_are_not_answer_text(stub):
    stub.script("anthropic", anthropic_message([{"type": "thinking", "thinking": "let me see", "signature": "s"},
                                                {"type": "text", "text": "42"}]))
    assert (await make(stub).complete([Message.user("q")])).content == "42"
