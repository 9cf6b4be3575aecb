import asyncio
import random

import pytest

from agent_doubles import FlakyAgent, TableAgent, TextAgent
from baton.agents import AgentRegistry, OrchestratorAgent
from baton.errors import AgentRetryableError, ProviderAuthError
from baton.events import Event, RecordingTracker
from baton.llm import FunctionModel, ScriptedModel, tool_call
from baton.messages import LLMResponse
from baton.response import AIMessage, ResponseType

UNITS = ["pokemon_finance", "epson_finance", "roadshows_finance", "general_finance"]


def router(messages, tools):
    """Routes 'UNIT: question' to UNIT, 'compare A and B' to both; answers after tool results."""
    last = messages[-1]
    if last.role == "tool":
        done = [m.content for m in messages if m.role == "tool"]
        return "Summary: " + " | ".join(done)
    question = last.content
    if question.startswith("compare "):
        a, b = question.removeprefix("compare ").split(" and ")
        return LLMResponse(tool_calls=[tool_call(a, {"question": question}), tool_call(b, {"question": question})])
    unit = question.split(":")[0]
    return LLMResponse(tool_calls=[tool_call(unit, {"question": question})])


def finance(model, **kw) -> OrchestratorAgent:
    orchestrator = OrchestratorAgent("FinanceOrchestrator", model=model, **kw)
    for unit in UNITS:
        orchestrator.add_agent(TableAgent(unit, [{"unit": unit, "revenue": 100 + UNITS.index(unit)}]))
    return orchestrator


async def test_200_concurrent_passthrough_requests_each_get_their_own_data():
    orchestrator = finance(FunctionModel(router))
    questions = [f"{random.Random(i).choice(UNITS)}: question {i}" for i in range(200)]
    answers = await asyncio.gather(*(orchestrator.ask(q, session_id=f"s{i}") for i, q in enumerate(questions)))
    for i, (question, answer) in enumerate(zip(questions, answers)):
        unit = question.split(":")[0]
        assert answer.metadata["mode"] == "passthrough" and answer.metadata["routed_to"] == unit
        assert answer.data == [{"unit": unit, "revenue": 100 + UNITS.index(unit), "question": question}]
        assert answer.metadata["source"] == unit
        assert answer.session_id == f"s{i}" and answer.input == question


async def test_200_concurrent_mixed_passthrough_and_synthesis():
    orchestrator = finance(FunctionModel(router))
    questions = []
    for i in range(200):
        rng = random.Random(i)
        if i % 3 == 0:
            a, b = rng.sample(UNITS, 2)
            questions.append(f"compare {a} and {b}")
        else:
            questions.append(f"{rng.choice(UNITS)}: q{i}")
    answers = await asyncio.gather(*(orchestrator.ask(q) for q in questions))
    for question, answer in zip(questions, answers):
        if question.startswith("compare "):
            a, b = question.removeprefix("compare ").split(" and ")
            assert answer.metadata["mode"] == "synthesis"
            assert answer.metadata["agents_consulted"] == [a, b]
            assert set(answer.data) == {a, b}
            assert answer.data[a][0]["unit"] == a and answer.data[b][0]["question"] == question
            assert answer.content.startswith("Summary: ")
        else:
            unit = question.split(":")[0]
            assert answer.metadata["mode"] == "passthrough"
            assert answer.data[0]["unit"] == unit and answer.data[0]["question"] == question


async def test_specialist_called_twice_keeps_both_results():
    model = ScriptedModel([
        LLMResponse(tool_calls=[tool_call("epson_finance", {"question": "2024"}), tool_call("epson_finance", {"question": "2025"})]),
        "2025 beat 2024.",
    ])
    answer = await finance(model).ask("Epson 2024 vs 2025?")
    assert answer.metadata["mode"] == "synthesis"
    assert answer.data["epson_finance"][0]["question"] == "2024"
    assert answer.data["epson_finance#2"][0]["question"] == "2025"
    assert answer.metadata["agents_consulted"] == ["epson_finance"]


async def test_passthrough_never_mutates_the_specialists_message():
    kept: list[AIMessage] = []

    class Keeper(TableAgent):
        async def run(self, context, *, question, **kw):
            result = await super().run(context, question=question)
            kept.append(result.ai_message)
            return result

    orchestrator = OrchestratorAgent(model=FunctionModel(router))
    orchestrator.add_agent(Keeper("pokemon_finance"))
    answer = await orchestrator.ask("pokemon_finance: revenue?", session_id="S")
    original = kept[0]
    assert answer is not original and answer.data is not original.data
    assert original.session_id is None and original.input is None
    assert original.metadata == {"source": "pokemon_finance"}
    assert answer.metadata["orchestrated"] is True and answer.session_id == "S"
    assert answer.turn_id != original.turn_id


async def test_early_exit_saves_one_llm_call_per_passthrough():
    on, off = FunctionModel(router), FunctionModel(router)
    a = await finance(on).ask("epson_finance: revenue?")
    b = await finance(off, early_exit=False).ask("epson_finance: revenue?")
    assert on.call_count == 1 and off.call_count == 2
    assert a.metadata["llm_calls_saved"] == 1 and "llm_calls_saved" not in b.metadata
    assert a.data == b.data and b.metadata["mode"] == "passthrough"


async def test_text_only_specialist_means_synthesis_with_the_llm_text():
    model = ScriptedModel([LLMResponse(tool_calls=[tool_call("helper", {"question": "hi"})]), "The helper agrees."])
    orchestrator = OrchestratorAgent(model=model)
    orchestrator.add_agent(TextAgent("helper", "says things"))
    answer = await orchestrator.ask("hi")
    assert answer.metadata["mode"] == "synthesis" and answer.content == "The helper agrees." and answer.data is None
    assert model.remaining == 0  # no early exit without rich content


async def test_no_specialist_called_returns_the_llm_answer_as_is():
    answer = await finance(ScriptedModel(["Hello! Ask me about revenue."])).ask("hi")
    assert answer.content == "Hello! Ask me about revenue." and answer.metadata["mode"] == "direct"
    assert answer.data is None


async def test_failed_specialist_is_typed_and_the_llm_sees_short_text():
    model = ScriptedModel([LLMResponse(tool_calls=[tool_call("flaky", {"question": "x"})]), "Sorry, the data is unavailable."])
    orchestrator = OrchestratorAgent(model=model)
    orchestrator.add_agent(FlakyAgent("flaky", [AgentRetryableError("db down")] * 3))
    answer = await orchestrator.ask("x")
    assert answer.metadata["mode"] == "synthesis"
    assert answer.metadata["agent_errors"][0]["error_type"] == "AgentRetryableError"
    tool_message = [m for m in model.calls[1][0] if m.role == "tool"][0]
    assert tool_message.content.startswith("Error (AgentRetryableError) from flaky")


async def test_model_failure_is_a_typed_error_answer():
    answer = await finance(ScriptedModel([ProviderAuthError("bad key", provider="x")])).ask("hi")
    assert answer.response_type is ResponseType.ERROR and "bad key" in answer.error


async def test_agent_names_resolved_through_the_registry_once():
    registry = AgentRegistry()
    for unit in UNITS:
        registry.register(unit, lambda unit=unit: TableAgent(unit))
    orchestrator = OrchestratorAgent(model=FunctionModel(router), agent_names=UNITS, registry=registry)
    answers = await asyncio.gather(*(orchestrator.ask(f"{u}: x") for u in UNITS))
    assert orchestrator.list_agents() == UNITS
    assert [a.metadata["routed_to"] for a in answers] == UNITS
    orchestrator.remove_agent("general_finance")
    assert "general_finance" not in orchestrator.list_agents()
    with pytest.raises(KeyError, match="has no specialist"):
        orchestrator.remove_agent("nope")


async def test_ask_stream_yields_events_then_the_same_answer_as_ask():
    streamed = []
    async for item in finance(FunctionModel(router)).ask_stream("compare epson_finance and general_finance"):
        streamed.append(item)
    final = streamed[-1]
    events = [e for e in streamed if isinstance(e, Event)]
    assert isinstance(final, AIMessage) and all(isinstance(e, Event) for e in streamed[:-1])
    types = [e.type for e in events]
    assert types.count("agent.start") == 2 and types.count("agent.end") == 2
    routed = [e.data["agent"] for e in events if e.type == "agent.routed"]
    assert routed == ["epson_finance", "general_finance"] and types.index("agent.routed") < types.index("agent.start")
    assert "llm.token" in types and "llm.end" in types
    assert types.index("agent.start") < types.index("agent.end")
    direct = await finance(FunctionModel(router)).ask("compare epson_finance and general_finance")
    assert final.metadata["mode"] == direct.metadata["mode"] == "synthesis"
    assert final.data.keys() == direct.data.keys() and final.content == direct.content


async def test_token_usage_adds_up_orchestrator_and_specialists():
    model = ScriptedModel([
        LLMResponse(tool_calls=[tool_call("epson_finance", {"question": "x"}), tool_call("pokemon_finance", {"question": "y"})],
                    usage={"input_tokens": 10, "output_tokens": 2}),
        LLMResponse(content="done", usage={"input_tokens": 20, "output_tokens": 3}),
    ])
    tracker = RecordingTracker()
    answer = await finance(model).ask("both", tracker=tracker)
    assert answer.token_usage == {"input_tokens": 32, "output_tokens": 5}
    assert [e["agent"] for e in answer.tool_call_log] == ["epson_finance", "pokemon_finance"]


async def test_results_are_kept_per_tool_call_even_when_a_model_reuses_ids():
    model = ScriptedModel([
        LLMResponse(tool_calls=[tool_call("pokemon_finance", {"question": "a"}, id="call_0")]),
        LLMResponse(tool_calls=[tool_call("epson_finance", {"question": "b"}, id="call_0")]),  # id reused
        "done",
    ])
    answer = await finance(model, early_exit=False).ask("both, one after the other")
    assert answer.metadata["mode"] == "synthesis"
    assert set(answer.data) == {"pokemon_finance", "epson_finance"}
    assert [e["call_id"] for e in answer.tool_call_log] == ["call_0", "call_0"]


async def test_nested_orchestrators_keep_their_own_results():
    inner = finance(FunctionModel(router))
    outer = OrchestratorAgent("outer", model=FunctionModel(
        lambda m, t: "done" if m[-1].role == "tool" else LLMResponse(tool_calls=[tool_call("finance_team", {"question": m[-1].content})])
    ))
    outer.add_agent(inner, tool_name="finance_team")
    answer = await outer.ask("pokemon_finance: revenue?")
    assert answer.metadata["mode"] == "passthrough" and answer.metadata["routed_to"] == "FinanceOrchestrator"
    assert answer.data[0]["unit"] == "pokemon_finance"


async def test_one_success_beside_a_failure_is_synthesised_with_the_error():
    model = ScriptedModel([
        LLMResponse(tool_calls=[tool_call("epson_finance", {"question": "x"}), tool_call("flaky", {"question": "y"})]),
        "Epson is fine; the other unit's data is unavailable.",
    ])
    orchestrator = finance(model)
    orchestrator.add_agent(FlakyAgent("flaky", [AgentRetryableError("down")] * 3))
    answer = await orchestrator.ask("both")
    assert answer.metadata["mode"] == "synthesis" and "unavailable" in answer.content
    assert list(answer.data) == ["epson_finance"] and answer.metadata["agent_errors"][0]["agent"] == "flaky"


async def test_a_requests_model_preference_comes_first_then_the_app_model():
    from stub_llm_server import openai_error, openai_tool_calls, running_stub

    app_model = FunctionModel(router)
    orchestrator = finance(app_model)
    with running_stub() as stub:
        stub.script("openai", openai_tool_calls([("c1", "pokemon_finance", '{"question": "cards?"}')]))
        preferred = f"openai-compatible:{stub.openai_base_url}#user-model"
        answer = await orchestrator.ask("which unit sells cards?", model=preferred)
        assert answer.metadata["routed_to"] == "pokemon_finance" and app_model.call_count == 0
        assert stub.requests_of("openai")[0].body["model"] == "user-model"
        # the preferred server fails (500s): the chain falls back to the app's model
        stub.script("openai", *[openai_error(500, "down")] * 10)
        fallback = await orchestrator.ask("epson_finance: x", model=preferred)
        assert fallback.metadata["routed_to"] == "epson_finance" and app_model.call_count == 1


async def test_synthesis_keeps_each_datasets_chart_under_its_key():
    class Charted(TableAgent):
        async def run(self, context, *, question, **kw):
            result = await super().run(context, question=question)
            result.ai_message.viz_config = {"mark": "bar", "title": self.name}
            return result

    orchestrator = OrchestratorAgent(model=FunctionModel(router))
    for unit in ("epson_finance", "general_finance"):
        orchestrator.add_agent(Charted(unit))
    answer = await orchestrator.ask("compare epson_finance and general_finance")
    assert answer.metadata["charts"] == {"epson_finance": {"mark": "bar", "title": "epson_finance"},
                                         "general_finance": {"mark": "bar", "title": "general_finance"}}


def usage_model(*, final: bool = True) -> ScriptedModel:
    """Routes to epson_finance on a 100-token prompt; answers on a 300-token one."""
    turns = [LLMResponse(tool_calls=[tool_call("epson_finance", {"question": "q"})], usage={"input_tokens": 100})]
    return ScriptedModel(turns + ([LLMResponse(content="done", usage={"input_tokens": 300})] if final else []))


async def test_pass_through_answers_report_context_usage_pct():
    early = OrchestratorAgent(model=usage_model(final=False), context_window=1000)  # early exit: one routing call
    full = OrchestratorAgent(model=usage_model(), context_window=1000, early_exit=False)
    streamed = OrchestratorAgent(model=usage_model(), context_window=1000, early_exit=False)
    for orchestrator in (early, full, streamed):
        orchestrator.add_agent(TableAgent("epson_finance"))
    first = await early.ask("q")
    second = await full.ask("q")
    third = [item async for item in streamed.ask_stream("q")][-1]
    assert [a.metadata["mode"] for a in (first, second, third)] == ["passthrough"] * 3
    assert (first.context_usage_pct, second.context_usage_pct, third.context_usage_pct) == (10, 30, 30)
    assert first.to_dict()["context_usage_pct"] == 10  # on the wire too


async def test_a_specialists_own_fuller_context_is_the_answers_context_usage_pct():
    class Pressed(TableAgent):  # a specialist that ran its own loop (an MCP specialist, a nested orchestrator)
        def __init__(self, name, pct):
            super().__init__(name)
            self.pct = pct

        async def run(self, context, *, question, **kw):
            result = await super().run(context, question=question)
            result.ai_message.context_usage_pct = self.pct
            return result

    for pct, expected in ((55, 55), (4, 10)):
        orchestrator = OrchestratorAgent(model=usage_model(final=False), context_window=1000)
        orchestrator.add_agent(Pressed("epson_finance", pct))
        answer = await orchestrator.ask("q")
        assert answer.metadata["mode"] == "passthrough" and answer.context_usage_pct == expected
    synthesis = OrchestratorAgent(model=FunctionModel(router))
    synthesis.add_agent(Pressed("epson_finance", 41))
    synthesis.add_agent(Pressed("general_finance", 7))
    answer = await synthesis.ask("compare epson_finance and general_finance")
    assert answer.metadata["mode"] == "synthesis" and answer.context_usage_pct == 41


async def test_earlier_results_reach_later_calls_of_the_same_request():
    """Seed 000's cross-pollination, Baton's way (the orchestrator's docstring): the routing
    model reads every earlier string result and passes what a later specialist needs in
    ``context``; the later specialist can also read the request's results itself."""
    read_by_model: list[list[str]] = []
    seen: dict = {}

    class Reader(TableAgent):
        async def run(self, context, *, question, **kw):
            memory = context.execution_memory
            seen.update(earlier=[r.to_text() for r in memory.successful()], extra=kw.get("extra_context"),
                        by_agent={name: [r.task for r in rs] for name, rs in memory.by_agent().items()})
            return await super().run(context, question=question)

    def model(messages, tools):
        earlier = [m.content for m in messages if m.role == "tool"]
        read_by_model.append(earlier)
        if not earlier:
            return LLMResponse(tool_calls=[tool_call("epson_finance", {"question": "Epson 2025?"})])
        if len(earlier) == 1:
            return LLMResponse(tool_calls=[tool_call("general_finance", {"question": "Share?", "context": earlier[0]})])
        return "Epson is part of the total."

    orchestrator = OrchestratorAgent(model=FunctionModel(model), early_exit=False)
    orchestrator.add_agent(TableAgent("epson_finance"))
    orchestrator.add_agent(Reader("general_finance"))
    answer = await orchestrator.ask("Epson's share of the total?")
    assert read_by_model == [[], ["epson_finance: 1 rows"], ["epson_finance: 1 rows", "general_finance: 1 rows"]]
    assert seen == {"earlier": ["epson_finance: 1 rows"], "extra": "epson_finance: 1 rows",
                    "by_agent": {"epson_finance": ["Epson 2025?"]}}
    assert answer.metadata["mode"] == "synthesis" and set(answer.data) == {"epson_finance", "general_finance"}
    again = await orchestrator.ask("Epson's share of the total?")  # a new request starts with no earlier results
    assert again.metadata["agents_consulted"] == ["epson_finance", "general_finance"] and seen["by_agent"] == {"epson_finance": ["Epson 2025?"]}
