"""A workspace over your own database: one SQL specialist, optionally a folder of documents.

``open_database_workspace(url, model, docs=...)`` wires an orchestrator with one SQL
specialist over ``url`` (read-only, through the same safety checks as every query), a
memory (doctrine, learnings, insights) and saved conversations, plus, with ``docs``, a
knowledge specialist over that folder whose Markdown is also the workspace's doctrine.
With a model configured, multi-step questions run as pipelines (``planning.py``). Its
verified questions (``verified.py``: ``baton verified add``, "Save as verified question")
are read from its memory when it opens.

Where its state lives: the ``state`` given (``baton.workspace.state``), by default SQLite
files in ``$BATON_HOME/workspaces/<id>/``, the id a hash of the URL so no password lands in
a path. The workspace closes its connection, memory, index and sessions when it closes.

``semantic``: a semantic model file (Baton's YAML or dbt MetricFlow's): metric questions are
then answered from it, with or without a model (``baton.workspace.semantic``).

``allow_privileged_role`` is passed to the SQL connection only when set (the connection's
own guard refuses a privileged role otherwise; see ``baton.specialists.sql``).

``freshness``: how to learn when the data was last loaded and how old it may be
(``baton.specialists.sql.freshness.Freshness``): answers on older data carry a
``staleness_warning``. Its query is safety-checked here (``FreshnessQueryError``).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from baton.workspace.core import Workspace

if TYPE_CHECKING:
    from baton.llm.base import ChatModel
    from baton.specialists.sql.freshness import Freshness
    from baton.workspace.state import State

DATABASE_WORKSPACE = "database"


def database_workspace_id(url: str) -> str:
    """A stable id for a database URL, safe in a path (no password in it)."""
    return hashlib.sha256(url.encode()).hexdigest()[:16]


def open_database_workspace(url: str, model: ChatModel | None, *, docs: str | Path | None = None, state: State | None = None,
                            name: str = DATABASE_WORKSPACE, allow_privileged_role: bool = False,
                            tracker: Any = None, owns_tracker: bool = False, pipelines: Any = "auto",
                            semantic: str | Path | None = None, freshness: Freshness | None = None,
                            allow_functions: tuple[str, ...] = ()) -> Workspace:
    """The workspace (module docstring). ``pipelines``: ``"auto"`` (in-process pipelines
    when a model is configured), ``None`` (none), or a factory ``(workspace, runner) ->
    service`` such as ``State.pipelines_for``."""
    from baton.agents import LexicalRouter, OrchestratorAgent
    from baton.memory import Principal as MemoryPrincipal
    from baton.memory import index_doctrine
    from baton.memory.bridge import SQLMemory
    from baton.specialists.knowledge.folder import FolderKnowledgeAgent
    from baton.specialists.sql.agent import SQLAgent
    from baton.specialists.sql.engines import SQLConnection
    from baton.workspace.state import State
    from baton.workspace.verified import current_verified, docs_vocabulary, install_verified

    state = state or State.from_env()
    place = state.place_for(name, key=database_workspace_id(url), folder=f"workspaces/{database_workspace_id(url)}")
    extra: dict[str, Any] = {"allow_privileged_role": True} if allow_privileged_role else {}
    if freshness is not None:
        extra["freshness"] = freshness
    if allow_functions:  # SECURITY DEFINER routines model SQL may call (specialists/sql/routines.py)
        extra["allow_functions"] = tuple(allow_functions)
    connection = SQLConnection(url, id="database", **extra)  # an unsafe freshness query is refused here, before memory opens
    memory = place.memory()
    router = LexicalRouter(catalog=True, database=url)  # no model: verified questions, documents, else "Did you mean" / how to add one
    ws = Workspace(name, OrchestratorAgent("DatabaseOrchestrator", model=model or router),
                   place.sessions(), memory=memory, model=model, tracker=tracker, owns_tracker=owns_tracker,
                   directory=place.directory, description=f"Your {connection.dialect} database.")
    ws.own(connection.aclose)
    try:
        scope = memory.open(MemoryPrincipal(name))
        orchestrator = ws.orchestrator
        orchestrator.add_agent(SQLAgent(connection, name="database", description=f"Answers questions over the {connection.dialect} database.",
                                        model=model, memory=SQLMemory(memory, scope, agent="database")))
        if docs is not None:
            docs = Path(docs)
            index_doctrine(scope, docs)
            knowledge = FolderKnowledgeAgent(docs, place.file("docs.sqlite"), name="documents", model=model,
                                             description=f"Answers from the documents in {docs.name}/, with citations.")
            ws.own(knowledge.index)
            router.documents[orchestrator.add_agent(knowledge).name] = knowledge
            from baton.workspace.examples import document_examples

            router.document_questions = document_examples(ws)  # the fallback lists what the documents answer
        install_verified(ws, current_verified(ws), docs_vocabulary(docs))  # from memory (`baton verified add`)
        if semantic is not None:  # --semantic FILE: metric questions answered from the model (baton.semantic)
            from baton.workspace.semantic import attach_semantic

            attach_semantic(ws, semantic)
        if model is not None and pipelines is not None:
            from baton.workspace.planning import attach_planning

            attach_planning(ws, model, None if pipelines == "auto" else pipelines)
    except BaseException:
        _close_now(ws)
        raise
    return ws


def _close_now(ws: Workspace) -> None:
    """Close what a half-built workspace opened (from sync code: memory and sessions; the
    connection and the index open lazily, on first use)."""
    for part in (ws.memory, ws.sessions):
        try:
            part.close()
        except Exception:
            pass
