"""The embedding-provider protocol and the model identity every stored vector carries.

A vector means something only next to vectors of the same model, so every provider names
itself (``name``, ``version``, ``dimension``) and every stored vector row records that
identity (seed 002, "Workspace-scale memory", rule 2). ``EmbeddingModelInfo`` is the
identity; two infos that differ in anything are incomparable spaces, and the stores raise
``EmbeddingModelMismatchError`` rather than compare them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from baton.specialists.knowledge.errors import EmbeddingError, EmbeddingModelMismatchError


@dataclass(frozen=True, slots=True)
class EmbeddingModelInfo:
    """Which model made a vector. ``version`` is whatever pins the model's weights and
    settings (a revision, a date, a config digest); an empty version is allowed but then
    only the name guards against mixing."""

    name: str
    version: str
    dimension: int

    def __str__(self) -> str:
        return f"{self.name}@{self.version or '?'} ({self.dimension}d)"


@runtime_checkable
class EmbeddingProvider(Protocol):
    """Turns texts into vectors. Implementations must be safe to share between concurrent
    requests (no per-call state on the instance)."""

    name: str
    version: str
    dimension: int

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector of ``dimension`` floats per text, in order."""
        ...


def model_info(provider: EmbeddingProvider) -> EmbeddingModelInfo:
    return EmbeddingModelInfo(str(provider.name), str(provider.version), int(provider.dimension))


def require_same_model(stored: EmbeddingModelInfo, requested: EmbeddingModelInfo, *, what: str) -> None:
    """Raise ``EmbeddingModelMismatchError`` unless the two identities are equal."""
    if stored != requested:
        raise EmbeddingModelMismatchError(
            f"{what}: the stored vectors were made by {stored} but the configured embedding model is "
            f"{requested}; vectors of different models are not comparable. Re-embed the index with "
            f"the new model (KnowledgeIndex.reembed()) or configure the model it was built with.",
            stored=stored,
            requested=requested,
        )


async def embed_checked(provider: EmbeddingProvider, texts: Sequence[str]) -> np.ndarray:
    """Call ``provider.embed`` and check what came back: one finite vector of the declared
    dimension per text. Returns a ``float32`` array of shape ``(len(texts), dimension)``."""
    info = model_info(provider)
    if not texts:
        return np.zeros((0, info.dimension), dtype=np.float32)
    vectors = await provider.embed(list(texts))
    if len(vectors) != len(texts):
        raise EmbeddingError(f"{info} returned {len(vectors)} vectors for {len(texts)} texts")
    bad = next((len(v) for v in vectors if len(v) != info.dimension), None)
    if bad is not None:
        raise EmbeddingError(f"{info} returned a {bad}-dimensional vector; it declares {info.dimension}")
    array = np.asarray(vectors, dtype=np.float32)
    if not np.isfinite(array).all():
        raise EmbeddingError(f"{info} returned a vector with NaN or infinite values")
    return array
