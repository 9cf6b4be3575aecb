"""Confidence arithmetic, exactly the seed's three tables (002 "Confidence Management").

Confidence measures corroboration, not match frequency: it moves only on evidence with
independent provenance (see ``Provenance.key``). Retrieval and self-repetition move
nothing; ``times_applied`` is a usage counter, not evidence.

Decay is a pure function of time: ``decayed(record, now)`` starts from the confidence the
record had when last corroborated (``base_confidence`` at ``anchor_at``) and subtracts one
step per full stale cycle since then. The decay job writes the result only when it differs,
so running it twice at the same ``now`` changes nothing and runs never compound.

Decisions where the seed is silent:
- A stale cycle is the seed's window (30 d learnings and insights, 60 d notes); the first
  full window without corroboration costs one step ("Stale (30d): -0.02/month").
- Learnings and insights have a floor of 0.0; notes 0.1 (the seed's floor).
- Benchmarks (user-confirmed question -> SQL) and doctrine start at 1.0 and never decay:
  a benchmark goes stale by an explicit flag from feedback, doctrine by its file changing.
- Values are rounded to 4 decimals so 0.6 + 0.1 is 0.7, not 0.7000000000000001.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

DAY = 86400.0


@dataclass(frozen=True, slots=True)
class ConfidencePolicy:
    kind: str
    initial: float
    corroborated: float
    stale_cycle_days: float | None  # None: no decay
    decay_step: float
    floor: float
    inactive_below: float | None  # confidence under which the record leaves default retrieval
    inactive_status: str = "deactivated"
    verified: float = 0.0
    resurfaced: float = 0.0
    dismissed: float = 0.0
    similarity: float = 0.75  # find_candidates threshold


LEARNING = ConfidencePolicy("learning", initial=0.6, corroborated=0.1, stale_cycle_days=30, decay_step=0.02,
                            floor=0.0, inactive_below=0.2, inactive_status="deactivated")
NOTE = ConfidencePolicy("note", initial=0.7, corroborated=0.1, stale_cycle_days=60, decay_step=0.1,
                        floor=0.1, inactive_below=None, verified=0.15)
INSIGHT = ConfidencePolicy("insight", initial=0.5, corroborated=0.15, stale_cycle_days=30, decay_step=0.05,
                           floor=0.0, inactive_below=0.15, inactive_status="expired",
                           resurfaced=0.05, dismissed=0.2, similarity=0.80)
BENCHMARK = ConfidencePolicy("benchmark", initial=1.0, corroborated=0.0, stale_cycle_days=None, decay_step=0.0,
                             floor=1.0, inactive_below=None)
DOCTRINE = ConfidencePolicy("doctrine", initial=1.0, corroborated=0.0, stale_cycle_days=None, decay_step=0.0,
                            floor=1.0, inactive_below=None)

POLICIES = {p.kind: p for p in (LEARNING, NOTE, INSIGHT, BENCHMARK, DOCTRINE)}
CAP = 1.0


def policy_for(kind: str) -> ConfidencePolicy:
    return POLICIES[kind]


def clamp(kind: str, confidence: float) -> float:
    policy = POLICIES[kind]
    return round(min(CAP, max(policy.floor, confidence)), 4)


def corroborated(kind: str, confidence: float) -> float:
    """+step, capped at 1.0 (call only for independent provenance)."""
    return clamp(kind, confidence + POLICIES[kind].corroborated)


def verified(kind: str, confidence: float) -> float:
    return clamp(kind, confidence + POLICIES[kind].verified)


def resurfaced(confidence: float) -> float:
    return clamp("insight", confidence + INSIGHT.resurfaced)


def dismissed(confidence: float) -> float:
    return clamp("insight", confidence - INSIGHT.dismissed)


def stale_cycles(kind: str, anchor_at: float, now: float) -> int:
    days = POLICIES[kind].stale_cycle_days
    if days is None or now <= anchor_at:
        return 0
    return int(math.floor((now - anchor_at) / (days * DAY)))


def decayed(kind: str, base_confidence: float, anchor_at: float, now: float, *, is_verified: bool = False) -> float:
    """Confidence at ``now`` given the last corroboration; verified notes are exempt."""
    policy = POLICIES[kind]
    if is_verified or policy.stale_cycle_days is None:
        return clamp(kind, base_confidence)
    return clamp(kind, base_confidence - policy.decay_step * stale_cycles(kind, anchor_at, now))


def status_for(kind: str, confidence: float) -> str:
    """``active``, or the policy's inactive status when confidence fell under its threshold."""
    policy = POLICIES[kind]
    if policy.inactive_below is not None and confidence < policy.inactive_below - 1e-9:
        return policy.inactive_status
    return "active"
