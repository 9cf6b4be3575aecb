"""The demo workspace: the finance database, four SQL specialists and FinanceOrchestrator.

``build_demo_workspace(directory)`` makes (or reuses) ``finance.sqlite`` in ``directory``
and wires seed 000's use case over it. With no model configured it still answers the
verified questions (the orchestrator routes them without an LLM and the specialists run
their verified SQL); anything else gets an answer saying how to configure a model.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from baton.agents import LexicalRouter, OrchestratorAgent
from baton.agents.lexical_routing import GENERIC_NAME_WORDS
from baton.llm.base import ChatModel
from baton.demo.data import build_demo_database
from baton.demo.docs import doctrine_folder
from baton.demo.verified import VERIFIED_QUESTIONS
from baton.memory.bridge import SQLMemory
from baton.verified import VerifiedQuestion, examples_by_agent

DATABASE_FILE = "finance.sqlite"
MEMORY_FILE = "memory.sqlite"
DOCS_INDEX_FILE = "docs.sqlite"
DOCS_DESCRIPTION = "Definitions and rules behind the finance data: how revenue, costs and profit are defined, data rules, glossary."
DESCRIPTIONS = {
    "pokemon_finance": "Revenue, products and costs of the Pokemon business unit (trading cards, plush, merchandise).",
    "epson_finance": "Revenue, products and costs of the Epson business unit (printers, projectors, ink).",
    "roadshows_finance": "Roadshow events by city: tickets sold, ticket prices, venue costs, profit; Roadshows revenue.",
    "general_finance": "Company-wide finance across all business units: totals, costs by category, profit per unit.",
}
UNIT_IDS = {"pokemon_finance": 1, "epson_finance": 2, "roadshows_finance": 3, "general_finance": None}


@dataclass
class DemoWorkspace:
    directory: Path
    database: Path
    orchestrator: OrchestratorAgent
    memory: Any = None  # the workspace's baton.memory.MemoryStore
    name: str = "demo"
    verified: tuple[VerifiedQuestion, ...] = VERIFIED_QUESTIONS
    model: ChatModel | None = None
    closers: list[Callable] = field(default_factory=list)

    @property
    def no_model(self) -> bool:
        return self.model is None

    async def aclose(self) -> None:
        for close in self.closers:
            await close()


def build_demo_workspace(directory: str | Path, *, model: ChatModel | None = None, rebuild: bool = False,
                         name: str = "demo") -> DemoWorkspace:
    """The demo workspace in ``directory`` (the database is built once, ~1 s)."""
    from baton.specialists.knowledge.folder import FolderKnowledgeAgent
    from baton.specialists.sql.agent import SQLAgent
    from baton.specialists.sql.engines import SQLConnection

    directory = Path(directory)
    database = directory / DATABASE_FILE
    if rebuild:  # a clean slate: the database, and what the demo remembered and discussed
        for leftover in (MEMORY_FILE, "sessions.sqlite", DOCS_INDEX_FILE):
            for suffix in ("", "-wal", "-shm"):
                (directory / (leftover + suffix)).unlink(missing_ok=True)
    if rebuild or not database.exists():
        build_demo_database(database)
    connection = SQLConnection(f"sqlite:///{database}", id="demo")
    memory, scope = open_demo_memory(directory, name)
    orchestrator = OrchestratorAgent(
        "FinanceOrchestrator",
        "Answers finance questions for Pokemon, Epson, Roadshows and the company as a whole.",
        model=model or LexicalRouter(examples_by_agent(VERIFIED_QUESTIONS), generic_name_words=GENERIC_NAME_WORDS | {"finance"}),
        verified=VERIFIED_QUESTIONS,
    )
    for agent_name, description in DESCRIPTIONS.items():
        own = [v for v in VERIFIED_QUESTIONS if v.agent == agent_name]
        agent = SQLAgent(connection, name=agent_name, description=description, model=model, verified=own,
                         memory=SQLMemory(memory, scope, agent=agent_name))
        orchestrator.add_agent(agent)
    orchestrator.add_agent(FolderKnowledgeAgent(doctrine_folder(), directory / DOCS_INDEX_FILE, name="finance_docs",
                                                description=DOCS_DESCRIPTION, model=model))
    if model is not None:
        orchestrator.planning = demo_planning(orchestrator, model)
    workspace = DemoWorkspace(directory, database, orchestrator, memory=memory, model=model, name=name)
    workspace.closers.append(connection.aclose)
    return workspace


def open_demo_memory(directory: Path, workspace: str = "demo"):
    """The demo's memory (a SQLite journal beside the database), with the verified questions
    as benchmarks. Re-running adds nothing: the same benchmark from the same source is a
    self-repetition the gate leaves unchanged."""
    from baton.memory import MemoryStore, Principal, Provenance, RecordDraft, TrustedAuthenticator, index_doctrine
    from baton.memory.feedback import question_key

    store = MemoryStore(f"sqlite:///{directory / MEMORY_FILE}", authenticator=TrustedAuthenticator())
    scope = store.open(Principal(workspace))
    index_doctrine(scope, doctrine_folder())  # unchanged sections: nothing written
    for verified in VERIFIED_QUESTIONS:
        store.remember(scope, RecordDraft(
            "benchmark", verified.question, entity="question", attribute=question_key(verified.question),
            scope=f"connection:{verified.connection_id}", value=" ".join(verified.sql.split()), category="benchmark",
            connection_id=verified.connection_id, verified=True, provenance=Provenance("operator", agent="demo"),
            data={"question": verified.question, "sql": verified.sql, "agent": verified.agent},
        ))
    return store, scope


def demo_planning(orchestrator: OrchestratorAgent, model: ChatModel):
    """Multi-step questions (with a model): each ``query_database`` stage goes back through
    the orchestrator, which routes it to the right specialist (stages carry
    ``_skip_complexity``, so they never plan again); ``analyze_results`` runs the DataFrame
    specialist over the stages' results."""
    from baton.pipeline import ANALYZE_RESULTS, QUERY_DATABASE, AgentStageRunner, PipelineExecutor, Planner
    from baton.pipeline.planning import PipelinePlanning
    from baton.specialists.dataframe import DataFrameAgent

    runner = AgentStageRunner({QUERY_DATABASE: orchestrator, ANALYZE_RESULTS: DataFrameAgent(name="analysis", model=model)})
    return PipelinePlanning(Planner(model, tools=(QUERY_DATABASE, ANALYZE_RESULTS)), PipelineExecutor(runner))
