"""The seed's write path for one statement: candidates -> gate -> verdict -> events.

``remember_in`` runs inside a store transaction (``Tx``), so what it reads (the active
records about the same entity, through the (workspace, kind, entity, attribute) index) is
exactly what it decides on, and everything it appends commits together:

- any candidate the gate says the new statement CONTRADICTS is superseded: one
  ``record.superseded`` per old record plus the new ``record.created``, one append;
- otherwise, a CORROBORATES verdict with independent provenance bumps the most confident
  matching record (+step, capped) and creates nothing; without independent provenance it
  is self-repetition and nothing at all is written (``unchanged``);
- otherwise (no candidates, or only UNRELATED / COEXIST ones) a new record is created at
  its kind's initial confidence.

Text is never merged: the old text stays, the new text lives in its own record.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sqlalchemy import select
from sqlalchemy.engine import Connection

from baton.memory import confidence as conf
from baton.memory.dedup import find_candidates
from baton.memory.gate import Verdict, apply_verdict, contradiction_gate, keyword_flags
from baton.memory.journal import NewEvent
from baton.memory.model import Record, RecordDraft
from baton.memory.projection import from_row, record_payload, stream_of
from baton.memory.schema import Tables

if TYPE_CHECKING:
    from baton.memory.store import Tx


@dataclass
class CandidateVerdict:
    record_id: str
    similarity: float
    verdict: Verdict
    flags: tuple[str, ...] = ()  # keyword heuristics: informational, never decisive


@dataclass
class WriteResult:
    """What ``remember`` did: ``created``, ``superseded`` (new record created, the ids in
    ``superseded`` retired), ``corroborated`` (existing record +step), ``unchanged``, or
    (``remember_insight`` only) ``resurfaced`` (an insight found again, +0.05)."""

    action: str
    record: Record
    superseded: list[str] = field(default_factory=list)
    candidates: list[CandidateVerdict] = field(default_factory=list)
    seq: int = 0  # journal sequence of the last event written (0: nothing written)


def subject_records(conn: Connection, tables: Tables, workspace: str, draft: RecordDraft) -> list[Record]:
    """Active records about the draft's entity. Filtering ``is_active`` in Python is on
    purpose: with it in SQL, SQLite's planner may prefer the (workspace, kind, is_active, ...)
    index and scan every active record of the kind instead of one subject's few rows."""
    r = tables.records
    rows = conn.execute(select(r).where(r.c.workspace == workspace, r.c.kind == draft.kind, r.c.entity == draft.entity))
    return [rec for rec in map(from_row, rows) if rec.is_active]


def judge(existing: list[Record], draft: RecordDraft) -> list[tuple[Record, CandidateVerdict]]:
    out = []
    for cand in find_candidates(existing, draft.text, kind=draft.kind, entity=draft.entity, attribute=draft.attribute):
        verdict = contradiction_gate(cand.record, draft)
        out.append((cand.record, CandidateVerdict(cand.record.id, cand.similarity, verdict,
                                                  keyword_flags(cand.record.text, draft.text))))
    return out


def new_record(tx: Tx, draft: RecordDraft, *, supersedes: list[str] | None = None, initial: float | None = None) -> Record:
    policy = conf.policy_for(draft.kind)
    if initial is None:
        initial = policy.initial + (policy.verified if draft.verified else 0.0)
    initial = conf.clamp(draft.kind, initial)
    observed = draft.validity.observed_at if draft.validity.observed_at is not None else tx.now
    return Record(
        id=uuid.uuid4().hex, workspace=tx.workspace, kind=draft.kind, text=draft.text, entity=draft.entity,
        attribute=draft.attribute, scope=draft.scope, value=draft.value, category=draft.category,
        connection_id=draft.connection_id, confidence=initial, base_confidence=initial, anchor_at=tx.now,
        observed_at=observed, volatile=draft.validity.volatile, freshness_s=draft.validity.freshness_s,
        verified=draft.verified, supersedes=list(supersedes or []), provenance=[draft.provenance], data=draft.data)


def remember_in(tx: Tx, draft: RecordDraft, *, initial: float | None = None) -> WriteResult:
    """``draft`` must already be ``validated()``."""
    judged = judge(subject_records(tx.conn, tx.store.tables, tx.workspace, draft), draft)
    report = [v for _, v in judged]
    supersede: list[Record] = []
    corroborate: list[Record] = []
    repeated: list[Record] = []
    for old, v in judged:
        action = apply_verdict(v.verdict, old, draft.provenance)
        {"supersede": supersede, "corroborate": corroborate, "unchanged": repeated}.get(action.kind, []).append(old)
    if supersede:
        new = new_record(tx, draft, supersedes=[old.id for old in supersede], initial=initial)
        events = [NewEvent(stream_of(old.id), "record.superseded", {"by": new.id}, old.version, draft.provenance)
                  for old in supersede]
        events.append(NewEvent(stream_of(new.id), "record.created", {"record": record_payload(new)}, 0, draft.provenance))
        state = tx.append(events, {old.id: old for old in supersede})
        return WriteResult("superseded", state[new.id], [old.id for old in supersede], report, tx.events[-1].seq)
    if corroborate:
        target = max(corroborate, key=lambda rec: rec.confidence)
        rec = tx.record_event(target, "record.corroborated",
                              {"confidence": conf.corroborated(target.kind, target.confidence)}, draft.provenance)
        return WriteResult("corroborated", rec, [], report, tx.events[-1].seq)
    if repeated:
        return WriteResult("unchanged", max(repeated, key=lambda rec: rec.confidence), [], report)
    new = new_record(tx, draft, initial=initial)
    state = tx.append([NewEvent(stream_of(new.id), "record.created", {"record": record_payload(new)}, 0, draft.provenance)])
    return WriteResult("created", state[new.id], [], report, tx.events[-1].seq)
