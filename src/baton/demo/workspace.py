"""The demo workspace: the finance database, four SQL specialists and FinanceOrchestrator.

``build_demo_workspace(directory)`` makes (or reuses) ``finance.sqlite`` in ``directory``
and wires seed 000's use case over it, as a ``baton.workspace.Workspace``. With no model
configured it still answers the verified questions (the orchestrator routes them without
an LLM and the specialists run their verified SQL); anything else gets an answer saying
how to configure a model.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from baton.agents import LexicalRouter, OrchestratorAgent
from baton.agents.lexical_routing import GENERIC_NAME_WORDS
from baton.demo.data import build_demo_database
from baton.demo.docs import demo_vocabulary, doctrine_folder
from baton.demo.verified import VERIFIED_QUESTIONS
from baton.llm.base import ChatModel
from baton.memory.bridge import SQLMemory
from baton.verified import VerifiedQuestion, examples_by_agent
from baton.workspace import SessionStore, Workspace
from baton.workspace.planning import attach_planning
from baton.workspace.verified import current_verified, install_verified

DATABASE_FILE = "finance.sqlite"
MEMORY_FILE = "memory.sqlite"
SESSIONS_FILE = "sessions.sqlite"
DOCS_INDEX_FILE = "docs.sqlite"
DOCS_DESCRIPTION = "Definitions and rules behind the finance data: how revenue, costs and profit are defined, data rules, glossary."
DESCRIPTIONS = {
    "pokemon_finance": "Revenue, products and costs of the Pokemon business unit (trading cards, plush, merchandise).",
    "epson_finance": "Revenue, products and costs of the Epson business unit (printers, projectors, ink).",
    "roadshows_finance": "Roadshow events by city: tickets sold, ticket prices, venue costs, profit; Roadshows revenue.",
    "general_finance": "Company-wide finance across all business units: totals, costs by category, profit per unit.",
}
UNIT_IDS = {"pokemon_finance": 1, "epson_finance": 2, "roadshows_finance": 3, "general_finance": None}
# The empty page's document examples (``baton.workspace.examples``): questions the documents
# answer with no model (tests/test_document_routing.py, tests/test_browser_analyst.py).
DOCUMENT_EXAMPLES = (
    "What is a roadshow?",
    "How is profit defined?",
    "How are cancelled roadshow events handled?",
    "What counts as revenue?",
    "What is an EcoTank?",
)


class DemoWorkspace(Workspace):
    """The demo's ``Workspace``, which also knows its database file and verified questions."""

    def __init__(self, *args: Any, database: Path, verified: tuple[VerifiedQuestion, ...] = VERIFIED_QUESTIONS, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.database = database
        self.verified = verified  # the built-in ones; what is answered from: ``orchestrator.verified``
        self.vocabulary = None  # how questions are read (``demo_vocabulary``), set by the builder
        self.document_examples = DOCUMENT_EXAMPLES  # what the empty page offers to ask the documents


def build_demo_workspace(directory: str | Path, *, model: ChatModel | None = None, rebuild: bool = False,
                         name: str = "demo", sessions: SessionStore | None = None, tracker: Any = None,
                         owns_tracker: bool = False, pipelines: Any = "auto", state_url: str | None = None,
                         semantic: str | Path | None = None) -> DemoWorkspace:
    """The demo workspace in ``directory`` (the database is built once, ~1 s). It owns its
    connection, memory, document index and sessions: ``async with`` it, or ``await
    ws.aclose()``. Sessions and memory are SQLite files beside the database, or on the state
    database ``state_url`` (``baton.workspace.state``). With a model, multi-step questions
    run as pipelines (``pipelines`` as in ``baton.workspace.database.open_database_workspace``).

    Building is safe when processes start together on an empty folder: a file lock in
    ``directory`` lets one build the database and seed the memory while the others wait,
    then find both done."""
    from baton.specialists.knowledge.folder import FolderKnowledgeAgent
    from baton.specialists.sql.agent import SQLAgent
    from baton.specialists.sql.engines import SQLConnection

    directory = Path(directory)
    database = directory / DATABASE_FILE
    with _build_lock(directory):
        if rebuild:  # a clean slate: the database, and what the demo remembered and discussed
            for leftover in (MEMORY_FILE, SESSIONS_FILE, DOCS_INDEX_FILE):
                for suffix in ("", "-wal", "-shm"):
                    (directory / (leftover + suffix)).unlink(missing_ok=True)
        if rebuild or not database.exists():
            build_demo_database(database)
        memory, scope = open_demo_memory(directory, name, url=state_url)
        if sessions is None:
            sessions = SessionStore(state_url or directory / SESSIONS_FILE)
    router = LexicalRouter(examples_by_agent(VERIFIED_QUESTIONS), generic_name_words=GENERIC_NAME_WORDS | {"finance"}, catalog=True)
    orchestrator = OrchestratorAgent(
        "FinanceOrchestrator",
        "Answers finance questions for Pokemon, Epson, Roadshows and the company as a whole.",
        model=model or router,
    )
    workspace = DemoWorkspace(name, orchestrator, sessions,
                              memory=memory, model=model, directory=directory, database=database, tracker=tracker,
                              owns_tracker=owns_tracker, description="The finance demo (seed 000's four business units).")
    connection = SQLConnection(f"sqlite:///{database}", id="demo")
    workspace.own(connection.aclose)
    for agent_name, description in DESCRIPTIONS.items():
        agent = SQLAgent(connection, name=agent_name, description=description, model=model,
                         memory=SQLMemory(memory, scope, agent=agent_name))
        orchestrator.add_agent(agent)
    docs = FolderKnowledgeAgent(doctrine_folder(), directory / DOCS_INDEX_FILE, name="finance_docs",
                                description=DOCS_DESCRIPTION, model=model)
    workspace.own(docs.index)
    router.documents[orchestrator.add_agent(docs).name] = docs
    workspace.vocabulary = demo_vocabulary(database)
    install_verified(workspace, current_verified(workspace, VERIFIED_QUESTIONS), workspace.vocabulary)
    from baton.semantic.loading import demo_model_path
    from baton.workspace.semantic import attach_semantic

    attach_semantic(workspace, semantic or demo_model_path(), owner="general_finance")  # metric questions (baton.semantic)
    if model is not None and pipelines is not None:
        attach_planning(workspace, model, None if pipelines == "auto" else pipelines)
    return workspace


@contextlib.contextmanager
def _build_lock(directory: Path) -> Iterator[None]:
    import fcntl

    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / ".build.lock", "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def open_demo_memory(directory: Path, workspace: str = "demo", *, url: str | None = None):
    """The demo's memory (a SQLite journal beside the database, or the state database
    ``url``), with the verified questions as benchmarks. Re-running adds nothing: a question
    seeded before is left as it is (removed ones stay removed)."""
    from baton.memory import Principal, Provenance, RecordDraft, index_doctrine
    from baton.memory.feedback import question_key
    from baton.workspace.state_versions import open_memory

    store = open_memory(url or f"sqlite:///{directory / MEMORY_FILE}")  # its version checked first
    scope = store.open(Principal(workspace))
    index_doctrine(scope, doctrine_folder())  # unchanged sections: nothing written
    known = {r.attribute for r in store.list_records(scope, kind="benchmark", active_only=False, limit=100_000)}
    for verified in VERIFIED_QUESTIONS:
        if question_key(verified.question) in known:
            continue  # seeded before (and maybe removed since: `baton verified remove` must stick)
        store.remember(scope, RecordDraft(
            "benchmark", verified.question, entity="question", attribute=question_key(verified.question),
            scope=f"connection:{verified.connection_id}", value=" ".join(verified.sql.split()), category="benchmark",
            connection_id=verified.connection_id, verified=True, provenance=Provenance("operator", agent="demo"),
            data={"question": verified.question, "sql": verified.sql, "agent": verified.agent,
                  "slots": [slot.to_dict() for slot in verified.slots]},
        ))
    return store, scope
