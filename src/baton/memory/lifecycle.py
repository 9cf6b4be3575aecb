"""The lifecycle cycle: decay, expiry and promotion, as idempotent jobs.

``run_decay(scope, now=...)`` recomputes every active record's confidence from time:
``decayed(base_confidence, anchor_at, now)`` with the kind's cycle and step (verified notes
exempt), never raising a confidence (a run at an earlier ``now`` cannot undo a later one),
and appends a ``record.decayed`` event only where the result differs. So a second run at
the same ``now`` appends nothing, and runs never compound: each starts from the last
corroboration, not from the previous run's output. Records falling under their kind's
threshold change status in the same event (learnings ``deactivated`` below 0.2, insights
``expired`` below 0.15); promoted records past their ``expires_at`` expire.

``promote(scope, now=...)`` is the seed's promotion query: a lesson (same lesson hash)
active with confidence >= 0.7 on >= 2 independent connections becomes a ``global``-scope
learning in the same workspace, carrying provenance, confidence (the highest of its
sources), contradiction links (what its sources superseded) and an expiry (90 days by
default). Connections are independent when the learnings backing them share no
provenance key: one session that wrote the same lesson on two databases is one witness.
Promotion to a scope above ONE workspace is not automatic, by the isolation rule: it
travels as an exported artifact (``transfer.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import func, select

from baton.memory import confidence as conf
from baton.memory.access import WorkspaceScope
from baton.memory.journal import NewEvent
from baton.memory.model import GLOBAL_SCOPE, Provenance, Record, RecordDraft
from baton.memory.projection import from_row, stream_of
from baton.memory.store import MemoryStore
from baton.memory.writer import remember_in

PROMOTION_MIN_CONFIDENCE = 0.7
PROMOTION_MIN_CONNECTIONS = 2
PROMOTION_TTL_DAYS = 90
_DECAYING = ("learning", "note", "insight")


@dataclass
class DecayReport:
    examined: int = 0
    decayed: int = 0
    deactivated: list[str] = field(default_factory=list)


def run_decay(scope: WorkspaceScope, *, now: Any = None, batch: int = 2000) -> DecayReport:
    store = MemoryStore.of(scope)
    r = store.tables.records
    cycles = [conf.policy_for(k).stale_cycle_days for k in _DECAYING]  # every decaying kind has one
    shortest = min(days for days in cycles if days is not None) * conf.DAY
    report = DecayReport()

    def op(tx: Any) -> None:
        rows = tx.conn.execute(select(r).where(
            r.c.workspace == tx.workspace, r.c.is_active.is_(True), r.c.kind.in_(_DECAYING),
            (r.c.anchor_at <= tx.now - shortest) | (r.c.scope == GLOBAL_SCOPE)))
        pending: list[tuple[NewEvent, Record]] = []
        for rec in map(from_row, rows):
            report.examined += 1
            event = _decay_event(rec, tx.now)
            if event is not None:
                pending.append((event, rec))
        for i in range(0, len(pending), batch):
            chunk = pending[i:i + batch]
            state = tx.append([e for e, _ in chunk], {rec.id: rec for _, rec in chunk})
            for rid, rec in state.items():
                report.decayed += 1
                if not rec.is_active:
                    report.deactivated.append(rid)

    store.transact(scope, op, now=now)
    return report


def _decay_event(rec: Record, now: float) -> NewEvent | None:
    expires = (rec.data.get("promotion") or {}).get("expires_at")
    if expires is not None and now >= expires:
        return NewEvent(stream_of(rec.id), "record.status", {"status": "expired", "reason": "promotion expired"}, rec.version)
    target = min(rec.confidence, conf.decayed(rec.kind, rec.base_confidence, rec.anchor_at, now, is_verified=rec.verified))
    status = conf.status_for(rec.kind, target)
    if target == rec.confidence and status == rec.status:
        return None
    return NewEvent(stream_of(rec.id), "record.decayed", {"confidence": target, "status": status, "as_of": now}, rec.version)


def independent_connections(records: list[Record]) -> list[str]:
    """Greedy set of connections whose backing provenance keys are pairwise disjoint."""
    by_conn: dict[str, set] = {}
    for rec in records:
        by_conn.setdefault(rec.connection_id or "", set()).update(p.key() for p in rec.provenance)
    chosen: list[str] = []
    used: set = set()
    for cid in sorted(by_conn, key=lambda c: (len(by_conn[c]), c)):
        if cid and not (by_conn[cid] & used):
            chosen.append(cid)
            used |= by_conn[cid]
    return chosen


def promote(scope: WorkspaceScope, *, now: Any = None, ttl_days: float = PROMOTION_TTL_DAYS) -> list[Record]:
    """Create global-scope learnings for lessons seen on >= 2 independent connections."""
    store = MemoryStore.of(scope)
    r = store.tables.records

    def op(tx: Any) -> list[Record]:
        base = (r.c.workspace == tx.workspace, r.c.kind == "learning", r.c.is_active.is_(True),
                r.c.confidence >= PROMOTION_MIN_CONFIDENCE, r.c.connection_id.is_not(None), r.c.scope != GLOBAL_SCOPE)
        hashes = tx.conn.execute(select(r.c.lesson_hash).where(*base).group_by(r.c.lesson_hash)
                                 .having(func.count(func.distinct(r.c.connection_id)) >= PROMOTION_MIN_CONNECTIONS)).scalars().all()
        created = []
        for lesson_hash in hashes:
            known = tx.conn.execute(select(r.c.id).where(r.c.workspace == tx.workspace, r.c.lesson_hash == lesson_hash,
                                                         r.c.scope == GLOBAL_SCOPE, r.c.is_active.is_(True))).first()
            if known:
                continue
            sources = [from_row(row) for row in tx.conn.execute(select(r).where(*base, r.c.lesson_hash == lesson_hash))]
            connections = independent_connections(sources)
            if len(connections) < PROMOTION_MIN_CONNECTIONS:
                continue
            lead = max(sources, key=lambda rec: (rec.confidence, rec.created_at))
            promotion = {"sources": sorted(rec.id for rec in sources), "connections": connections,
                         "confidence": lead.confidence,
                         "contradicts": sorted({old for rec in sources for old in rec.supersedes}),
                         "expires_at": tx.now + ttl_days * conf.DAY}
            draft = RecordDraft("learning", lead.text, entity=lead.entity, attribute=lead.attribute, scope=GLOBAL_SCOPE,
                                value=lead.value, category=lead.category,
                                provenance=Provenance("promotion", outcome_id="promotion:" + lesson_hash),
                                data={**lead.data, "promotion": promotion}).validated()
            result = remember_in(tx, draft, initial=lead.confidence)
            if result.action in ("created", "superseded"):
                created.append(result.record)
        return created

    return store.transact(scope, op, now=now)
