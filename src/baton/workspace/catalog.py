"""``Catalog``: what a workspace answers with, typed — its specialists by what they can do, its
databases, its semantic layer, its ONE set of verified questions, its vocabulary, and the
examples its page offers.

Everything outside the orchestrator that needs "the SQL specialists", "the databases", "the
document specialists" or "the specialist named X" asks the workspace's catalog
(``ws.catalog``), never the orchestrator's tool table. Specialists are sorted by the small
protocols of ``baton.agents.capabilities`` (``RunsSQL``, ``HasSemanticLayer``,
``HasDocumentIndex`` ...), not probed attribute by attribute.

Decisions:

- The line-up is the orchestrator's: a specialist added to it (``add_agent``) is in the
  catalog. The sorted views are computed once per change of the line-up (the orchestrator's
  ``revision``) and cached, so a per-answer question ("was this a document answer?") costs an
  integer comparison and a set lookup.
- The verified questions are one ``VerifiedSet`` (``verified``): the orchestrator's fast
  path, the no-model router and every SQL specialist read it by reference, so a change
  (``set_verified``) is one assignment that every reader sees at its next question, and a
  running request keeps the tuple it read. The set is the orchestrator's from its
  construction (``OrchestratorAgent(verified=...)``); the router and the SQL specialists join it
  at the first ``set_verified`` (before, an agent built with its own questions keeps them),
  and a SQL specialist added later joins it when the catalog is next read.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from baton.agents.capabilities import HasDocumentFolder, HasDocumentIndex, HasSemanticLayer, OffersTools, RunsSQL
from baton.agents.lexical_routing import LexicalRouter
from baton.llm.base import is_language_model
from baton.verified import VerifiedQuestion, VerifiedSet

if TYPE_CHECKING:
    from baton.agents.orchestrator import OrchestratorAgent
    from baton.messages import Tool
    from baton.phrasing import Vocabulary
    from baton.semantic.layer import SemanticLayer
    from baton.specialists.sql.connection import SQLConnection


@dataclass(frozen=True, slots=True)
class Specialist:
    """One specialist as the catalog lists it: its name, the tool name the routing model
    calls, what it says it does, and what it can do (computed once)."""

    name: str
    tool: str
    description: str
    kind: str  # its class's name ("SQLAgent", "KnowledgeAgent", "MCPAgent" ...)
    agent: Any
    spec: Tool
    runs_sql: bool = False
    semantic_layer: Any = None  # its SemanticLayer (HasSemanticLayer), when it answers from one
    document_index: bool = False
    tools: tuple[str, ...] = ()  # the tools it may call itself (OffersTools)

    def to_dict(self) -> dict[str, Any]:
        """``{"name", "tool", "description", "kind"}`` (and ``"tools"`` when it offers some)."""
        out: dict[str, Any] = {"name": self.name, "tool": self.tool, "description": self.description, "kind": self.kind}
        if self.tools:
            out["tools"] = list(self.tools)
        return out


@dataclass(frozen=True, slots=True)
class _LineUp:
    """The specialists of one revision of the orchestrator, sorted by capability."""

    revision: int
    specialists: tuple[Specialist, ...] = ()
    by_name: dict[str, Specialist] = field(default_factory=dict)
    tool_names: frozenset[str] = frozenset()
    sql: tuple[Any, ...] = ()
    documents: frozenset[str] = frozenset()

    @classmethod
    def of(cls, orchestrator: OrchestratorAgent) -> _LineUp:
        listed = []
        for tool in orchestrator.specialist_tools():
            agent = tool.agent
            listed.append(Specialist(
                agent.name, tool.name, tool.spec.description, type(agent).__name__, agent, tool.spec,
                runs_sql=isinstance(agent, RunsSQL),
                semantic_layer=agent.layer if isinstance(agent, HasSemanticLayer) else None,
                document_index=isinstance(agent, HasDocumentIndex),
                tools=tuple(agent.tool_names) if isinstance(agent, OffersTools) else (),
            ))
        by_name: dict[str, Specialist] = {}
        for specialist in listed:
            by_name.setdefault(specialist.name, specialist)
        return cls(orchestrator.revision, tuple(listed), by_name, frozenset(s.tool for s in listed),
                   tuple(s.agent for s in listed if s.runs_sql), frozenset(s.name for s in listed if s.document_index))


class Catalog:
    """A workspace's parts, typed (module docstring). ``semantic``, ``vocabulary`` and
    ``document_examples`` are set by whoever assembles the workspace."""

    def __init__(self, orchestrator: OrchestratorAgent, *, semantic: SemanticLayer | None = None,
                 vocabulary: Vocabulary | None = None, document_examples: Iterable[str] = ()) -> None:
        self._orchestrator = orchestrator
        self.verified: VerifiedSet = orchestrator.verified_set  # the one set (module docstring)
        self.semantic = semantic  # the semantic layer: follow-ups of a semantic answer edit its queries
        self.vocabulary = vocabulary  # how questions are read (``baton.phrasing``), when the workspace has its own
        self.document_examples: tuple[str, ...] = tuple(document_examples)  # questions its documents answer, when named
        self._lineup = _LineUp(-1)
        self._shared = False  # whether the router and the SQL specialists read ``verified`` (set_verified)

    def _current(self) -> _LineUp:
        lineup = self._lineup
        if lineup.revision != self._orchestrator.revision:
            lineup = self._lineup = _LineUp.of(self._orchestrator)
            if self._shared:
                self._share()
        return lineup

    # --- specialists ----------------------------------------------------------------------

    def specialists(self) -> tuple[Specialist, ...]:
        """Every specialist, in the order the orchestrator offers them."""
        return self._current().specialists

    def specialist(self, name: str | None) -> Specialist | None:
        """The specialist named ``name`` (its agent's name), if any."""
        return self._current().by_name.get(name) if name else None

    def name_taken(self, name: str) -> bool:
        """Whether a new specialist called ``name`` would clash with one here (its tool name,
        ``tool_name_for(name)``, or its agent name, is in use)."""
        from baton.agents.agent_tool import tool_name_for

        lineup = self._current()
        return tool_name_for(name) in lineup.tool_names or name in lineup.by_name

    def listing(self) -> list[dict[str, Any]]:
        """The specialists as surfaces list them (``Specialist.to_dict``)."""
        return [s.to_dict() for s in self.specialists()]

    def sql_specialists(self) -> tuple[Any, ...]:
        """The specialists that run SQL on a connection (``RunsSQL``), in order."""
        return self._current().sql

    def document_names(self) -> frozenset[str]:
        """The names of the specialists answering from a document index."""
        return self._current().documents

    def document_folders(self) -> list[Path]:
        """The folders of the document specialists over one (``HasDocumentFolder``)."""
        return [s.agent.folder for s in self.specialists()
                if isinstance(s.agent, HasDocumentFolder) and isinstance(s.agent.folder, Path)]

    def semantic_answerer(self) -> tuple[Any, Any]:
        """``(specialist, layer)`` answering from the semantic layer: the one whose layer it
        is (``HasSemanticLayer``), else a SQL specialist the layer is attached to (its
        ``semantic``); ``(None, None)`` without one."""
        for specialist in self.specialists():
            if specialist.semantic_layer is not None and hasattr(specialist.semantic_layer, "compile"):
                return specialist.agent, specialist.semantic_layer
        for agent in self.sql_specialists():
            layer = getattr(agent, "semantic", None)
            if layer is not None and hasattr(layer, "compile"):
                return agent, layer
        return None, None

    def routes_with_model(self) -> bool:
        """Whether a language model routes the questions (not a no-model stand-in)."""
        return is_language_model(self._orchestrator.model)

    # --- databases --------------------------------------------------------------------------

    def databases(self) -> list[SQLConnection]:
        """The workspace's SQL connections, through its SQL specialists, each once (by id)."""
        from baton.specialists.sql.connection import SQLConnection

        found: dict[str, Any] = {}
        for agent in self.sql_specialists():
            if isinstance(agent.connection, SQLConnection):
                found.setdefault(agent.connection.id, agent.connection)
        return list(found.values())

    def connection(self, connection_id: str | None) -> Any:
        """The connection with ``connection_id``: a SQL specialist's or a semantic layer's."""
        for specialist in self.specialists():
            agent = specialist.agent
            for connection in (agent.connection if specialist.runs_sql else None,
                               getattr(specialist.semantic_layer, "connection", None)):
                if connection is not None and getattr(connection, "id", None) == connection_id:
                    return connection
        return None

    # --- verified questions ---------------------------------------------------------------

    @property
    def verified_questions(self) -> tuple[VerifiedQuestion, ...]:
        return self.verified.questions

    def set_verified(self, questions: Iterable[VerifiedQuestion], vocabulary: Vocabulary | None = None) -> tuple[VerifiedQuestion, ...]:
        """Make ``questions`` the workspace's verified questions (one assignment) and have the
        orchestrator, the no-model router and every SQL specialist read them; ``vocabulary``,
        when given, becomes the workspace's (the router's too)."""
        if vocabulary is not None:
            self.vocabulary = vocabulary
        result = self.verified.replace(questions)
        self._shared = True
        self._current()
        self._share()
        return result

    def _share(self) -> None:
        orchestrator = self._orchestrator
        orchestrator.verified_set = self.verified
        router = orchestrator.model
        if isinstance(router, LexicalRouter):
            router.verified_set = self.verified
            if self.vocabulary is not None:
                router.vocabulary = self.vocabulary
        for agent in self._lineup.sql:
            agent.share_verified(self.verified)

    def __repr__(self) -> str:
        return f"Catalog({len(self.specialists())} specialists, {len(self.verified)} verified questions)"


__all__ = ["Catalog", "Specialist"]
