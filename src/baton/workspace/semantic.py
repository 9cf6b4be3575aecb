"""Putting a semantic model to work in a workspace.

``attach_semantic(ws, source)`` (a path, read by ``baton.semantic.loading.load_model``, or a
``SemanticModel``) wires it into a workspace over the workspace's SQL
connection (the one its SQL specialists use; ``connection=`` to choose):

- with no language model (the orchestrator routes with a ``LexicalRouter``), a
  ``SemanticAgent`` joins the orchestrator and the router sends it every metric question no
  verified question matched (``LexicalRouter.semantic``) — verified questions keep
  precedence, since the orchestrator routes them before the router is asked;
- every SQL specialist on that connection gets the layer (``SQLAgent.semantic``): with a
  model it offers the ``semantic_query`` tool, free SQL only as the fallback;
- the model's saved queries become verified questions (their SQL compiled for the
  connection's engine, owned by the first SQL specialist on it, ``source="semantic"``);
- ``ws.semantic`` holds the layer: follow-ups of a semantic answer edit its semantic query.

It is idempotent per workspace only in the sense that attaching twice replaces the layer:
the second call's agent takes the name ``metrics`` over.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from baton.agents.lexical_routing import LexicalRouter
from baton.semantic.agent import SemanticAgent
from baton.semantic.errors import SemanticModelError
from baton.semantic.layer import SemanticLayer
from baton.semantic.loading import load_model, saved_verified
from baton.semantic.model import SemanticModel

if TYPE_CHECKING:
    from baton.workspace.core import Workspace

AGENT_NAME = "metrics"


def attach_semantic(ws: Workspace, source: str | Path | SemanticModel, *, connection: Any = None,
                    owner: str | None = None) -> SemanticLayer:
    """Wire the model into ``ws`` (module docstring) and return its layer. ``owner``: the SQL
    specialist that owns the saved queries (default: the first on the connection)."""
    from baton.workspace.verified import install_verified, installed, sql_agents

    model = source if isinstance(source, SemanticModel) else load_model(source)
    agents = sql_agents(ws)
    if connection is None:
        if not agents:
            raise SemanticModelError(f"workspace {ws.name!r} has no SQL specialist whose database the model could describe")
        connection = agents[0].connection
    layer = SemanticLayer(model, connection)
    if hasattr(connection, "describe"):  # the model's words describe the tables it reads (SQLite has no comments)
        connection.describe(semantic_descriptions(model))
    owners = [a for a in agents if a.connection is connection]
    for agent in owners:
        agent.semantic = layer
    router = ws.orchestrator.model
    if isinstance(router, LexicalRouter):
        agent = SemanticAgent(layer, name=AGENT_NAME)
        tool = ws.orchestrator.add_agent(agent)
        router.semantic[tool.name] = agent
    ws.semantic = layer
    saved = saved_verified(layer, owner or (owners[0].name if owners else ""))
    if saved:
        known = {v.checked_question.strip().lower() for v in installed(ws)}
        install_verified(ws, [*installed(ws), *(v for v in saved if v.question.strip().lower() not in known)])
    return layer


def semantic_descriptions(model: SemanticModel) -> dict[str, tuple[str, dict[str, str]]]:
    """The model's descriptions of the tables it reads: each entity's, and each dimension's and
    measure's where its expression is one plain column (a sidecar: ``specialists.sql.descriptions``)."""
    from baton.semantic.expressions import is_identifier

    out: dict[str, tuple[str, dict[str, str]]] = {}
    tables = {e.name: e.table.lower() for e in model.entities}
    for entity in model.entities:
        text, columns = out.get(entity.table.lower(), ("", {}))
        out[entity.table.lower()] = (text or entity.description, columns)
    parts: list[tuple[str, str, str]] = [(d.entity, d.expr, d.description) for d in model.dimensions]
    parts += [(m.entity, m.expr, m.description) for m in model.measures]
    for entity_name, expr, description in parts:
        if description and is_identifier(expr):
            out[tables[entity_name]][1].setdefault(expr.lower(), description)
    return out


__all__ = ["AGENT_NAME", "attach_semantic", "semantic_descriptions"]
