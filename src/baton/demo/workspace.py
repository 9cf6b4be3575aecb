"""The demo workspace: the finance database, four SQL specialists and FinanceOrchestrator.

``demo_spec(directory)`` makes (or reuses) ``finance.sqlite`` in ``directory`` and declares
seed 000's use case over it as a ``WorkspaceSpec``; ``baton.workspace.assembly.assemble``
builds it, as it builds every workspace (``build_demo_workspace`` does both). With no model
configured it still answers the verified questions (the orchestrator routes them without
an LLM and the specialists run their verified SQL); anything else gets an answer saying
how to configure a model.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from baton.demo.data import build_demo_database
from baton.demo.docs import demo_vocabulary, doctrine_folder
from baton.demo.verified import VERIFIED_QUESTIONS
from baton.llm.base import ChatModel
from baton.workspace import Workspace
from baton.workspace.database import pipelines_argument
from baton.workspace.spec import DatabaseSpec, DocumentsSpec, SpecialistSpec, WorkspaceSpec

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


def demo_spec(directory: str | Path, *, rebuild: bool = False, name: str = "demo", semantic: str | Path | None = None,
              **fields: Any) -> WorkspaceSpec:
    """The demo as a ``WorkspaceSpec`` over ``directory``, its database built there first
    (once, ~1 s; again with ``rebuild``, which also forgets what the demo remembered and
    discussed). ``fields``: any other spec field (``model``, ``state``, ``pipelines``, ``mcp``, ...).

    Building is safe when processes start together on an empty folder: a file lock in
    ``directory`` lets one build the database while the others wait, then find it done."""
    directory = Path(directory)
    database = directory / DATABASE_FILE
    with _build_lock(directory):
        if rebuild:  # a clean slate: the database, and what the demo remembered and discussed
            for leftover in (MEMORY_FILE, SESSIONS_FILE, DOCS_INDEX_FILE):
                for suffix in ("", "-wal", "-shm"):
                    (directory / (leftover + suffix)).unlink(missing_ok=True)
        if rebuild or not database.exists():
            build_demo_database(database)
    from baton.semantic.loading import demo_model_path

    return WorkspaceSpec(
        name=name, demo=True, directory=directory, orchestrator="FinanceOrchestrator",
        description="The finance demo (seed 000's four business units).",
        database=DatabaseSpec(url=f"sqlite:///{database}", id="demo",
                              specialists=tuple(SpecialistSpec(name=n, description=d) for n, d in DESCRIPTIONS.items())),
        documents=DocumentsSpec(folder=doctrine_folder(), name="finance_docs", description=DOCS_DESCRIPTION,
                                examples=DOCUMENT_EXAMPLES),
        semantic=Path(semantic) if semantic is not None else demo_model_path(),  # metric questions (baton.semantic)
        semantic_owner="general_finance", routing_words=("finance",), builtin_verified=VERIFIED_QUESTIONS,
        vocabulary=demo_vocabulary(database), **fields)


def build_demo_workspace(directory: str | Path, *, model: ChatModel | None = None, rebuild: bool = False,
                         name: str = "demo", tracker: Any = None, owns_tracker: bool = False, pipelines: Any = "auto",
                         state_url: str | None = None, semantic: str | Path | None = None) -> Workspace:
    """The demo workspace in ``directory`` (``demo_spec``, then ``assemble``). It owns its
    connection, memory, document index and sessions: ``async with`` it, or ``await
    ws.aclose()``. Sessions and memory are SQLite files beside the database, or on the state
    database ``state_url`` (``baton.state.location``). ``pipelines`` as in
    ``baton.workspace.database.open_database_workspace``."""
    from baton.state.location import State
    from baton.workspace.assembly import assemble

    directory = Path(directory)
    mode, factory = pipelines_argument(pipelines)
    spec = demo_spec(directory, rebuild=rebuild, name=name, semantic=semantic, pipelines=mode)
    return assemble(spec, model=model, state=State(directory, state_url), tracker=tracker, owns_tracker=owns_tracker,
                    executor_factory=factory)


def demo_database(ws: Workspace) -> Path:
    """The demo's database file (in the workspace's folder)."""
    return Path(ws.directory or ".") / DATABASE_FILE


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
