"""Observability: real orchestrator, SQL-agent and pipeline runs exported as OpenTelemetry spans
(SDK + InMemorySpanExporter), the JSON-lines log fallback, and configuration from the env."""

from __future__ import annotations

import asyncio
import json
import logging

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from agent_doubles import TableAgent
from baton.agents import AgentContext, AgentResult, BaseAgent, OrchestratorAgent
from baton.errors import ProviderError
from baton.events import Event, event_of
from baton.llm import FunctionModel, ScriptedModel, tool_call
from baton.loop import run_loop
from baton.messages import LLMResponse, Message
from baton.observability import LoggingTracker, OTelTracker, configure_observability
from baton.response import AIMessage
from sql_test_databases import make_db  # noqa: F401  (fixture)

ROUTE_USAGE = {"input_tokens": 120, "output_tokens": 8}
FINAL_USAGE = {"input_tokens": 300, "output_tokens": 40}
SUB_USAGE = {"input_tokens": 50, "output_tokens": 6}


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def tracker(exporter):
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracker = OTelTracker(provider, sweep_interval_s=None)
    yield tracker
    tracker.shutdown()


def by_name(spans) -> dict[str, list]:
    out: dict[str, list] = {}
    for span in spans:
        out.setdefault(span.name, []).append(span)
    return out


def parent_of(span, spans):
    if span.parent is None:
        return None
    return next(s for s in spans if s.context.span_id == span.parent.span_id)


def route(messages, tools):
    if messages[-1].role == "tool":
        return LLMResponse(content="Both units: " + "; ".join(m.content for m in messages if m.role == "tool"), usage=dict(FINAL_USAGE))
    question = messages[-1].content
    names = ["pokemon", "epson"] if question.startswith("both") else ["pokemon"]
    return LLMResponse(tool_calls=[tool_call(n, {"question": question}) for n in names], usage=dict(ROUTE_USAGE))


class LoopAgent(BaseAgent):
    """A specialist that runs its own tool-calling loop (so its LLM calls carry iteration 1 too)."""

    async def run(self, context: AgentContext, *, question: str, **kw) -> AgentResult:
        async def answer(messages, tools):
            await asyncio.sleep(0)  # let the concurrent specialist interleave its events
            return LLMResponse(content=f"{self.name} rows for {question}", usage=dict(SUB_USAGE), model=f"{self.name}-model")

        loop = await run_loop(FunctionModel(answer, model=f"{self.name}-model"), [Message.user(question)], context_window=8000,
                              tracker=context.tracker, workflow_id=context.workflow_id)
        message = AIMessage(content=loop.content, data=[{"unit": self.name}])
        return AgentResult(agent_name=self.name, task=question, result=loop.content, ai_message=message)


async def test_orchestrator_run_becomes_one_span_tree_with_genai_attributes(tracker, exporter):
    orchestrator = OrchestratorAgent("finance", model=FunctionModel(route, model="router-1"))
    orchestrator.add_agent(LoopAgent("pokemon", "Pokemon data"))
    orchestrator.add_agent(LoopAgent("epson", "Epson data"))
    message = await orchestrator.ask("both units please", tracker=tracker)
    assert message.metadata["mode"] == "synthesis"
    assert not tracker.end_workflow(message.workflow_id)  # ask() emitted workflow.end: already closed
    spans = exporter.get_finished_spans()
    names = by_name(spans)

    (root,) = names["invoke_workflow finance"]
    assert root.parent is None and root.attributes["baton.workflow_id"] == message.workflow_id
    assert root.attributes["gen_ai.operation.name"] == "invoke_workflow"
    assert root.attributes["gen_ai.usage.input_tokens"] == 120 + 300 + 2 * 50
    assert root.attributes["gen_ai.usage.output_tokens"] == 8 + 40 + 2 * 6
    assert {s.context.trace_id for s in spans} == {root.context.trace_id}

    router_calls = sorted(names["chat router-1"], key=lambda s: s.start_time)
    assert [parent_of(s, spans) for s in router_calls] == [root, root]
    assert [s.attributes["baton.iteration"] for s in router_calls] == [1, 2]
    first, final = router_calls
    assert first.attributes["gen_ai.operation.name"] == "chat"
    assert first.attributes["gen_ai.provider.name"] == first.attributes["gen_ai.system"] == "function"
    assert first.attributes["gen_ai.request.model"] == "router-1"
    assert (first.attributes["gen_ai.usage.input_tokens"], first.attributes["gen_ai.usage.output_tokens"]) == (120, 8)
    assert first.attributes["gen_ai.response.finish_reasons"] == ("tool_calls",) and first.attributes["baton.llm.tool_calls"] == 2
    assert (final.attributes["gen_ai.usage.input_tokens"], final.attributes["gen_ai.usage.output_tokens"]) == (300, 40)
    assert final.attributes["gen_ai.response.finish_reasons"] == ("stop",)
    assert final.attributes["baton.llm.stream"] is False and "baton.llm.stream_chunks" not in final.attributes

    for unit in ("pokemon", "epson"):
        (tool,) = names[f"execute_tool {unit}"]
        (agent,) = names[f"invoke_agent {unit}"]
        (sub_llm,) = names[f"chat {unit}-model"]
        assert parent_of(tool, spans) is root
        assert tool.attributes["gen_ai.tool.name"] == unit and tool.attributes["gen_ai.operation.name"] == "execute_tool"
        assert parent_of(agent, spans) is tool
        assert agent.attributes["gen_ai.tool.call.id"] == tool.attributes["gen_ai.tool.call.id"]
        assert agent.attributes["gen_ai.agent.name"] == unit and agent.attributes["baton.agent.status"] == "success"
        # the specialist's own iteration 1 sits under its agent, never under the router's iteration 1
        assert parent_of(sub_llm, spans) is agent and sub_llm.attributes["baton.iteration"] == 1
        assert sub_llm.attributes["gen_ai.usage.input_tokens"] == 50
        assert tool.start_time <= agent.start_time <= sub_llm.start_time <= sub_llm.end_time <= agent.end_time <= tool.end_time
        assert tool.status.status_code is StatusCode.UNSET
    assert root.start_time <= first.start_time and final.end_time <= root.end_time
    assert tracker.open_workflows() == []


async def test_a_streamed_answer_counts_its_chunks(tracker, exporter):
    orchestrator = OrchestratorAgent("finance", model=FunctionModel(route))
    orchestrator.add_agent(TableAgent("pokemon"))
    orchestrator.add_agent(TableAgent("epson"))
    items = [item async for item in orchestrator.ask_stream("both units", tracker=tracker)]
    tokens = [i for i in items if isinstance(i, Event) and i.type == "llm.token"]
    tracker.end_workflow(items[-1].workflow_id)
    final = max(by_name(exporter.get_finished_spans())["chat function-model"], key=lambda s: s.start_time)
    assert final.attributes["baton.llm.stream"] is True
    assert final.attributes["baton.llm.stream_chunks"] == len(tokens) > 1
    assert 0 <= final.attributes["baton.llm.time_to_first_token_ms"] <= (final.end_time - final.start_time) / 1e6


async def test_content_is_left_out_unless_asked_for(exporter):
    for capture in (False, True):
        exporter.clear()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        tracker = OTelTracker(provider, sweep_interval_s=None, capture_content=capture)
        orchestrator = OrchestratorAgent("finance", model=FunctionModel(route))
        orchestrator.add_agent(TableAgent("pokemon"))
        await orchestrator.ask("secret revenue question", tracker=tracker)
        tracker.shutdown()
        dumped = json.dumps([dict(s.attributes) for s in exporter.get_finished_spans()])
        assert ("secret revenue question" in dumped) is capture
        tool = by_name(exporter.get_finished_spans())["execute_tool pokemon"][0]
        assert ("gen_ai.tool.call.arguments" in tool.attributes) is capture


async def test_sql_attempts_are_spans_under_the_sql_agent(tracker, exporter, make_db):
    from baton.specialists.sql.agent import SQLAgent
    from test_sql_engine import SHOP

    db = make_db("sqlite", *SHOP)
    sql_model = ScriptedModel([
        LLMResponse(tool_calls=[tool_call("run_sql", {"sql": "SELECT nme FROM customers"})]),
        LLMResponse(tool_calls=[tool_call("run_sql", {"sql": "SELECT name FROM customers ORDER BY name"})]),
        "Ada, Bo and Cy.",
    ])
    orchestrator = OrchestratorAgent("shop", model=FunctionModel(lambda m, t: LLMResponse(tool_calls=[tool_call("shop_db", {"question": "names"})])))
    orchestrator.add_agent(SQLAgent(db.connection(), name="shop_db", description="the shop database", model=sql_model))
    message = await orchestrator.ask("customer names?", tracker=tracker)
    assert message.data, message.error
    tracker.end_workflow(message.workflow_id)
    spans = exporter.get_finished_spans()
    (agent,) = by_name(spans)["invoke_agent shop_db"]
    attempts = sorted(by_name(spans)["sql.attempt"], key=lambda s: s.attributes["baton.sql.attempt"])
    assert [parent_of(s, spans) for s in attempts] == [agent, agent]
    assert [s.attributes["baton.sql.outcome"] for s in attempts] == ["invalid", "success"]
    assert attempts[0].status.status_code is StatusCode.ERROR and attempts[0].attributes["error.type"] == "column_not_found"
    assert attempts[1].status.status_code is StatusCode.UNSET and attempts[1].attributes["db.response.returned_rows"] == 3
    assert "db.query.text" not in attempts[1].attributes  # content capture is off by default
    assert all(s.start_time <= s.end_time for s in attempts)


async def test_pipeline_stages_are_spans_and_a_resumed_run_links_back(tracker, exporter):
    from baton.pipeline import CheckpointDecision, PipelineExecutor
    from pipeline_doubles import agent_runner
    from test_pipeline_executor import checkpoint_plan

    executor = PipelineExecutor(agent_runner())
    context = AgentContext(user_question="q", tracker=tracker)
    run = await executor.start(checkpoint_plan(), context)
    assert run.status == "paused"
    # a human takes their time: the idle sweep ends the paused workflow's root
    assert tracker.sweep(now=max(s.end_time for s in exporter.get_finished_spans()) / 1e9 + tracker.idle_timeout_s + 1) == 1
    first_root = next(s for s in exporter.get_finished_spans() if s.parent is None)
    (top,) = by_name(exporter.get_finished_spans())["stage top"]
    assert parent_of(top, exporter.get_finished_spans()) is first_root
    assert top.attributes["baton.stage.status"] == "success" and top.attributes["baton.stage.rows"] == 3
    assert [e.name for e in first_root.events] == ["stage.checkpoint"]

    resumed = await executor.resume(context.workflow_id, CheckpointDecision("approve"), context)
    assert resumed.status == "complete"
    tracker.end_workflow(context.workflow_id)
    spans = exporter.get_finished_spans()
    roots = [s for s in spans if s.parent is None]
    assert len(roots) == 2 and roots[1].attributes["baton.workflow.resumed"] is True
    assert roots[1].links[0].context.span_id == first_root.context.span_id
    (best,) = by_name(spans)["stage best"]
    assert parent_of(best, spans) is roots[1]
    assert "pipeline.complete" in [e.name for e in roots[1].events]


async def test_llm_failure_marks_the_span_as_an_error(tracker, exporter):
    orchestrator = OrchestratorAgent("finance", model=ScriptedModel([ProviderError("upstream 500", provider="scripted", model="m")]))
    orchestrator.add_agent(TableAgent("pokemon"))
    message = await orchestrator.ask("anything", tracker=tracker)
    assert message.error
    names = by_name(exporter.get_finished_spans())
    (chat,) = names["chat"]
    assert chat.status.status_code is StatusCode.ERROR and chat.attributes["error.type"] == "ProviderError"
    (root,) = names["invoke_workflow finance"]
    assert root.status.status_code is StatusCode.ERROR and root.attributes["baton.workflow.status"] == "error"


def test_workflow_events_name_the_root_and_end_it(tracker, exporter):
    tracker.emit(event_of("workflow.start", {"agent": "finance", "session_id": "s-1", "question": "q"}, "w1", ts=100.0))
    tracker.emit(event_of("llm.start", {"iteration": 1}, "w1", ts=100.5))
    tracker.emit(event_of("llm.end", {"iteration": 1, "usage": {"input_tokens": 7, "output_tokens": 2}, "model": "m", "provider": "openai"}, "w1", ts=101.0))
    assert not [s for s in exporter.get_finished_spans() if s.parent is None]
    tracker.emit(event_of("workflow.end", {"status": "success"}, "w1", ts=101.25))
    root = next(s for s in exporter.get_finished_spans() if s.parent is None)
    assert root.name == "invoke_workflow finance" and root.attributes["gen_ai.conversation.id"] == "s-1"
    assert (root.start_time, root.end_time) == (100_000_000_000, 101_250_000_000)  # the events' own times
    assert "baton.question" not in root.attributes
    chat = by_name(exporter.get_finished_spans())["chat m"][0]
    assert (chat.start_time, chat.end_time) == (100_500_000_000, 101_000_000_000)


def test_a_cancelled_request_is_closed_as_unfinished_after_the_stale_timeout(tracker, exporter):
    tracker.emit(event_of("tool.start", {"name": "t", "call_id": "c1"}, "w2", ts=10.0))
    tracker.emit(event_of("llm.start", {"iteration": 1}, "w2", ts=11.0))
    assert tracker.sweep(now=10.0 + tracker.idle_timeout_s + 5) == 0  # spans still open: not idle
    assert tracker.sweep(now=11.0 + tracker.stale_timeout_s) == 1
    spans = by_name(exporter.get_finished_spans())
    assert spans["execute_tool t"][0].attributes["baton.unfinished"] is True
    assert spans["chat"][0].attributes["baton.unfinished"] is True
    assert tracker.open_workflows() == []


def test_emit_never_raises_on_odd_events_or_a_broken_exporter(exporter, caplog):
    class BrokenTracer:
        def start_span(self, *a, **kw):
            raise RuntimeError("exporter down")

    class Broken(TracerProvider):
        def get_tracer(self, *a, **kw):
            return BrokenTracer()

    for tracker in (OTelTracker(Broken(), sweep_interval_s=None), OTelTracker(TracerProvider(), sweep_interval_s=None)):
        for event in [event_of("llm.end", {}, None), event_of("tool.end", {"call_id": None}), event_of("agent.start", {"agent": object()}, "w"),
                      event_of("sql.attempt", {"duration_ms": "n/a"}, "w"), event_of("llm.start", {"iteration": [1]}, "w"),
                      event_of("loop.trimmed", {"weird": {1, 2}}, "w"), event_of("stage.failed", {}, "w")]:
            tracker.emit(event)
        tracker.shutdown()
    assert "could not export" in caplog.text


def test_logging_tracker_writes_one_json_line_per_event(caplog):
    tracker = LoggingTracker()
    with caplog.at_level(logging.INFO, logger="baton.events"):
        tracker.emit(event_of("agent.start", {"agent": "pokemon", "call_id": "c1", "question": "private"}, "w1", ts=0.0))
        tracker.emit(event_of("llm.token", {"delta": "hi"}, "w1"))  # DEBUG only
        tracker.emit(event_of("sql.attempt", {"sql": "SELECT 1", "outcome": "success", "when": object()}, "w1"))
    lines = [json.loads(r.getMessage()) for r in caplog.records if r.name == "baton.events"]
    assert [line["event"] for line in lines] == ["agent.start", "sql.attempt"]
    assert lines[0] == {"ts": "1970-01-01T00:00:00.000+00:00", "event": "agent.start", "workflow_id": "w1",
                        "data": {"agent": "pokemon", "call_id": "c1"}}
    assert "sql" not in lines[1]["data"] and lines[1]["data"]["outcome"] == "success"
    assert caplog.records[0].baton_event["event"] == "agent.start"


def test_configure_observability_follows_the_environment(caplog):
    assert isinstance(configure_observability({}), LoggingTracker)
    assert isinstance(configure_observability({"BATON_OTEL_CONSOLE": "1", "OTEL_SDK_DISABLED": "true"}), LoggingTracker)
    assert isinstance(configure_observability({"OTEL_TRACES_EXPORTER": "none", "BATON_OTEL_CONSOLE": "1"}), LoggingTracker)
    console = configure_observability({"BATON_OTEL_CONSOLE": "1", "OTEL_SERVICE_NAME": "finance-api"})
    assert isinstance(console, OTelTracker)
    assert console.provider.resource.attributes["service.name"] == "finance-api"
    console.shutdown()
    try:
        import opentelemetry.exporter.otlp  # noqa: F401
    except ImportError:
        with caplog.at_level(logging.WARNING, logger="baton.observability"):
            fallback = configure_observability({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"})
        assert isinstance(fallback, LoggingTracker)
        assert "opentelemetry-exporter-otlp-proto-http is not installed" in caplog.text
    captured = configure_observability({"BATON_OTEL_CONSOLE": "1", "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"})
    assert captured.capture_content is True
    captured.shutdown()
