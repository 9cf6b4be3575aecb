"""Context pressure: wrap-up at 70 %, trimming at 80 % without splitting call/result pairs,
compression to 60 % with one retry on overflow, and estimates corrected by the provider."""

from __future__ import annotations

import dataclasses
import logging

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from baton.errors import ContextLengthExceededError
from baton.events import RecordingTracker
from baton.llm.testing import FunctionModel, ScriptedModel, tool_call
from baton.llm.tokens import message_tokens
from baton.loop import WRAP_UP_INSTRUCTION, LoopSettings, run_loop
from baton.loop.ledger import tool_schema_tokens
from baton.loop.trimming import compress, drop_oldest, group_units
from baton.messages import LLMResponse, Message, Tool, ToolCall, ToolParameter
from baton.tools import FunctionTool

SYSTEM = Message.system("You are a data analyst. Use the tools, then answer.")
QUESTION = Message.user("Which region grew fastest last quarter?")
LOOKUP = Tool("lookup", "Look up a figure.", [ToolParameter("key", "string", "what to look up")])


def lookup_tool(words: int = 40) -> FunctionTool:
    return FunctionTool(LOOKUP, lambda key: " ".join(f"{key}-figure-{i}" for i in range(words)))


def prompt_tokens(messages: list[Message], tools: list[Tool] = (LOOKUP,)) -> int:
    """The loop's own estimate of a prompt (messages plus tool definitions)."""
    return sum(message_tokens(m) for m in messages) + tool_schema_tokens(list(tools))


def assert_pairs_intact(messages: list[Message]) -> None:
    """Every tool result answers an assistant call still present (and earlier), and every
    assistant call still present has its result."""
    issued: set[str] = set()
    answered: set[str] = set()
    for m in messages:
        if m.role == "assistant" and m.tool_calls:
            issued.update(c.id for c in m.tool_calls)
        elif m.role == "tool":
            assert m.tool_call_id in issued, f"tool result {m.tool_call_id} has lost its assistant call"
            answered.add(m.tool_call_id)
    assert issued == answered, f"calls without results: {issued - answered}"


def wrap_ups(messages: list[Message]) -> int:
    return sum(1 for m in messages if m.role == "system" and m.content == WRAP_UP_INSTRUCTION)


def largest_window_reaching(tokens: int, ratio: float) -> int:
    """The largest window for which ``tokens`` is at or above ``ratio`` of it (same float test as the loop)."""
    window = int(tokens / ratio) + 2
    while tokens < ratio * window:
        window -= 1
    return window


# --- wrap-up ------------------------------------------------------------------------------


def one_tool_turn_model() -> ScriptedModel:
    return ScriptedModel([LLMResponse(tool_calls=[ToolCall("c1", "lookup", {"key": "north"})]), "North grew fastest."])


def second_prompt() -> int:
    """The estimated prompt of the call after one lookup turn."""
    tool = lookup_tool()
    result = " ".join(f"north-figure-{i}" for i in range(40))
    assert tool.fn(key="north") == result
    turn = [Message.assistant("", [ToolCall("c1", "lookup", {"key": "north"})]), Message("tool", result, "c1", "lookup")]
    return prompt_tokens([SYSTEM, QUESTION, *turn])


async def test_wrap_up_is_injected_when_the_prompt_reaches_70_percent():
    window = largest_window_reaching(second_prompt(), 0.70)
    assert prompt_tokens([SYSTEM, QUESTION]) < 0.70 * window  # the first call is well below
    tracker = RecordingTracker()
    model = one_tool_turn_model()
    result = await run_loop(model, [SYSTEM, QUESTION], [lookup_tool()], context_window=window, tracker=tracker)
    first, second = (messages for messages, _ in model.calls)
    assert wrap_ups(first) == 0
    assert second[-1] == Message("system", WRAP_UP_INSTRUCTION)
    assert [t.name for t in model.calls[1][1]] == ["lookup"]  # tools stay offered (documented decision)
    assert result.wrapped_up and result.content == "North grew fastest."
    [event] = [e for e in tracker.events if e.type == "loop.wrap_up"]
    assert event.data["iteration"] == 2 and event.data["prompt_tokens"] == second_prompt()
    assert "loop.trimmed" not in tracker.types()


async def test_no_wrap_up_one_token_below_the_threshold():
    window = largest_window_reaching(second_prompt(), 0.70) + 1
    model = one_tool_turn_model()
    result = await run_loop(model, [SYSTEM, QUESTION], [lookup_tool()], context_window=window)
    assert all(wrap_ups(messages) == 0 for messages, _ in model.calls)
    assert not result.wrapped_up


async def test_wrap_up_is_added_once_even_if_the_model_keeps_calling_tools():
    calls = 0

    def stubborn(messages: list[Message], tools: list[Tool]):
        nonlocal calls
        calls += 1
        return LLMResponse(tool_calls=[ToolCall(f"c{calls}", "lookup", {"key": "k"})]) if calls <= 4 else "done"

    long_system = Message.system("You are a careful analyst. " * 300)  # a big fixed part keeps 4 turns under 80 %
    first_turn = [Message.assistant("", [ToolCall("c1", "lookup", {"key": "k"})]), Message("tool", lookup_tool(5).fn(key="k"), "c1", "lookup")]
    window = largest_window_reaching(prompt_tokens([long_system, QUESTION, *first_turn]), 0.70)
    tracker = RecordingTracker()
    model = FunctionModel(stubborn)
    result = await run_loop(model, [long_system, QUESTION], [lookup_tool(words=5)], context_window=window, tracker=tracker)
    assert result.content == "done" and result.wrapped_up
    assert "loop.trimmed" not in tracker.types()
    assert wrap_ups(result.messages) == 1 and tracker.types().count("loop.wrap_up") == 1
    assert [e.data["iteration"] for e in tracker.events if e.type == "loop.wrap_up"] == [2]
    assert len(result.tool_calls) == 4  # tools called after the notice still ran


# --- trimming -----------------------------------------------------------------------------


def history(turns: int, words: int = 60) -> list[Message]:
    """Earlier chat turns with tool calls: user, assistant+calls, results, assistant answer."""
    messages: list[Message] = []
    for t in range(turns):
        calls = [ToolCall(f"h{t}_{k}", "lookup", {"key": f"old{t}{k}"}) for k in range(2)]
        messages.append(Message.user(f"Earlier question {t}?"))
        messages.append(Message.assistant(f"Looking up {t}.", calls))
        messages.extend(Message("tool", " ".join(f"old-{t}-{k}-{i}" for i in range(words)), c.id, "lookup") for k, c in enumerate(calls))
        messages.append(Message.assistant(f"Earlier answer {t}."))
    return messages


async def test_trimming_drops_oldest_groups_and_keeps_every_call_with_its_result():
    window = 3_000
    seen: list[list[Message]] = []

    def analyst(messages: list[Message], tools: list[Tool]):
        seen.append(messages)
        done = sum(1 for m in messages[-3:] if m.role == "tool")
        loop_results = sum(1 for m in messages if m.role == "tool" and m.tool_call_id.startswith("live"))
        if len(seen) <= 6:
            n = len(seen)
            return LLMResponse(tool_calls=[ToolCall(f"live{n}a", "lookup", {"key": f"n{n}"}), ToolCall(f"live{n}b", "lookup", {"key": f"m{n}"})])
        return f"answer after {done} recent and {loop_results} kept results"

    tracker = RecordingTracker()
    caller = [SYSTEM, *history(6), QUESTION]
    assert prompt_tokens(caller) > 0.8 * window  # the caller's history alone is too big
    caller_snapshot = list(caller)
    result = await run_loop(FunctionModel(analyst), caller, [lookup_tool(words=60)], context_window=window,
                            settings=LoopSettings(max_iterations=10), tracker=tracker)
    trims = [e.data for e in tracker.events if e.type == "loop.trimmed"]
    assert trims and trims[0]["iteration"] == 1 and all(t["fits"] for t in trims)
    assert result.trimmed_messages == sum(t["removed_messages"] for t in trims) > 0
    for messages in seen:
        assert messages[0] is SYSTEM and QUESTION in messages
        assert_pairs_intact(messages)
        assert prompt_tokens(messages) <= 0.8 * window
    # the most recent results survived every trim: the model always sees what it just asked for
    for n, messages in enumerate(seen[1:], start=1):
        assert {f"live{n}a", f"live{n}b"} <= {m.tool_call_id for m in messages if m.role == "tool"}
    assert_pairs_intact(result.messages)
    assert caller == caller_snapshot  # the caller's list is untouched


async def test_trimming_that_cannot_fit_logs_and_calls_the_model_anyway(caplog):
    huge_question = Message.user("Please analyse: " + "lorem ipsum " * 600)
    tracker = RecordingTracker()
    model = ScriptedModel(["I will try."])
    with caplog.at_level(logging.WARNING, logger="baton.loop"):
        result = await run_loop(model, [SYSTEM, huge_question], [lookup_tool()], context_window=1_000, tracker=tracker)
    assert result.content == "I will try."
    assert model.calls[0][0][:2] == [SYSTEM, huge_question]
    [trim] = [e.data for e in tracker.events if e.type == "loop.trimmed"]
    assert trim["fits"] is False and trim["removed_messages"] == 0
    assert any("cannot get under 80%" in r.getMessage() for r in caplog.records)


# --- compression after an overflow --------------------------------------------------------


def overflow() -> ContextLengthExceededError:
    return ContextLengthExceededError("maximum context length exceeded", provider="p", model="m", status_code=400)


async def test_overflow_compresses_to_60_percent_and_retries_once():
    caller = [SYSTEM, *history(5), QUESTION]
    window = int(prompt_tokens(caller) / 0.5)  # our estimate says 50 %: the provider disagrees
    tracker = RecordingTracker()
    model = ScriptedModel([overflow(), "Answer after compression."])
    result = await run_loop(model, caller, [lookup_tool()], context_window=window, tracker=tracker)
    assert result.content == "Answer after compression."
    assert (result.llm_calls, result.iterations, result.compressions) == (2, 1, 1)
    before, after = model.calls[0][0], model.calls[1][0]
    assert len(after) < len(before) and after[0] is SYSTEM and QUESTION in after
    assert_pairs_intact(after)
    # the overflow proved the first prompt was at least the window: 60 % of that is the target
    assert prompt_tokens(after) <= 0.6 * prompt_tokens(before)
    [event] = [e.data for e in tracker.events if e.type == "loop.compressed"]
    assert event["fits"] and event["removed_messages"] == len(before) - len(after)
    assert tracker.types().count("llm.error") == 1


async def test_second_overflow_on_the_same_call_raises():
    model = ScriptedModel([overflow(), overflow(), "never"])
    with pytest.raises(ContextLengthExceededError):
        await run_loop(model, [SYSTEM, *history(3), QUESTION], [lookup_tool()], context_window=50_000)
    assert model.remaining == 1


async def test_each_call_gets_its_own_retry_after_overflow():
    model = ScriptedModel([overflow(), LLMResponse(tool_calls=[tool_call("lookup", {"key": "a"})]), overflow(), "done"])
    result = await run_loop(model, [SYSTEM, *history(3), QUESTION], [lookup_tool()], context_window=50_000)
    assert result.content == "done" and result.compressions == 2 and result.iterations == 2 and result.llm_calls == 4


async def test_compression_shortens_a_huge_latest_tool_result():
    window = 2_000
    model = ScriptedModel([LLMResponse(tool_calls=[ToolCall("big", "lookup", {"key": "all"})]), overflow(), "Summarised."])
    result = await run_loop(model, [SYSTEM, QUESTION], [lookup_tool(words=900)], context_window=window,
                            settings=LoopSettings(trim_ratio=1.0, wrap_up_ratio=1.0))
    assert result.content == "Summarised."
    retried = model.calls[2][0]
    [tool_message] = [m for m in retried if m.role == "tool"]
    assert "characters cut to fit the context window]" in tool_message.content
    assert tool_message.content.startswith("all-figure-0 all-figure-1")
    assert_pairs_intact(retried)
    assert prompt_tokens(retried) <= 0.6 * window * 1.05  # within rounding of the 60 % target
    assert len(result.tool_calls[0].output.text) > len(tool_message.content)  # the record keeps the full output


# --- estimates corrected by the provider --------------------------------------------------


async def test_reported_input_tokens_raise_the_estimate():
    window = 10_000
    assert prompt_tokens([SYSTEM, QUESTION]) < 0.05 * window
    model = ScriptedModel([
        LLMResponse(tool_calls=[tool_call("lookup", {"key": "a"})], usage={"input_tokens": 7_200, "output_tokens": 5}),
        "done",
    ])
    result = await run_loop(model, [SYSTEM, QUESTION], [lookup_tool(words=5)], context_window=window)
    assert wrap_ups(model.calls[1][0]) == 1  # by our count ~3 %, by the provider's over 70 %
    assert result.context_usage_pct >= 70


async def test_lower_reported_counts_never_lower_our_estimate():
    window = largest_window_reaching(second_prompt(), 0.70)
    model = ScriptedModel([
        LLMResponse(tool_calls=[ToolCall("c1", "lookup", {"key": "north"})], usage={"input_tokens": 3}),
        "ok",
    ])
    await run_loop(model, [SYSTEM, QUESTION], [lookup_tool()], context_window=window)
    assert wrap_ups(model.calls[1][0]) == 1


# --- the grouping rule as a property ------------------------------------------------------


@st.composite
def conversations(draw):
    messages = [Message.system("sys")]
    question_at = draw(st.integers(0, 6))
    counter = 0
    for u in range(draw(st.integers(0, 8))):
        if u == question_at:
            messages.append(QUESTION)
        kind = draw(st.sampled_from(["user", "assistant", "calls", "system"]))
        if kind == "calls":
            calls = [ToolCall(f"id{counter}_{k}", "lookup", {}) for k in range(draw(st.integers(1, 3)))]
            counter += 1
            messages.append(Message.assistant("", calls))
            messages.extend(Message("tool", "r", c.id, "lookup") for c in calls)
        else:
            messages.append(Message(kind, f"{kind} {u}"))
    if QUESTION not in messages:
        messages.append(QUESTION)
    counts = draw(st.lists(st.integers(1, 300), min_size=len(messages), max_size=len(messages)))
    return messages, counts


def protected(message: Message) -> bool:
    return message.role == "system" or message is QUESTION


@settings(max_examples=300, deadline=None)
@given(conversations(), st.integers(0, 3_000))
def test_drop_oldest_never_splits_pairs_and_keeps_what_must_stay(conversation, budget):
    messages, counts = conversation
    cut = drop_oldest(messages, counts, budget, protected)
    assert_pairs_intact(cut.messages)
    assert [m for m in messages if protected(m)] == [m for m in cut.messages if protected(m)]
    position = {id(m): i for i, m in enumerate(messages)}
    assert cut.counts == [counts[position[id(m)]] for m in cut.messages]
    assert cut.fits == (sum(cut.counts) <= budget)
    assert cut.removed == len(messages) - len(cut.messages)
    kept = {id(m) for m in cut.messages}
    units = group_units(messages)
    unit_kept = [[id(messages[i]) in kept for i in unit] for unit in units]
    assert all(len(set(flags)) == 1 for flags in unit_kept)  # units go whole or not at all
    removable = [k for k, unit in enumerate(units) if not any(protected(messages[i]) for i in unit)]
    if removable:
        assert all(unit_kept[removable[-1]])  # the latest unprotected unit stays
    survivors = [unit_kept[k][0] for k in removable[:-1]]
    assert survivors == sorted(survivors)  # oldest removed first
    if not cut.fits:  # it gives up only after removing all it may
        assert not any(survivors)


@settings(max_examples=100, deadline=None)
@given(conversations(), st.integers(0, 3_000))
def test_compress_keeps_pairs_and_leaves_the_input_alone(conversation, budget):
    messages, counts = conversation
    before = [dataclasses.replace(m) for m in messages]
    cut = compress(messages, counts, budget, protected)
    assert_pairs_intact(cut.messages)
    assert messages == before
