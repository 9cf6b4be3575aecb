"""Tool dispatch: concurrency, sequential-only turns, call order, and typed failures fed back."""

from __future__ import annotations

import asyncio

import pytest

from baton.errors import ToolArgumentsError, ToolExecutionError, UnknownToolError
from baton.events import RecordingTracker
from baton.llm.testing import FunctionModel, ScriptedModel, tool_call
from baton.loop import run_loop
from baton.messages import LLMResponse, Message, Tool, ToolCall, ToolParameter
from baton.tools import CallAwareTool, FunctionTool, ToolOutput

WINDOW = 100_000
GUARD_S = 10  # only guards against a hang if calls were (wrongly) serialised; never asserted on


def question() -> list[Message]:
    return [Message.system("Use the tools."), Message.user("Go.")]


def turn(*calls: ToolCall) -> LLMResponse:
    return LLMResponse(tool_calls=list(calls))


def spec(name: str, *params: str, sequential_only: bool = False) -> Tool:
    return Tool(name, f"The {name} tool.", [ToolParameter(p, "string", p) for p in params], sequential_only=sequential_only)


async def test_calls_in_one_turn_run_concurrently():
    started = 0
    all_started = asyncio.Event()

    async def rendezvous(key: str) -> str:
        nonlocal started
        started += 1
        if started == 3:
            all_started.set()
        await all_started.wait()  # only returns if all three are running at the same time
        return f"met {key}"

    tool = FunctionTool(spec("meet", "key"), rendezvous)
    model = ScriptedModel([turn(*(tool_call("meet", {"key": k}) for k in "abc")), "done"])
    result = await asyncio.wait_for(run_loop(model, question(), [tool], context_window=WINDOW), GUARD_S)
    assert [r.output.text for r in result.tool_calls] == ["met a", "met b", "met c"]


async def test_results_are_appended_in_call_order_whatever_order_they_finish():
    finished: dict[str, asyncio.Event] = {k: asyncio.Event() for k in "abc"}
    order: list[str] = []

    async def chained(key: str) -> str:
        follower = {"a": "b", "b": "c"}.get(key)
        if follower:  # a waits for b, b waits for c: they finish c, b, a
            await finished[follower].wait()
        order.append(key)
        finished[key].set()
        return f"result {key}"

    tracker = RecordingTracker()
    model = ScriptedModel([turn(*(tool_call("chain", {"key": k}, id=f"id_{k}") for k in "abc")), "done"])
    result = await asyncio.wait_for(
        run_loop(model, question(), [FunctionTool(spec("chain", "key"), chained)], context_window=WINDOW, tracker=tracker),
        GUARD_S,
    )
    assert order == ["c", "b", "a"]
    assert [e.data["call_id"] for e in tracker.events if e.type == "tool.end"] == ["id_c", "id_b", "id_a"]
    tool_messages = [m for m in model.calls[1][0] if m.role == "tool"]
    assert [(m.tool_call_id, m.content) for m in tool_messages] == [("id_a", "result a"), ("id_b", "result b"), ("id_c", "result c")]
    assert [r.call.id for r in result.tool_calls] == ["id_a", "id_b", "id_c"]


def recording_tool(name: str, log: list[str], *, sequential_only: bool = False) -> FunctionTool:
    async def run(key: str) -> str:
        log.append(f"start {name}:{key}")
        for _ in range(3):
            await asyncio.sleep(0)  # give any concurrently running call the chance to interleave
        log.append(f"end {name}:{key}")
        return key

    return FunctionTool(spec(name, "key", sequential_only=sequential_only), run)


async def test_a_sequential_only_tool_makes_the_turn_run_in_call_order():
    log: list[str] = []
    tools = [recording_tool("free", log), recording_tool("write", log, sequential_only=True)]
    calls = [tool_call("free", {"key": "1"}), tool_call("write", {"key": "2"}), tool_call("free", {"key": "3"})]
    model = ScriptedModel([turn(*calls), "done"])
    await run_loop(model, question(), tools, context_window=WINDOW)
    assert log == ["start free:1", "end free:1", "start write:2", "end write:2", "start free:3", "end free:3"]


async def test_without_sequential_tools_the_same_turn_interleaves():
    log: list[str] = []
    tools = [recording_tool("free", log), recording_tool("other", log)]
    calls = [tool_call("free", {"key": "1"}), tool_call("other", {"key": "2"}), tool_call("free", {"key": "3"})]
    await run_loop(ScriptedModel([turn(*calls), "done"]), question(), tools, context_window=WINDOW)
    assert log[:3] == ["start free:1", "start other:2", "start free:3"]


async def test_malformed_json_arguments_are_fed_back_and_the_model_recovers():
    def model_fn(messages: list[Message], tools: list[Tool]):
        last = messages[-1]
        if last.role == "user":
            broken = ToolCall("c1", "lookup", {}, raw_arguments='{"key": "a', arguments_error="Unterminated string at char 8")
            return turn(broken)
        if last.role == "tool" and last.content.startswith("Error (ToolArgumentsError)"):
            return turn(tool_call("lookup", {"key": "a"}, id="c2"))
        return f"Recovered with {last.content}"

    lookup = FunctionTool(spec("lookup", "key"), lambda key: f"value of {key}")
    result = await run_loop(FunctionModel(model_fn), question(), [lookup], context_window=WINDOW)
    assert result.content == "Recovered with value of a"
    bad, good = result.tool_calls
    assert isinstance(bad.error, ToolArgumentsError) and bad.output.is_error
    assert bad.error.tool_name == "lookup" and bad.error.call_id == "c1"
    assert "Unterminated string" in bad.output.text and "key (string, required)" in bad.output.text
    assert good.error is None and good.output.text == "value of a"


@pytest.mark.parametrize(
    ("call", "error_type", "fragment"),
    [
        (ToolCall("x", "nope", {}), UnknownToolError, "no tool named 'nope'. Tools available: lookup, boom"),
        (ToolCall("x", "lookup", {}), ToolArgumentsError, "missing required parameter(s): key"),
        (ToolCall("x", "lookup", {"key": "a", "colour": "red"}), ToolArgumentsError, "unknown parameter(s): colour"),
        (ToolCall("x", "lookup", ["a"]), ToolArgumentsError, "must be a JSON object, got list"),  # type: ignore[arg-type]
        (ToolCall("x", "boom", {}), ToolExecutionError, "'boom' failed: KeyError: 'missing'"),
    ],
)
async def test_dispatch_failures_are_typed_records_and_error_messages(call, error_type, fragment):
    def boom() -> str:
        raise KeyError("missing")

    tools = [FunctionTool(spec("lookup", "key"), lambda key: key), FunctionTool(spec("boom"), boom)]
    tracker = RecordingTracker()
    model = ScriptedModel([turn(call), "ok"])
    result = await run_loop(model, question(), tools, context_window=WINDOW, tracker=tracker)
    [record] = result.tool_calls
    assert type(record.error) is error_type and record.output.is_error
    assert record.output.text.startswith(f"Error ({error_type.__name__}): ")
    assert fragment in record.output.text
    assert model.calls[1][0][-1].content == record.output.text  # exactly what the model saw
    [end] = [e.data for e in tracker.events if e.type == "tool.end"]
    assert end["is_error"] is True and end["error_type"] == error_type.__name__
    if error_type is ToolExecutionError:
        assert isinstance(record.error.__cause__, KeyError)


async def test_a_tool_raising_a_tool_error_keeps_its_type():
    def strict(key: str) -> str:
        raise ToolArgumentsError("key must be upper case")

    model = ScriptedModel([turn(tool_call("strict", {"key": "a"}, id="k1")), "ok"])
    result = await run_loop(model, question(), [FunctionTool(spec("strict", "key"), strict)], context_window=WINDOW)
    error = result.tool_calls[0].error
    assert type(error) is ToolArgumentsError and error.tool_name == "strict" and error.call_id == "k1"


async def test_one_failing_call_does_not_disturb_its_concurrent_siblings():
    async def maybe(key: str) -> str:
        await asyncio.sleep(0)
        if key == "bad":
            raise RuntimeError("disk on fire")
        return f"ok {key}"

    calls = [tool_call("maybe", {"key": k}) for k in ("a", "bad", "c")]
    result = await run_loop(ScriptedModel([turn(*calls), "ok"]), question(), [FunctionTool(spec("maybe", "key"), maybe)],
                            context_window=WINDOW)
    assert [r.output.text for r in result.tool_calls][::2] == ["ok a", "ok c"]
    assert isinstance(result.tool_calls[1].error, ToolExecutionError)


async def test_tool_return_values_and_argument_isolation():
    def mutating(key: str) -> None:
        return None

    class Grabby:
        spec = spec("grabby", "key")

        async def __call__(self, arguments: dict) -> ToolOutput:
            arguments["key"] = "changed"
            return ToolOutput("soft failure", is_error=True)

    calls = [tool_call("none", {"key": "a"}), tool_call("grabby", {"key": "original"})]
    model = ScriptedModel([turn(*calls), "ok"])
    result = await run_loop(model, question(), [FunctionTool(spec("none", "key"), mutating), Grabby()], context_window=WINDOW)
    assert result.tool_calls[0].output.text == "(the tool returned nothing)"
    soft = result.tool_calls[1]
    assert soft.output.is_error and soft.error is None  # the tool's own soft error, no exception
    assert result.messages[2].tool_calls[1].arguments == {"key": "original"}


async def test_empty_or_repeated_call_ids_get_fresh_ones():
    model = ScriptedModel([turn(ToolCall("", "echo", {"key": "a"}), ToolCall("", "echo", {"key": "b"})), "ok"])
    result = await run_loop(model, question(), [FunctionTool(spec("echo", "key"), lambda key: key)], context_window=WINDOW)
    assistant, first, second = result.messages[2:5]
    ids = [c.id for c in assistant.tool_calls]
    assert len(set(ids)) == 2 and all(ids)
    assert [first.tool_call_id, second.tool_call_id] == ids and [first.content, second.content] == ["a", "b"]


@pytest.mark.parametrize("sequential", [False, True])
async def test_a_call_aware_tool_is_handed_its_own_call(sequential):
    seen: dict[str, tuple[str, str]] = {}

    class Probe:
        spec = spec("probe", "key", sequential_only=sequential)

        async def __call__(self, arguments: dict) -> str:
            raise AssertionError("a CallAwareTool is run with run_call")

        async def run_call(self, call: ToolCall) -> str:
            await asyncio.sleep(0.001 if call.arguments["key"] == "a" else 0)  # interleave the concurrent calls
            seen[call.arguments["key"]] = (call.id, call.name)
            call.arguments["key"] = "mutated"  # its own copy: the conversation keeps the original
            return "ok"

    assert isinstance(Probe(), CallAwareTool)
    calls = [tool_call("probe", {"key": k}, id=f"id-{k}") for k in "abc"]
    result = await run_loop(ScriptedModel([turn(*calls), "done"]), question(), [Probe()], context_window=100_000)
    assert result.content == "done"
    assert seen == {"a": ("id-a", "probe"), "b": ("id-b", "probe"), "c": ("id-c", "probe")}
    assert [c.arguments for c in result.messages[2].tool_calls] == [{"key": k} for k in "abc"]
