"""The vector-store interface the knowledge index writes to and searches.

Vectors are keyed by the content hash of the text they embed (``Chunk.content_hash``), not
by chunk id: a chunk that moves within its file, or appears in two files, is embedded once.
A store holds vectors of one embedding model at a time; writing or searching with another
model raises ``EmbeddingModelMismatchError`` (use ``clear()`` and re-embed to switch).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from baton.specialists.knowledge.embeddings import EmbeddingModelInfo


@runtime_checkable
class VectorStore(Protocol):
    async def stored_models(self) -> list[EmbeddingModelInfo]:
        """Every model identity that has vectors in this store (normally zero or one)."""
        ...

    async def missing(self, model: EmbeddingModelInfo, content_hashes: Collection[str]) -> set[str]:
        """Which of ``content_hashes`` have no vector from ``model``."""
        ...

    async def upsert(self, model: EmbeddingModelInfo, content_hashes: Sequence[str], vectors: np.ndarray) -> None:
        """Store one vector (a row of ``vectors``) per hash."""
        ...

    async def retain(self, content_hashes: Collection[str]) -> int:
        """Delete vectors whose hash is not in ``content_hashes``; return how many went."""
        ...

    async def clear(self) -> int:
        """Delete every vector (before re-embedding with another model)."""
        ...

    async def search(self, model: EmbeddingModelInfo, query: np.ndarray, k: int) -> list[tuple[str, float]]:
        """The ``k`` hashes whose vectors are most cosine-similar to ``query``, best first,
        as ``(content_hash, cosine)``."""
        ...

    async def close(self) -> None: ...


def check_store_model(stored: Sequence[EmbeddingModelInfo], model: EmbeddingModelInfo, *, what: str) -> None:
    """Raise ``EmbeddingModelMismatchError`` when the store holds vectors of another model."""
    from baton.specialists.knowledge.embeddings import require_same_model

    for info in stored:
        require_same_model(info, model, what=what)
