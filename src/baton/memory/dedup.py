"""Fuzzy candidate retrieval (seed 002 "Fuzzy Deduplication Pattern").

``find_candidates`` ranks existing records by ``difflib.SequenceMatcher`` ratio against
the new text and keeps those at or above the kind's threshold (0.75; 0.80 for insights).
It has NO side effects: no confidence bump, no text replacement, no reactivation. Only the
contradiction gate's verdict decides what happens next.

The store feeds it only records that share the new statement's entity (an indexed lookup),
so the cost is bounded by how many statements exist about one subject, not by the size of
the workspace. Records sharing entity AND attribute go to the gate whatever their text
similarity (``structural=True``): the gate decides on structure, and a unit change worded
differently ("timeout is 30s" / "queries now time out after 60 seconds") must still be
caught.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Generic, TypeVar

from baton.memory.confidence import policy_for
from baton.memory.model import normalize_key

T = TypeVar("T")


def similarity(a: str, b: str) -> float:
    """The seed's measure: ratio of the stripped, lowercased texts."""
    return SequenceMatcher(None, a.strip().lower(), b.strip().lower()).ratio()


@dataclass(frozen=True, slots=True)
class Candidate(Generic[T]):
    record: T
    similarity: float
    structural: bool  # same entity and attribute


def find_candidates(existing: Iterable[T], text: str, *, kind: str = "learning", entity: str = "",
                    attribute: str = "", threshold: float | None = None) -> list[Candidate[T]]:
    """Candidates for the gate, most similar first. ``existing`` items need ``text``,
    ``entity`` and ``attribute`` attributes."""
    limit = policy_for(kind).similarity if threshold is None else threshold
    key = (normalize_key(entity), normalize_key(attribute))
    found = []
    for record in existing:
        ratio = similarity(record.text, text)  # type: ignore[attr-defined]
        structural = bool(key[0]) and (record.entity, record.attribute) == key  # type: ignore[attr-defined]
        if ratio >= limit or structural:
            found.append(Candidate(record, round(ratio, 4), structural))
    found.sort(key=lambda c: (c.structural, c.similarity), reverse=True)
    return found
