"""Reciprocal rank fusion of the lexical and vector rankings.

RRF (Cormack et al., 2009) scores each item ``sum(weight / (k + rank))`` over the lists it
appears in (ranks from 1). It needs no score calibration — BM25 and cosine live on
unrelated scales — and an item ranked well by both retrievers beats one ranked first by
only one. ``k = 60`` is the value from the paper.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TypeVar

K = TypeVar("K", bound=Hashable)

RRF_K = 60


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[K]], *, k: int = RRF_K, weights: Sequence[float] | None = None
) -> list[tuple[K, float]]:
    """Fuse best-first rankings into one best-first list of ``(item, score)``. Ties keep the
    order in which items were first seen (earlier rankings first)."""
    if weights is not None and len(weights) != len(rankings):
        raise ValueError("one weight per ranking")
    scores: dict[K, float] = {}
    for index, ranking in enumerate(rankings):
        weight = 1.0 if weights is None else weights[index]
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
    return sorted(scores.items(), key=lambda pair: -pair[1])
