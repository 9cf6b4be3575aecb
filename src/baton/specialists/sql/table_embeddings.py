"""Tables ranked by meaning, when the workspace has an embedding model: fused with the words.

Words find ``orders`` for "orders"; they cannot find ``person`` for "participants" or
``drug_exposure`` for "medications". With an embedding provider configured (the knowledge
specialist's: an OpenAI-compatible endpoint, Ollama, a local sentence-transformers folder),
each table's document — its name, comment, columns and their comments — is embedded once per
schema version, the question once per question, and the tables closest by cosine are handed
to the picker, which ranks them up beside its own word ranking (``table_picker.rank``). The
default stays offline and deterministic: without a provider nothing here runs.

A provider that fails or is slow never fails the question: the picker ranks by words alone
(``ranking`` returns nothing and logs why).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

import numpy as np

from baton.specialists.sql.schema import SchemaInfo, TableInfo

if TYPE_CHECKING:
    from baton.specialists.knowledge.embeddings import EmbeddingProvider

log = logging.getLogger(__name__)
DOCUMENT_CHARS = 1_500
QUESTION_CHARS = 2_000
TIMEOUT_S = 10.0


def table_document(table: TableInfo) -> str:
    """What a table is about, in words: name, comment, columns with their comments (trimmed)."""
    columns = ", ".join(f"{c.name} ({' '.join(c.description.split())[:80]})" if c.description else c.name
                        for c in table.columns)
    text = f"{table.name.replace('_', ' ')}: {' '.join(table.description.split())[:300]}. Columns: {columns}"
    return text[:DOCUMENT_CHARS]


class TableEmbeddings:
    """One provider's vectors of a schema's tables, kept for the schema version they were made for."""

    def __init__(self, provider: EmbeddingProvider, *, timeout_s: float = TIMEOUT_S) -> None:
        self.provider = provider
        self.timeout_s = timeout_s
        self._schema: SchemaInfo | None = None
        self._names: list[str] = []
        self._vectors: np.ndarray | None = None
        self._lock = asyncio.Lock()

    async def _table_vectors(self, schema: SchemaInfo) -> tuple[list[str], np.ndarray]:
        async with self._lock:
            if self._schema is not schema or self._vectors is None:
                from baton.specialists.knowledge.embeddings import embed_checked

                tables = list(schema.tables.values())
                vectors = await embed_checked(self.provider, [table_document(t) for t in tables])
                self._names, self._vectors, self._schema = [t.name for t in tables], _normalised(vectors), schema
            return self._names, self._vectors

    async def ranking(self, schema: SchemaInfo, question: str, limit: int) -> list[str]:
        """The ``limit`` tables closest to ``question`` by meaning, best first; [] when the
        provider fails or takes longer than ``timeout_s`` (the words still rank)."""
        from baton.specialists.knowledge.embeddings import embed_checked

        try:
            async with asyncio.timeout(self.timeout_s):
                names, vectors = await self._table_vectors(schema)
                asked = _normalised(await embed_checked(self.provider, [question[:QUESTION_CHARS]]))[0]
        except Exception as exc:  # advisory: the question is answered with the word ranking
            log.warning("table embeddings unavailable (%s): tables ranked by words alone", type(exc).__name__)
            return []
        order = np.argsort(-(vectors @ asked), kind="stable")[:limit]
        return [names[i] for i in order]


def _normalised(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1.0, norms)


__all__ = ["TableEmbeddings", "table_document"]
