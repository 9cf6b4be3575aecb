"""The loop's core rules: answers, events and usage, streaming, the guard and its partial
answer, early exit, refunds, and the caller's messages left alone."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from baton.errors import (
    AllProvidersFailedError,
    ConfigurationError,
    ProviderAuthError,
    ProviderConnectionError,
    ProviderRateLimitError,
    ProviderServerError,
)
from baton.events import RecordingTracker
from baton.llm.testing import FunctionModel, ScriptedModel, tool_call
from baton.loop import LoopResult, LoopSettings, ToolCallRecord, run_loop
from baton.messages import LLMResponse, Message, StreamChunk, Tool, ToolParameter
from baton.tools import FunctionTool, ToolOutput

WINDOW = 100_000


def lookup_tool(name: str = "lookup", answer: str | None = None) -> FunctionTool:
    async def lookup(key: str) -> str:
        return answer if answer is not None else f"{name}:{key}=42"

    return FunctionTool(Tool(name, f"Look a key up in {name}.", [ToolParameter("key", "string", "the key")]), lookup)


def question() -> list[Message]:
    return [Message.system("You answer with tools."), Message.user("What is the answer?")]


def calls_tool(*keys: str, name: str = "lookup", content: str = "", usage: dict[str, int] | None = None) -> LLMResponse:
    return LLMResponse(content=content, tool_calls=[tool_call(name, {"key": k}) for k in keys], usage=usage or {})


async def test_plain_answer_without_tools():
    model = ScriptedModel([LLMResponse(content="Forty-two.", usage={"input_tokens": 10, "output_tokens": 3})])
    result = await run_loop(model, question(), context_window=WINDOW)
    assert isinstance(result, LoopResult)
    assert result.content == "Forty-two."
    assert (result.iterations, result.llm_calls, result.partial, result.stopped_early) == (1, 1, False, False)
    assert result.finish_reason == "stop"
    assert (result.model, result.provider) == ("scripted-model", "scripted")
    assert result.messages[-1] == Message("assistant", "Forty-two.")
    assert model.calls[0][1] == []  # no tools offered when there are none


async def test_tool_turn_then_answer_feeds_results_back():
    model = ScriptedModel([calls_tool("a"), "The answer is 42."])
    result = await run_loop(model, question(), [lookup_tool()], context_window=WINDOW)
    assert result.content == "The answer is 42."
    assert result.iterations == 2
    sent = model.calls[1][0]
    assert [m.role for m in sent] == ["system", "user", "assistant", "tool"]
    assert sent[3].content == "lookup:a=42" and sent[3].tool_call_id == sent[2].tool_calls[0].id
    assert [t.name for t in model.calls[0][1]] == ["lookup"]
    [record] = result.tool_calls
    assert isinstance(record, ToolCallRecord)
    assert (record.iteration, record.output.text, record.is_error, record.error) == (1, "lookup:a=42", False, None)
    assert record.duration_ms >= 0


async def test_events_in_order_with_usage_accumulated():
    tracker = RecordingTracker()
    model = ScriptedModel([
        calls_tool("a", "b", usage={"input_tokens": 100, "output_tokens": 20}),
        LLMResponse(content="done", usage={"input_tokens": 180, "output_tokens": 7}),
    ])
    result = await run_loop(model, question(), [lookup_tool()], context_window=WINDOW, tracker=tracker, workflow_id="wf-1")
    assert result.usage == {"input_tokens": 280, "output_tokens": 27}
    assert tracker.usage == result.usage  # the usage travelled on llm.end events
    types = tracker.types()
    assert types[:2] == ["llm.start", "llm.end"]
    assert sorted(types[2:6]) == ["tool.end", "tool.end", "tool.start", "tool.start"]
    assert types[6:] == ["llm.start", "llm.end"]
    assert all(e.workflow_id == "wf-1" for e in tracker.events)
    end = tracker.events[1].data
    assert end["model"] == "scripted-model" and end["provider"] == "scripted"
    assert end["usage"] == {"input_tokens": 100, "output_tokens": 20} and end["duration_ms"] >= 0
    tool_ends = [e.data for e in tracker.events if e.type == "tool.end"]
    assert {d["call_id"] for d in tool_ends} == {r.call.id for r in result.tool_calls}
    assert all(d["name"] == "lookup" and d["is_error"] is False and d["duration_ms"] >= 0 for d in tool_ends)


async def test_context_usage_pct_reports_the_last_prompt():
    model = ScriptedModel([LLMResponse(content="ok", usage={"input_tokens": 2_500})])
    result = await run_loop(model, question(), context_window=10_000)
    assert result.context_usage_pct == 25
    estimated = await run_loop(ScriptedModel(["ok"]), [Message.user("x " * 400)], context_window=1_000)
    assert 35 <= estimated.context_usage_pct <= 45  # ~400 tokens of 1000, by our own estimate


async def test_streaming_emits_token_events_and_runs_tools():
    tracker = RecordingTracker()
    model = ScriptedModel([calls_tool("a"), "The answer is forty two."])
    result = await run_loop(model, question(), [lookup_tool()], context_window=WINDOW,
                            settings=LoopSettings(stream=True), tracker=tracker)
    tokens = [e.data["delta"] for e in tracker.events if e.type == "llm.token"]
    assert len(tokens) == 5 and "".join(tokens) == "The answer is forty two."
    assert result.content == "The answer is forty two." and len(result.tool_calls) == 1
    assert all(e.data["iteration"] == 2 for e in tracker.events if e.type == "llm.token")


class DroppingStream:
    """A ChatModel whose first stream breaks off without its final response."""

    provider, model = "flaky", "flaky-1"

    def __init__(self) -> None:
        self.streams = 0

    async def complete(self, messages, tools=None, **kw):  # pragma: no cover - the loop streams
        raise AssertionError("complete() should not be used when streaming")

    async def stream(self, messages, tools=None, **kw):
        self.streams += 1
        yield StreamChunk(delta="Partial ")
        if self.streams > 1:
            yield StreamChunk(delta="answer")
            yield StreamChunk(response=LLMResponse(content="Partial answer", model=self.model, provider=self.provider))


async def test_stream_without_final_response_is_a_refunded_connection_error():
    tracker = RecordingTracker()
    model = DroppingStream()
    result = await run_loop(model, question(), context_window=WINDOW, settings=LoopSettings(stream=True, max_iterations=1,
                            refund_backoff_s=0), tracker=tracker)
    assert result.content == "Partial answer" and result.refunds == 1 and result.llm_calls == 2
    [refund] = [e for e in tracker.events if e.type == "loop.refund"]
    assert refund.data["error_type"] == ProviderConnectionError.__name__


async def test_partial_answer_at_max_iterations_without_extra_llm_call():
    tracker = RecordingTracker()
    # exactly three scripted responses: a fourth call would raise ScriptExhaustedError
    model = ScriptedModel([calls_tool("north", content="Checking north."), calls_tool("south"), calls_tool("east", "west")])
    broken = FunctionTool(Tool("broken", "Fails.", []), lambda: 1 / 0)
    model._responses[2].tool_calls.append(tool_call("broken"))
    history = [Message.system("s"), Message.user("earlier?"), Message.assistant("Earlier answer."), Message.user("now?")]
    result = await run_loop(model, history, [lookup_tool(), broken], context_window=WINDOW,
                            settings=LoopSettings(max_iterations=3), tracker=tracker)
    assert result.partial and not result.stopped_early
    assert (result.iterations, result.llm_calls, result.finish_reason) == (3, 3, "max_iterations")
    assert model.remaining == 0
    for key in ("north", "south", "east", "west"):
        assert f"lookup:{key}=42" in result.content
    assert 'Result of lookup({"key": "north"}) at step 1' in result.content
    assert "Last note: Checking north." in result.content and "Earlier answer" not in result.content
    assert "1 tool call failed" in result.content and "ZeroDivisionError" not in result.content
    assert result.content.startswith("I reached the maximum number of analysis steps (3)")
    assert result.messages[-1] == Message("assistant", result.content)
    assert len(result.tool_calls) == 5
    [event] = [e for e in tracker.events if e.type == "loop.max_iterations"]
    assert event.data["tool_calls"] == 5 and event.data["max_iterations"] == 3


async def test_stop_after_tools_saves_the_next_llm_call():
    seen: list[list[ToolCallRecord]] = []

    def stop(records: list[ToolCallRecord]) -> bool:
        seen.append(records)
        return records[0].output.text.endswith("=42")

    model = ScriptedModel([calls_tool("a", content="Asking the lookup tool.")])  # one response only
    result = await run_loop(model, question(), [lookup_tool()], context_window=WINDOW, stop_after_tools=stop)
    assert result.stopped_early and not result.partial
    assert (result.llm_calls, result.iterations, result.finish_reason) == (1, 1, "stopped_after_tools")
    assert result.content == "Asking the lookup tool."
    assert len(seen) == 1 and seen[0] == result.tool_calls
    assert result.messages[-1].role == "tool"


async def test_stop_after_tools_false_keeps_going():
    model = ScriptedModel([calls_tool("a"), "final"])
    result = await run_loop(model, question(), [lookup_tool()], context_window=WINDOW, stop_after_tools=lambda r: False)
    assert result.content == "final" and not result.stopped_early and result.llm_calls == 2


async def test_retryable_provider_errors_are_refunded():
    tracker = RecordingTracker()
    model = ScriptedModel([
        ProviderServerError("503 from upstream", provider="p"),
        calls_tool("a"),
        ProviderRateLimitError("429", provider="p"),
        AllProvidersFailedError("all failed", [ProviderServerError("500")]),
        "done",
    ])
    # two charged iterations suffice because the three failures are not charged
    result = await run_loop(model, question(), [lookup_tool()], context_window=WINDOW,
                            settings=LoopSettings(max_iterations=2, refund_backoff_s=0), tracker=tracker)
    assert result.content == "done" and not result.partial
    assert (result.iterations, result.llm_calls, result.refunds) == (2, 5, 3)
    refunds = [e.data for e in tracker.events if e.type == "loop.refund"]
    assert [r["error_type"] for r in refunds] == ["ProviderServerError", "ProviderRateLimitError", "AllProvidersFailedError"]
    assert [r["iteration"] for r in refunds] == [1, 2, 2]
    assert tracker.types().count("llm.error") == 3


async def test_refunds_exhausted_raise_the_last_error():
    errors = [ProviderServerError(f"500 #{i}") for i in range(3)]
    model = ScriptedModel([*errors, "never reached"])
    with pytest.raises(ProviderServerError) as info:
        await run_loop(model, question(), context_window=WINDOW, settings=LoopSettings(max_refunds=2, refund_backoff_s=0))
    assert info.value is errors[2]
    assert model.remaining == 1


async def test_fatal_provider_error_raises_at_once():
    model = ScriptedModel([ProviderAuthError("401 bad key"), "never"])
    with pytest.raises(ProviderAuthError):
        await run_loop(model, question(), context_window=WINDOW)
    assert model.remaining == 1


async def test_callers_messages_are_not_modified():
    original = question()
    snapshot = [dataclasses.replace(m) for m in original]
    model = ScriptedModel([calls_tool("a"), "done"])
    result = await run_loop(model, original, [lookup_tool()], context_window=WINDOW)
    assert original == snapshot and len(original) == 2
    assert result.messages is not original and len(result.messages) == 5


async def test_function_model_conversation_drives_the_loop():
    def brain(messages: list[Message], tools: list[Tool]) -> Any:
        results = [m for m in messages if m.role == "tool"]
        if len(results) < 2:
            return calls_tool(f"k{len(results)}")
        return "Both: " + ", ".join(m.content for m in results)

    result = await run_loop(FunctionModel(brain), question(), [lookup_tool()], context_window=WINDOW)
    assert result.content == "Both: lookup:k0=42, lookup:k1=42"
    assert result.iterations == 3


async def test_tool_output_payload_reaches_the_program_not_the_model():
    payload = {"rows": [1, 2, 3]}
    tool = FunctionTool(Tool("rich", "Returns rows.", []), lambda: ToolOutput("3 rows", payload=payload))
    model = ScriptedModel([LLMResponse(tool_calls=[tool_call("rich")]), "ok"])
    result = await run_loop(model, question(), [tool], context_window=WINDOW)
    assert result.tool_calls[0].output.payload is payload
    assert model.calls[1][0][-1].content == "3 rows"


async def test_configuration_errors():
    with pytest.raises(ConfigurationError):
        await run_loop(ScriptedModel(["x"]), question(), context_window=0)
    with pytest.raises(ConfigurationError, match="two tools are named 'lookup'"):
        await run_loop(ScriptedModel(["x"]), question(), [lookup_tool(), lookup_tool()], context_window=WINDOW)
    for bad in ({"max_iterations": 0}, {"max_refunds": -1}, {"wrap_up_ratio": 0}, {"trim_ratio": 1.5},
                {"compress_ratio": 0.9}):
        with pytest.raises(ConfigurationError):
            LoopSettings(**bad)
    assert dataclasses.replace(LoopSettings(), stream=True).stream


class BrokenTracker:
    """Breaks the tracker's no-raise promise."""

    def __init__(self) -> None:
        self.seen = 0

    def emit(self, event) -> None:
        self.seen += 1
        raise RuntimeError("tracker down")


async def test_a_failing_tracker_does_not_fail_the_request(caplog):
    tracker = BrokenTracker()
    result = await run_loop(ScriptedModel([calls_tool("a"), "fine"]), question(), [lookup_tool()],
                            context_window=WINDOW, tracker=tracker)
    assert result.content == "fine" and tracker.seen == 6
    assert "tracker" in caplog.text


async def test_refunds_back_off_unless_the_error_says_when_to_retry():
    # A lone provider (no LLMRouter in front) must not be hammered: each refund waits longer.
    tracker = RecordingTracker()
    model = ScriptedModel([ProviderServerError("500"), ProviderServerError("502"),
                           ProviderRateLimitError("429", retry_after=0.03), "done"])
    result = await run_loop(model, question(), context_window=WINDOW, tracker=tracker,
                            settings=LoopSettings(refund_backoff_s=0.01))
    assert result.content == "done" and result.refunds == 3
    assert [e.data["wait_s"] for e in tracker.events if e.type == "loop.refund"] == [0.01, 0.02, 0.03]


class StreamBreakingAfterText:
    """A ChatModel whose first stream sends text, then loses the connection."""

    provider, model = "flaky", "flaky-1"

    def __init__(self) -> None:
        self.streams = 0

    async def complete(self, messages, tools=None, **kw):  # pragma: no cover - the loop streams
        raise AssertionError("complete() should not be used when streaming")

    async def stream(self, messages, tools=None, **kw):
        self.streams += 1
        if self.streams == 1:
            yield StreamChunk(delta="The ans")
            yield StreamChunk(delta="wer is")
            raise ProviderConnectionError("connection reset", provider="flaky", model="flaky-1")
        yield StreamChunk(delta="42")
        yield StreamChunk(response=LLMResponse(content="42", model="flaky-1", provider="flaky"))


async def test_a_stream_broken_after_text_tells_consumers_what_to_discard():
    tracker = RecordingTracker()
    result = await run_loop(StreamBreakingAfterText(), question(), context_window=WINDOW, tracker=tracker,
                            settings=LoopSettings(stream=True, refund_backoff_s=0))
    assert result.content == "42" and result.refunds == 1
    [error] = [e for e in tracker.events if e.type == "llm.error"]
    assert error.data["streamed_deltas"] == 2
    # what a consumer keeps: the deltas after the last llm.error
    last_error = tracker.events.index(error)
    assert [e.data["delta"] for e in tracker.events[last_error:] if e.type == "llm.token"] == ["42"]
