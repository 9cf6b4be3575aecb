from agent_doubles import TableAgent
from baton.agents import OrchestratorAgent
from baton.agents.lexical_routing import GENERIC_NAME_WORDS, NO_MODEL_ANSWER, LexicalRouter
from baton.demo.verified import VERIFIED_QUESTIONS


def demo_router() -> LexicalRouter:
    examples: dict[str, list[str]] = {}
    for v in VERIFIED_QUESTIONS:
        examples.setdefault(v.agent, []).append(v.question)
    return LexicalRouter(examples, generic_name_words=GENERIC_NAME_WORDS | {"finance"})


def finance(model) -> OrchestratorAgent:
    o = OrchestratorAgent(model=model)
    descriptions = {
        "pokemon_finance": "Revenue, costs and products of the Pokemon business unit",
        "epson_finance": "Revenue, costs and products of the Epson business unit",
        "roadshows_finance": "Roadshow events: cities, tickets, venue costs, profit",
        "general_finance": "Company-wide totals across all business units",
    }
    for name, description in descriptions.items():
        o.add_agent(TableAgent(name), description=description)
    return o


async def test_lexical_router_routes_verified_and_paraphrased_questions():
    o = finance(demo_router())
    cases = {
        "What was Pokemon revenue by month in 2025?": "pokemon_finance",
        "epson sales per month": "epson_finance",
        "Which city sold the most roadshow tickets?": "roadshows_finance",
        "total revenue by business unit": "general_finance",
    }
    for question, expected in cases.items():
        answer = await o.ask(question)
        assert answer.metadata["routed_to"] == expected, question


async def test_lexical_router_says_how_to_configure_a_model_when_nothing_matches():
    answer = await finance(demo_router()).ask("Write me a poem about spring")
    assert answer.content == NO_MODEL_ANSWER and "BATON_MODEL" in answer.content
    assert answer.metadata["mode"] == "direct"


async def test_verified_question_is_routed_without_any_llm_call():
    from baton.llm import ScriptedModel

    model = ScriptedModel([])  # any LLM call would raise ScriptExhaustedError
    o = finance(model)
    o.verified = VERIFIED_QUESTIONS
    answer = await o.ask("Epson revenue by month in 2025, please")
    assert answer.metadata["routed_to"] == "epson_finance"
    assert answer.metadata["fast_path"] == "verified_question" and answer.metadata["llm_calls"] == 0
    assert model.calls == []
