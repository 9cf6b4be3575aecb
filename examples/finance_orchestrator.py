"""Seed 000's use case: four finance specialists behind one FinanceOrchestrator.

Each specialist is a SQL agent over the demo company's database; the orchestrator routes a
question to the right one (or several) and returns its rich answer intact: rows, chart spec
and SQL when one specialist answered (pass-through), a merged {agent: data} answer when
several did (synthesis).

Run it with a configured model (any of README's BATON_MODEL strings):

    BATON_MODEL=openai:gpt-4o-mini OPENAI_API_KEY=... python examples/finance_orchestrator.py "Compare Pokemon and Epson revenue in 2025"

Without BATON_MODEL it still answers the verified questions, with no LLM call at all:

    python examples/finance_orchestrator.py "What was Pokemon revenue by month in 2025?"
"""

from __future__ import annotations

import asyncio
import sys
import tempfile

from baton import AgentRegistry, LexicalRouter, OrchestratorAgent, SQLAgent, SQLConnection, model_from_env
from baton.agents.lexical_routing import GENERIC_NAME_WORDS
from baton.demo.data import build_demo_database
from baton.demo.verified import VERIFIED_QUESTIONS
from baton.demo.workspace import DESCRIPTIONS
from baton.verified import examples_by_agent


async def main(question: str) -> None:
    directory = tempfile.mkdtemp(prefix="baton-finance-")
    database = build_demo_database(f"{directory}/finance.sqlite")
    connection = SQLConnection(f"sqlite:///{database}", id="finance")
    model = model_from_env()  # None when BATON_MODEL is unset

    # Specialists are registered by name and built lazily, once, on first use.
    registry = AgentRegistry()
    for name, description in DESCRIPTIONS.items():
        verified = [v for v in VERIFIED_QUESTIONS if v.agent == name]
        registry.register(
            name,
            lambda name=name, description=description, verified=verified: SQLAgent(
                connection, name=name, description=description, model=model, verified=verified
            ),
        )

    orchestrator = OrchestratorAgent(
        "FinanceOrchestrator",
        model=model or LexicalRouter(examples_by_agent(VERIFIED_QUESTIONS), generic_name_words=GENERIC_NAME_WORDS | {"finance"}),
        agent_names=list(DESCRIPTIONS),
        registry=registry,
        verified=VERIFIED_QUESTIONS,
    )
    answer = await orchestrator.ask(question)
    print(answer.content)
    print("mode:", answer.metadata.get("mode"), "| routed to:", answer.metadata.get("routed_to") or answer.metadata.get("agents_consulted"))
    if isinstance(answer.data, list):
        for row in answer.data[:10]:
            print(row)
    elif isinstance(answer.data, dict):
        for agent, rows in answer.data.items():
            print(f"{agent}: {len(rows)} rows")
    if answer.query:
        print("SQL:", answer.query)
    await connection.aclose()


if __name__ == "__main__":
    asyncio.run(main(" ".join(sys.argv[1:]) or "What was Pokemon revenue by month in 2025?"))
