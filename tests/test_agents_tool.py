import asyncio
import dataclasses

import pytest

from agent_doubles import FlakyAgent, TableAgent, TextAgent
from baton.agents import (
    AgentContext,
    AgentRegistry,
    AgentResult,
    BaseAgent,
    ExecutionMemory,
    OrchestratorAgent,
    UnknownAgentError,
)
from baton.agents.agent_tool import MAX_SUB_AGENT_RETRIES, AgentTool
from baton.errors import AgentFatalError, AgentRetryableError, AgentTimeoutError, AgentValidationError, ConfigurationError
from baton.events import RecordingTracker
from baton.llm import ScriptedModel
from baton.messages import LLMResponse, Message, ToolCall


def request(question="q", **kw):
    return AgentContext(user_question=question, execution_memory=ExecutionMemory(question), tracker=RecordingTracker(), **kw)


async def call(tool, request_context, call_id, **arguments):
    return await tool.bind(request_context).run_call(ToolCall(call_id, tool.name, arguments))


async def test_llm_gets_text_and_memory_keeps_the_full_message_per_call():
    agent = TableAgent("pokemon_finance")
    tool = AgentTool(agent)
    ctx = request()
    first = await call(tool, ctx, "c1", question="revenue 2025?")
    await call(tool, ctx, "c2", question="costs 2025?")
    assert isinstance(first.text, str) and first.text == "pokemon_finance: 1 rows"
    results = ctx.execution_memory.results
    assert list(results) == ["c1", "c2"]
    assert results["c1"].ai_message.data[0]["question"] == "revenue 2025?"
    assert results["c2"].ai_message.data[0]["question"] == "costs 2025?"
    assert results["c1"].parent_execution_id == ctx.workflow_id and results["c1"].call_id == "c1"
    assert first.payload is results["c1"]


async def test_tool_spec_is_question_plus_optional_context():
    spec = AgentTool(TableAgent("epson finance!")).spec
    assert spec.name == "epson_finance"
    assert spec.to_json_schema()["required"] == ["question"]
    assert "context" in spec.to_json_schema()["properties"]


async def test_retryable_errors_are_retried_then_succeed():
    agent = FlakyAgent("flaky", [AgentRetryableError("busy"), AgentRetryableError("busy")])
    ctx = request()
    out = await call(AgentTool(agent), ctx, "c1", question="x")
    assert not out.is_error and out.text == "finally"
    assert len(agent.seen) == MAX_SUB_AGENT_RETRIES + 1
    assert ctx.execution_memory.results["c1"].metadata["attempts"] == 3
    assert ctx.tracker.types().count("agent.retry") == 2


async def test_retryable_errors_exhausted_give_a_typed_error_result():
    agent = FlakyAgent("flaky", [AgentRetryableError("busy")] * 3)
    ctx = request()
    out = await call(AgentTool(agent), ctx, "c1", question="x")
    result = ctx.execution_memory.results["c1"]
    assert out.is_error and result.status == "error" and result.error_type == "AgentRetryableError"
    assert "Error (AgentRetryableError) from flaky" in out.text
    assert len(agent.seen) == 3


async def test_fatal_errors_are_not_retried():
    agent = FlakyAgent("flaky", [AgentFatalError("bad credentials")])
    ctx = request()
    out = await call(AgentTool(agent), ctx, "c1", question="x")
    assert len(agent.seen) == 1
    assert ctx.execution_memory.results["c1"].error_type == "AgentFatalError"
    assert "bad credentials" in out.text


async def test_timeouts_retry_with_a_smaller_context():
    agent = FlakyAgent("slow", [AgentTimeoutError("too slow")])
    history = tuple(Message.user(f"m{i}") for i in range(8))
    ctx = request(chat_history=history)
    out = await call(AgentTool(agent), ctx, "c1", question="x")
    assert not out.is_error
    assert len(agent.seen[0].chat_history) == 8 and len(agent.seen[1].chat_history) == 4
    assert agent.seen[1].extra["_reduced_context"] == 1
    assert len(ctx.chat_history) == 8  # the request's own context never changes


async def test_a_tool_timeout_becomes_agent_timeout_and_is_retried():
    class Sleepy(BaseAgent):
        calls = 0

        async def run(self, context, *, question, **kw):
            Sleepy.calls += 1
            if Sleepy.calls == 1:
                await asyncio.Event().wait()  # never set: only the timeout ends it
            return AgentResult(result="woke", ai_message=None)

    ctx = request()
    out = await call(AgentTool(Sleepy("sleepy"), timeout=0.05), ctx, "c1", question="x")
    assert out.text == "woke" and Sleepy.calls == 2


async def test_validation_failures_retry_and_the_last_result_carries_warnings():
    agent = TextAgent("texty")
    checks = []

    def validator(result):
        checks.append(result)
        return ["no citation"]

    ctx = request()
    out = await call(AgentTool(agent, validator=validator), ctx, "c1", question="x")
    assert len(checks) == 3
    assert "warnings: no citation" in out.text
    assert ctx.execution_memory.results["c1"].metadata["validation_warnings"] == ["no citation"]


async def test_validation_error_raised_by_agent_is_retried():
    agent = FlakyAgent("v", [AgentValidationError("empty")])
    ctx = request()
    out = await call(AgentTool(agent), ctx, "c1", question="x")
    assert out.text == "finally" and len(agent.seen) == 2


async def test_an_agent_bug_becomes_a_typed_error_not_a_crash():
    agent = FlakyAgent("buggy", [KeyError("oops")])
    ctx = request()
    out = await call(AgentTool(agent), ctx, "c1", question="x")
    assert out.is_error and ctx.execution_memory.results["c1"].error_type == "KeyError"
    assert len(agent.seen) == 1


async def test_registry_configures_once_under_concurrent_first_use():
    configured = []

    class Slow(TableAgent):
        async def configure(self):
            configured.append(self)
            await asyncio.sleep(0.01)

    registry = AgentRegistry()
    registry.register("slow", lambda: Slow("slow"))
    instances = await asyncio.gather(*(registry.get_instance("slow") for _ in range(20)))
    assert len(configured) == 1 and all(i is instances[0] for i in instances)


async def test_registry_decorator_and_missing_names():
    registry = AgentRegistry()

    @registry.register("epson_finance", description="Epson numbers")
    def make():
        return TableAgent("epson_finance")

    registry.register("pokemon_finance", lambda: TableAgent("pokemon_finance"))
    assert registry.names() == ["epson_finance", "pokemon_finance"]
    assert registry.describe("epson_finance") == "Epson numbers"
    with pytest.raises(UnknownAgentError, match="'roadshows'.*registered: epson_finance, pokemon_finance"):
        await registry.get_instance("roadshows")
    with pytest.raises(ConfigurationError, match="already registered"):
        registry.register("epson_finance", make)


def test_context_is_frozen_and_derive_copies():
    ctx = AgentContext(user_question="q", extra={"a": 1})
    with pytest.raises(dataclasses.FrozenInstanceError, match="user_question"):
        ctx.user_question = "other"  # type: ignore[misc]
    assert ctx.user_question == "q"
    with pytest.raises(TypeError):
        ctx.extra["b"] = 2  # type: ignore[index]
    child = ctx.derive(extra={"b": 2})
    assert dict(child.extra) == {"a": 1, "b": 2} and dict(ctx.extra) == {"a": 1}


async def test_the_optional_context_argument_reaches_the_agent_as_extra_context():
    seen = {}

    class Echo(BaseAgent):
        async def run(self, context, **kwargs):  # a plain signature must not collide with "context"
            seen.update(kwargs)
            return AgentResult(result="ok")

    ctx = request()
    out = await call(AgentTool(Echo("echo")), ctx, "c1", question="q", context="facts from step 1")
    assert out.text == "ok" and seen == {"question": "q", "extra_context": "facts from step 1"}


async def test_an_unknown_registry_name_is_a_value_error_as_seed_000_raises():
    registry = AgentRegistry()
    registry.register("epson_finance", lambda: TableAgent("epson_finance"))
    with pytest.raises(ValueError, match="no agent named 'roadshows'") as caught:
        await registry.get_instance("roadshows")
    assert isinstance(caught.value, UnknownAgentError) and isinstance(caught.value, ConfigurationError)
    orchestrator = OrchestratorAgent(agent_names=["epson_finance", "roadshows"], registry=registry)
    with pytest.raises(ValueError, match="'roadshows'"):
        await orchestrator.configure()


async def test_every_result_carries_the_agent_id_seed_000_names():
    class Anonymous(BaseAgent):  # leaves agent_name (and so agent_id) to the AgentTool
        async def run(self, context, **kwargs):
            return AgentResult(result="ok")

    class OwnId(BaseAgent):
        async def run(self, context, **kwargs):
            return AgentResult(agent_name=self.name, agent_id="own-7", result="ok")

    ctx = request()
    await call(AgentTool(TableAgent("epson_finance")), ctx, "c1", question="x")
    await call(AgentTool(Anonymous("anon")), ctx, "c2", question="x")
    await call(AgentTool(OwnId("own")), ctx, "c3", question="x")
    await call(AgentTool(FlakyAgent("flaky", [AgentRetryableError("busy")] * 3)), ctx, "c4", question="x")
    await call(AgentTool(FlakyAgent("buggy", [KeyError("oops")])), ctx, "c5", question="x")
    ids = {key: (r.agent_id, r.agent_name) for key, r in ctx.execution_memory.results.items()}
    assert ids == {"c1": ("epson_finance", "epson_finance"), "c2": ("anon", "anon"), "c3": ("own-7", "own"),
                   "c4": ("flaky", "flaky"), "c5": ("buggy", "buggy")}
    assert ctx.execution_memory.results["c4"].status == "error"
    assert AgentResult(agent_name="a").agent_id == "a" and AgentResult().agent_id == ""


async def test_the_orchestrators_own_results_carry_its_agent_id():
    orchestrator = OrchestratorAgent("FinanceOrchestrator", model=ScriptedModel([
        LLMResponse(tool_calls=[ToolCall("c1", "epson_finance", {"question": "q"})]), "done"]))
    orchestrator.add_agent(TableAgent("epson_finance"))
    result = await orchestrator.run(AgentContext(user_question="q"))
    assert result.agent_id == result.agent_name == "FinanceOrchestrator"
    failed = await OrchestratorAgent("Lonely").run(AgentContext(user_question="q"))  # no model: an error result
    assert failed.status == "error" and failed.agent_id == "Lonely"


def test_execution_memory_groups_results_by_agent_in_call_order():
    memory = ExecutionMemory("q")
    first, second, third = (AgentResult(agent_name=n, task=t, status=s) for n, t, s in
                            (("epson", "2024", "success"), ("general", "total", "error"), ("epson", "2025", "success")))
    for call_id, result in zip(("c1", "c2", "c1"), (first, second, third)):
        memory.record(call_id, result)
    assert list(memory.results) == ["c1", "c2", "c1#2"]
    assert memory.by_agent() == {"epson": [first, third], "general": [second]}
    assert memory.successful() == [first, third]
