"""What a specialist can do, said by small protocols instead of probed attribute by attribute.

The workspace's ``Catalog`` (``baton.workspace.catalog``) sorts a workspace's specialists by
these once per change of the line-up, and everything that needs "the SQL specialists", "the
document specialists" or "the one that answers metric questions" asks it:

| protocol | implemented by | who needs it |
|---|---|---|
| ``RunsSQL`` | ``SQLAgent`` | verified questions (checked and run on its connection), edited SQL, follow-up rewrites, gold queries of ``baton eval``, the schema browser |
| ``AnswersWithoutModel`` | ``SemanticAgent`` | the no-model router: it claims the questions it answers, and offers examples |
| ``HasSemanticLayer`` | ``SemanticAgent`` | follow-ups of a semantic answer, the data's date range |
| ``HasDocumentIndex`` | ``KnowledgeAgent`` | the document answers' related questions, the knowledge bulkhead |
| ``HasDocumentFolder`` | ``FolderKnowledgeAgent`` | the empty page's document examples |
| ``OffersTools`` | ``MCPAgent`` | listings (which tools a specialist may call) |

All are ``runtime_checkable``; ``isinstance`` on one costs a few attribute lookups, which is
why the Catalog checks once per line-up change and never per question. The types of the
attributes are named loosely (``Any``) where the concrete type lives in a layer below this one
(``SQLConnection``, ``SemanticLayer``, ``KnowledgeIndex``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from baton.verified import VerifiedQuestion, VerifiedSet


@runtime_checkable
class RunsSQL(Protocol):
    """A specialist over one SQL connection: it runs checked SQL there (a verified question's,
    ``ask(..., sql=...)`` for a follow-up's rewrite) and owns verified questions."""

    name: str
    connection: Any  # a baton.specialists.sql.connection.SQLConnection

    @property
    def verified(self) -> tuple[VerifiedQuestion, ...]: ...

    def share_verified(self, verified: VerifiedSet) -> None:
        """Answer from the workspace's one set (its own questions in it) from now on."""
        ...


@runtime_checkable
class AnswersWithoutModel(Protocol):
    """A specialist the no-model router may send a question to: it says which questions it
    answers (``claims``) and offers a few it answers (``examples``)."""

    async def claims(self, question: str) -> bool: ...

    async def examples(self, limit: int = 6) -> list[str]: ...


@runtime_checkable
class HasSemanticLayer(Protocol):
    """A specialist answering from a semantic layer (``baton.semantic.SemanticLayer``)."""

    name: str
    layer: Any


@runtime_checkable
class HasDocumentIndex(Protocol):
    """A specialist answering from a document index (``KnowledgeIndex``)."""

    name: str
    index: Any


@runtime_checkable
class HasDocumentFolder(Protocol):
    """A document specialist over one folder of files."""

    folder: Path


@runtime_checkable
class OffersTools(Protocol):
    """A specialist that calls tools of its own (an MCP server's): their names."""

    @property
    def tool_names(self) -> tuple[str, ...]: ...


__all__ = ["AnswersWithoutModel", "HasDocumentFolder", "HasDocumentIndex", "HasSemanticLayer", "OffersTools", "RunsSQL"]
