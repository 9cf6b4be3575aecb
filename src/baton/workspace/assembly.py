"""``assemble(spec) -> Workspace``: the one builder of a workspace, run once at start-up.

Every command (``serve`` and its workers, ``worker``, ``mcp``, ``ask``, ``eval``,
``verified``, ``semantic``) and the demo build their workspace here, from a
``WorkspaceSpec``: equal specs give equal workspaces, and nothing is attached afterwards.
What it wires, in order:

1. the database's connection (read-only, through the same safety checks as every query;
   an unsafe freshness query is refused before anything opens) and one SQL specialist per
   ``database.specialists`` entry (default: one named ``database``);
2. the memory (doctrine from the documents, learnings, insights, the verified questions) and
   the saved conversations, in the workspace's place in the state;
3. the documents' knowledge specialist, the verified questions (``builtin_verified`` seeded
   into memory once, then what the memory holds), the semantic model, the MCP servers;
4. with a model, the planner and executor of multi-step questions: durable (``PipelineHost``
   on the state: stages here when the state is embedded or ``run_stages``, else on ``baton
   worker``s), local (this process), or off.

Without a model the orchestrator routes with a ``LexicalRouter``: verified questions, the
documents, the semantic model, else "Did you mean ...?" and how to set a model.

Where its state lives: ``spec.directory`` when given (the demo's folder), else
``$BATON_HOME/workspaces/<id>/``, the id a hash of the database URL so no password lands in
a path. The workspace closes everything opened for it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from baton.workspace.core import Workspace
from baton.workspace.spec import DatabaseSpec, SpecialistSpec, WorkspaceSpec

if TYPE_CHECKING:
    from baton.llm.base import ChatModel
    from baton.state.location import Place, State

_FROM_SPEC: Any = object()  # ``model``'s default: the spec's model string (none: no model)


def database_workspace_id(url: str) -> str:
    """A stable id for a database URL, safe in a path (no password in it)."""
    return hashlib.sha256(url.encode()).hexdigest()[:16]


def assemble(spec: WorkspaceSpec, *, model: ChatModel | None = _FROM_SPEC, state: State | None = None,
             tracker: Any = None, owns_tracker: bool = False, run_stages: bool | None = None,
             host_options: Mapping[str, Any] | None = None, executor_factory: Any = None,
             freshness: Any = None) -> Workspace:
    """The workspace ``spec`` declares (module docstring). ``model``: a ``ChatModel`` (a test
    double, say) instead of the spec's; ``state``: the state, else ``spec.state``'s;
    ``run_stages`` / ``host_options``: this process's part in durable pipelines (``baton
    worker`` runs stages; ``PipelineHost`` options such as ``executor_id``). From Python
    only: ``executor_factory`` runs the pipelines your way (``planning.durable_pipelines``
    of a host you made), ``freshness`` a ``Freshness`` object instead of the spec's."""
    from baton.state.location import State

    if spec.demo and spec.database is None:
        raise ValueError("a demo spec is filled in by baton.demo.workspace.demo_spec before assembly")
    state = state or State.from_env(url=spec.state)
    model = model_for(spec) if model is _FROM_SPEC else model
    host = None if executor_factory is not None else _pipeline_host(spec, state, model, run_stages, host_options)
    if host is not None:
        from baton.workspace.planning import durable_pipelines

        executor_factory = durable_pipelines(host)
    try:
        ws = _build(spec, state, model, _Parts(tracker, owns_tracker, host, executor_factory, freshness))
    except BaseException:
        if host is not None:
            host.close()
        raise
    return ws


def model_for(spec: WorkspaceSpec) -> ChatModel | None:
    """The spec's model chain (``baton.llm.model_from_string``), or None."""
    if not spec.model:
        return None
    from baton.llm import model_from_string

    return model_from_string(spec.model)


def _pipeline_host(spec: WorkspaceSpec, state: State, model: ChatModel | None, run_stages: bool | None,
                   options: Mapping[str, Any] | None) -> Any:
    if model is None or spec.pipelines != "durable":
        return None
    from baton.workspace.pipeline_host import PipelineHost

    return PipelineHost.for_state(state, run_stages=run_stages, events_url=spec.events, **dict(options or {}))


def _place(spec: WorkspaceSpec, state: State, database: DatabaseSpec) -> Place:
    from baton.state.location import Place

    if spec.directory is not None:
        return Place(state, spec.name, Path(spec.directory))
    key = database_workspace_id(database.url)
    return state.place_for(spec.name, key=key, folder=f"workspaces/{key}")


@dataclass(frozen=True)
class _Parts:
    """What the caller hands the assembly beside the spec."""

    tracker: Any
    owns_tracker: bool
    host: Any
    executor_factory: Any
    freshness: Any


def _connection(database: DatabaseSpec, freshness: Any) -> Any:
    from baton.specialists.sql.connection import SQLConnection

    extra: dict[str, Any] = {"allow_privileged_role": True} if database.allow_privileged_role else {}
    freshness = freshness if freshness is not None else freshness_of(database)
    if freshness is not None:
        extra["freshness"] = freshness
    if database.allow_functions:
        extra["allow_functions"] = tuple(database.allow_functions)
    if database.schemas:
        extra["allowed_schemas"] = tuple(database.schemas)
    return SQLConnection(database.url, id=database.id, **extra)


def freshness_of(database: DatabaseSpec) -> Any:
    """The database's ``Freshness`` (``ConfigurationError`` for one that cannot be read)."""
    from baton.errors import ConfigurationError
    from baton.specialists.sql.freshness import Freshness, parse_age

    given = database.freshness
    if given is None:
        return None
    age = parse_age(given.max_age)
    if given.column is not None:
        table, _, column = given.column.rpartition(".")
        if not table:
            raise ConfigurationError(f"freshness column {given.column!r} is not TABLE.COLUMN")
        return Freshness.column(table, column, age)
    return Freshness(given.sql or "", age)


def _build(spec: WorkspaceSpec, state: State, model: ChatModel | None, parts: _Parts) -> Workspace:
    from baton.agents import LexicalRouter, OrchestratorAgent
    from baton.agents.lexical_routing import GENERIC_NAME_WORDS
    from baton.memory import Principal as MemoryPrincipal
    from baton.verified import examples_by_agent

    database = spec.database
    assert database is not None  # checked by assemble
    place = _place(spec, state, database)
    connection = _connection(database, parts.freshness)  # an unsafe freshness query is refused here, before memory opens
    memory = place.memory()
    router = LexicalRouter(examples_by_agent(spec.builtin_verified), generic_name_words=GENERIC_NAME_WORDS | set(spec.routing_words),
                           catalog=True, database=None if spec.demo else database.url)
    ws = Workspace(spec.name, OrchestratorAgent(spec.orchestrator, spec.description, model=model or router),
                   place.sessions(), memory=memory, model=model, tracker=parts.tracker, owns_tracker=parts.owns_tracker,
                   directory=place.directory, description=spec.description or f"Your {connection.dialect} database.")
    ws.own(connection.aclose)
    ws.deadline_s = spec.deadline_s
    try:
        scope = memory.open(MemoryPrincipal(spec.name))
        _add_sql_specialists(ws, spec, database, connection, scope)
        _add_documents(ws, spec, place, router, scope)
        _install_verified(ws, spec, state, scope)
        if spec.semantic is not None:  # metric questions answered from the model (baton.semantic)
            from baton.workspace.semantic import attach_semantic

            attach_semantic(ws, spec.semantic, owner=spec.semantic_owner)
        _add_mcp(ws, spec)
        if model is not None and spec.pipelines != "off":
            from baton.workspace.planning import attach_planning

            attach_planning(ws, model, parts.executor_factory)
        if parts.host is not None:
            ws.own(parts.host)
    except BaseException:
        _close_now(ws)
        raise
    return ws


def _add_sql_specialists(ws: Workspace, spec: WorkspaceSpec, database: DatabaseSpec, connection: Any, scope: Any) -> None:
    from baton.memory.bridge import SQLMemory
    from baton.specialists.sql.agent import SQLAgent

    default = SpecialistSpec(name=DEFAULT_SPECIALIST, description=f"Answers questions over the {connection.dialect} database.")
    for entry in database.specialists or (default,):
        ws.orchestrator.add_agent(SQLAgent(connection, name=entry.name, description=entry.description, model=ws.model,
                                           memory=SQLMemory(ws.memory, scope, agent=entry.name)))


DEFAULT_SPECIALIST = "database"


def _add_documents(ws: Workspace, spec: WorkspaceSpec, place: Place, router: Any, scope: Any) -> None:
    from baton.memory import index_doctrine
    from baton.specialists.knowledge.folder import FolderKnowledgeAgent

    documents = spec.documents
    if documents is None:
        return
    folder = Path(documents.folder)
    index_doctrine(scope, folder)  # unchanged sections: nothing written
    knowledge = FolderKnowledgeAgent(folder, place.file("docs.sqlite"), name=documents.name, model=ws.model,
                                     description=documents.description or f"Answers from the documents in {folder.name}/, with citations.")
    ws.own(knowledge.index)
    router.documents[ws.orchestrator.add_agent(knowledge).name] = knowledge
    if documents.examples:
        ws.document_examples = tuple(documents.examples)
    from baton.workspace.examples import document_examples

    router.document_questions = document_examples(ws)  # the fallback lists what the documents answer


def _install_verified(ws: Workspace, spec: WorkspaceSpec, state: State, scope: Any) -> None:
    from baton.workspace.verified import current_verified, docs_vocabulary, install_verified

    if spec.builtin_verified:
        with state.startup_lock(f"verified-{spec.name}"):  # processes starting together seed once
            _seed_verified(ws.memory, scope, spec.builtin_verified, spec.name)
    vocabulary = spec.vocabulary or docs_vocabulary(spec.documents.folder if spec.documents else None)
    install_verified(ws, current_verified(ws, spec.builtin_verified), vocabulary)


def _seed_verified(memory: Any, scope: Any, questions: tuple[Any, ...], agent: str) -> None:
    """The shipped verified questions as benchmark records, each once: a question seeded
    before is left as it is (a removed one stays removed: ``baton verified remove`` sticks)."""
    from baton.memory import Provenance, RecordDraft
    from baton.memory.feedback import question_key

    known = {r.attribute for r in memory.list_records(scope, kind="benchmark", active_only=False, limit=100_000)}
    for verified in questions:
        if question_key(verified.question) in known:
            continue
        memory.remember(scope, RecordDraft(
            "benchmark", verified.question, entity="question", attribute=question_key(verified.question),
            scope=f"connection:{verified.connection_id}", value=" ".join(verified.sql.split()), category="benchmark",
            connection_id=verified.connection_id, verified=True, provenance=Provenance("operator", agent=agent),
            data={"question": verified.question, "sql": verified.sql, "agent": verified.agent,
                  "slots": [slot.to_dict() for slot in verified.slots]},
        ))


def _add_mcp(ws: Workspace, spec: WorkspaceSpec) -> None:
    """Each MCP server as a specialist (``baton.specialists.mcp``), closed with the workspace.
    A name already taken by a specialist is a ``ConfigurationError``."""
    if not spec.mcp:
        return
    from baton.errors import ConfigurationError
    from baton.specialists.mcp import MCPAgent, MCPServerConfig

    for server in spec.mcp:
        if ws.catalog.name_taken(server.name):
            raise ConfigurationError(f"MCP server {server.name}: workspace {ws.name!r} already has a specialist named so")
        agent = MCPAgent.from_config(MCPServerConfig.of(server.name, server.server, server.allow))
        ws.orchestrator.add_agent(agent)
        ws.own(agent)


def _close_now(ws: Workspace) -> None:
    """Close what a half-built workspace opened (from sync code: memory and sessions; the
    connection and the index open lazily, on first use)."""
    for part in (ws.memory, ws.sessions):
        try:
            part.close()
        except Exception:
            pass


__all__ = ["assemble", "database_workspace_id", "freshness_of", "model_for"]
