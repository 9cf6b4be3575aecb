"""OpenAICompatible through the real ``openai`` SDK against the local stub server."""

from __future__ import annotations

import email.utils
import time

import pytest

from baton.errors import (
    ConfigurationError,
    ContextLengthExceededError,
    ProviderAuthError,
    ProviderBadRequestError,
    ProviderConnectionError,
    ProviderRateLimitError,
    ProviderServerError,
    ProviderTimeoutError,
)
from baton.llm import OpenAICompatible
from baton.messages import Message, Tool, ToolCall, ToolParameter
from stub_llm_server import (
    Reply,
    StubLLMServer,
    openai_error,
    openai_stream_text,
    openai_stream_tool_call,
    openai_text,
    openai_tool_calls,
    running_stub,
)


@pytest.fixture
def stub():
    with running_stub() as server:
        yield server


SQL_TOOL = Tool("run_sql", "Run a read-only SQL query", [ToolParameter("query", "string", "the SQL")])


def make(stub: StubLLMServer, **kw) -> OpenAICompatible:
    return OpenAICompatible("stub-model", api_key="test-key", base_url=stub.openai_base_url, timeout=kw.pop("timeout", 5.0), **kw)


async def collect(stream):
    deltas, final = [], None
    async for chunk in stream:
        if chunk.response is not None:
            final = chunk.response
        else:
            deltas.append(chunk.delta)
    return deltas, final


async def test_plain_answer_maps_content_usage_and_finish(stub):
    stub.script("openai", openai_text("42 orders", usage=(11, 7)))
    response = await make(stub).complete([Message.system("be brief"), Message.user("how many?")])
    assert response.content == "42 orders"
    assert response.usage == {"input_tokens": 11, "output_tokens": 7}
    assert (response.provider, response.model, response.finish_reason) == ("openai-compatible", "stub-model", "stop")
    sent = stub.requests_of("openai")[0]
    assert sent.headers["authorization"] == "Bearer test-key"
    assert sent.body["messages"] == [{"role": "system", "content": "be brief"}, {"role": "user", "content": "how many?"}]
    assert "tools" not in sent.body


async def test_tools_and_history_use_the_chat_completions_wire_format(stub):
    stub.script("openai", openai_text("done"))
    call = ToolCall(id="call_1", name="run_sql", arguments={"query": "SELECT 1"})
    broken = ToolCall(id="call_2", name="run_sql", raw_arguments='{"query": ', arguments_error="truncated")
    history = [
        Message.user("q"),
        Message.assistant("", [call, broken]),
        Message.tool(call, "1 row"),
        Message.tool(broken, "error: truncated"),
    ]
    await make(stub, max_tokens=50, temperature=0.1).complete(history, [SQL_TOOL])
    body = stub.requests_of("openai")[0].body
    assert body["tools"] == [{"type": "function", "function": {
        "name": "run_sql", "description": "Run a read-only SQL query", "parameters": SQL_TOOL.to_json_schema()}}]
    assistant = body["messages"][1]
    assert assistant["content"] is None
    assert [c["function"]["arguments"] for c in assistant["tool_calls"]] == ['{"query": "SELECT 1"}', "{}"]
    assert body["messages"][2] == {"role": "tool", "tool_call_id": "call_1", "content": "1 row"}
    assert body["max_tokens"] == 50 and body["temperature"] == 0.1  # not api.openai.com: the classic name


def test_api_openai_com_gets_max_completion_tokens():
    model = OpenAICompatible("gpt-x", api_key="k", max_tokens=10)
    assert "max_completion_tokens" in model._request([Message.user("q")], None, None, None)
    assert model.provider == "openai"  # the default label; any other base URL is "openai-compatible"


async def test_tool_calls_are_parsed(stub):
    stub.script("openai", openai_tool_calls([("call_a", "run_sql", '{"query": "SELECT 1"}'), ("call_b", "noop", "")]))
    response = await make(stub).complete([Message.user("q")], [SQL_TOOL])
    assert response.finish_reason == "tool_calls"
    assert [(c.id, c.name, c.arguments, c.arguments_error) for c in response.tool_calls] == [
        ("call_a", "run_sql", {"query": "SELECT 1"}, None),
        ("call_b", "noop", {}, None),
    ]


@pytest.mark.parametrize(
    "raw, why",
    [('{"query": "SELECT 1"', "truncated"), ("{'query': 1}", "invalid JSON"), ('["a"]', "JSON object")],
)
async def test_malformed_tool_arguments_never_crash(stub, raw, why):
    stub.script("openai", openai_tool_calls([("call_x", "run_sql", raw)]))
    call = (await make(stub).complete([Message.user("q")], [SQL_TOOL])).tool_calls[0]
    assert call.arguments == {} and call.raw_arguments == raw
    assert why in call.arguments_error


async def test_stream_text_then_final_response_with_usage(stub):
    stub.script("openai", openai_stream_text(["Hel", "lo ", "there"], usage=(5, 3)))
    deltas, final = await collect(make(stub).stream([Message.user("hi")]))
    assert deltas == ["Hel", "lo ", "there"]
    assert final.content == "Hello there" and final.usage == {"input_tokens": 5, "output_tokens": 3}
    assert stub.requests_of("openai")[0].body["stream_options"] == {"include_usage": True}


async def test_stream_assembles_tool_call_arguments(stub):
    stub.script("openai", openai_stream_tool_call("call_s", "run_sql", ['{"que', 'ry": "SEL', 'ECT 2"}']))
    deltas, final = await collect(make(stub).stream([Message.user("q")], [SQL_TOOL]))
    assert deltas == []
    assert final.finish_reason == "tool_calls"
    assert [(c.id, c.name, c.arguments) for c in final.tool_calls] == [("call_s", "run_sql", {"query": "SELECT 2"})]


async def test_stream_cut_off_mid_arguments_gives_arguments_error(stub):
    stub.script("openai", openai_stream_tool_call("call_t", "run_sql", ['{"query": "SEL'], finish=None))
    _, final = await collect(make(stub).stream([Message.user("q")], [SQL_TOOL]))
    call = final.tool_calls[0]
    assert call.arguments == {} and call.raw_arguments == '{"query": "SEL' and "truncated" in call.arguments_error


async def test_error_event_inside_a_stream_is_a_provider_error(stub):
    stub.script("openai", Reply(sse=[(None, {"error": {"message": "upstream overloaded", "type": "server_error"}})]))
    with pytest.raises(ProviderServerError, match="upstream overloaded"):
        await collect(make(stub).stream([Message.user("q")]))


async def test_429_carries_retry_after_seconds(stub):
    stub.script("openai", openai_error(429, "slow down", type="rate_limit_error", headers={"retry-after": "7"}))
    with pytest.raises(ProviderRateLimitError) as info:
        await make(stub).complete([Message.user("q")])
    assert info.value.retry_after == 7.0 and info.value.status_code == 429 and info.value.retryable


async def test_429_carries_retry_after_http_date(stub):
    when = email.utils.formatdate(time.time() + 120, usegmt=True)
    stub.script("openai", openai_error(429, "slow down", headers={"retry-after": when}))
    with pytest.raises(ProviderRateLimitError) as info:
        await make(stub).complete([Message.user("q")])
    assert 100 < info.value.retry_after <= 120


async def test_429_without_header_has_no_retry_after(stub):
    stub.script("openai", openai_error(429, "slow down"))
    with pytest.raises(ProviderRateLimitError) as info:
        await make(stub).complete([Message.user("q")])
    assert info.value.retry_after is None


async def test_500_is_a_retryable_server_error(stub):
    stub.script("openai", openai_error(500, "boom", type="server_error"))
    with pytest.raises(ProviderServerError) as info:
        await make(stub).complete([Message.user("q")])
    assert info.value.retryable and info.value.status_code == 500 and info.value.provider == "openai-compatible"
    assert len(stub.requests_of("openai")) == 1  # the SDK's own retries are off: the router owns retrying


async def test_slow_response_times_out(stub):
    stub.script("openai", Reply(delay=30, body={}))
    with pytest.raises(ProviderTimeoutError) as info:
        await make(stub, timeout=0.3).complete([Message.user("q")])
    assert info.value.retryable


async def test_unreachable_server_is_a_connection_error():
    model = OpenAICompatible("m", api_key="k", base_url="http://127.0.0.1:9/v1", timeout=2)
    with pytest.raises(ProviderConnectionError):
        await model.complete([Message.user("q")])


@pytest.mark.parametrize("status", [401, 403])
async def test_auth_errors_are_not_retryable(stub, status):
    stub.script("openai", openai_error(status, "bad key", type="invalid_api_key"))
    with pytest.raises(ProviderAuthError) as info:
        await make(stub).complete([Message.user("q")])
    assert not info.value.retryable


async def test_context_length_by_error_code(stub):
    stub.script("openai", openai_error(400, "too much", code="context_length_exceeded"))
    with pytest.raises(ContextLengthExceededError):
        await make(stub).complete([Message.user("q")])


async def test_context_length_by_message_when_the_server_sends_no_code(stub):
    # vLLM's wording: a 400 with only a message.
    stub.script("openai", openai_error(400, "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens"))
    with pytest.raises(ContextLengthExceededError):
        await make(stub).complete([Message.user("q")])


async def test_other_400_is_a_bad_request_not_a_context_error(stub):
    stub.script("openai", openai_error(400, "Invalid value for 'tools'", code="invalid_value"))
    with pytest.raises(ProviderBadRequestError) as info:
        await make(stub).complete([Message.user("q")])
    assert not isinstance(info.value, ContextLengthExceededError) and not info.value.retryable


async def test_one_client_serves_concurrent_requests(stub):
    import asyncio

    model = make(stub)
    client = model._client
    stub.script("openai", *(openai_text(f"answer {i}") for i in range(20)))
    answers = await asyncio.gather(*(model.complete([Message.user(str(i))]) for i in range(20)))
    assert sorted(a.content for a in answers) == sorted(f"answer {i}" for i in range(20))
    assert model._client is client


def test_missing_key_fails_at_construction(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_ADMIN_KEY", raising=False)
    with pytest.raises(ConfigurationError, match="OPENAI_API_KEY"):
        OpenAICompatible("gpt-x")


def _text_chunk(text: str) -> dict:
    return {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "stub-model",
            "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}


async def test_a_corrupted_stream_frame_after_text_is_a_provider_error(stub):
    stub.script("openai", Reply(sse=[(None, _text_chunk("Hel")), (None, "{not json")]))
    deltas = []
    with pytest.raises(ProviderServerError, match="not valid JSON") as info:
        async for chunk in make(stub).stream([Message.user("q")]):
            deltas.append(chunk.delta)
    assert deltas == ["Hel"] and info.value.retryable


async def test_a_200_that_is_not_a_completion_is_a_typed_error(stub):
    # A wrong base URL answered by a web page: the SDK hands back a str, not a completion.
    stub.script("openai", Reply(body="<html>LM Studio</html>"))
    with pytest.raises(ProviderBadRequestError, match="check the base URL"):
        await make(stub).complete([Message.user("q")])


@pytest.mark.parametrize("status", [409, 425, 503])
async def test_transient_statuses_are_retryable_and_keep_retry_after(stub, status):
    stub.script("openai", openai_error(status, "try again", type="server_error", headers={"retry-after": "4"}))
    with pytest.raises(ProviderServerError) as info:
        await make(stub).complete([Message.user("q")])
    assert info.value.retryable and info.value.status_code == status and info.value.retry_after == 4.0


async def test_streamed_tool_call_fragments_without_index_are_one_call(stub):
    def chunk(part: dict, finish: str | None = None) -> dict:
        return {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "stub-model",
                "choices": [{"index": 0, "delta": {"tool_calls": [part]}, "finish_reason": finish}]}

    stub.script("openai", Reply(sse=[
        (None, chunk({"id": "call_a", "type": "function", "function": {"name": "run_sql", "arguments": ""}})),
        (None, chunk({"function": {"arguments": '{"query": '}})),
        (None, chunk({"function": {"arguments": '"select 1"}'}})),
        (None, chunk({"id": "call_b", "type": "function", "function": {"name": "run_sql", "arguments": '{"query": "x"}'}},
                     "tool_calls")),
        (None, "[DONE]"),
    ]))
    _, final = await collect(make(stub).stream([Message.user("q")], [SQL_TOOL]))
    assert [(c.id, c.name, c.arguments) for c in final.tool_calls] == [
        ("call_a", "run_sql", {"query": "select 1"}), ("call_b", "run_sql", {"query": "x"})]


def test_the_wire_form_of_the_same_tools_is_made_once_and_again_when_a_tool_changed():
    from baton.llm.openai_compat import WireTools, to_openai_tools

    wire = WireTools(size=2)
    lookup = Tool(name="lookup", description="Find a row", parameters=[ToolParameter("key", "string", "the key")])
    first = wire([lookup])
    assert first == to_openai_tools([lookup]) and wire([lookup]) is first
    assert wire([Tool(name="lookup", description="Find a row", parameters=list(lookup.parameters))]) is not first  # another Tool
    lookup.description = "Find one row"
    assert wire([lookup])[0]["function"]["description"] == "Find one row"
