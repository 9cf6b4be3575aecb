"""What the SQL specialist asks of a semantic layer: the ``semantic_query`` tool and its calls.

``SQLAgent.semantic`` is a ``SemanticTools`` (``baton.semantic.SemanticLayer`` implements it).
The protocol lives here, below the semantic package, so the dependency runs one way: the
semantic layer runs its SQL through this package (validation, engines), and this package
reaches the layer only through the protocol, never by importing ``baton.semantic``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from baton.messages import Tool

TOOL_NAME = "semantic_query"


@dataclass(frozen=True, slots=True)
class SemanticCandidate:
    """A ``semantic_query`` call compiled: the SQL to validate and run, and what the answer
    says about it (``described``, and ``query``: the semantic query's dict form, kept in
    ``metadata["semantic_query"]`` for follow-ups to edit)."""

    sql: str
    explanation: str
    described: str
    query: dict[str, Any]


class SemanticTools(Protocol):
    async def offer(self) -> tuple[Tool, str]:
        """The ``semantic_query`` tool and the prompt's text about the model (its metrics,
        dimensions and how to use the tool), once the layer is ready."""
        ...

    def candidate(self, arguments: Any) -> SemanticCandidate | str:
        """The compiled call, or why it was refused (said to the model, which may try again)."""
        ...


__all__ = ["TOOL_NAME", "SemanticCandidate", "SemanticTools"]
