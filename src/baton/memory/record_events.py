"""What one record's own operations append: corroborate, verify, adjust, flag, retire, forget.

``MemoryStore`` is the door (access, transactions, reads); what an operation on one record
*does* is decided here, from the record as the transaction reads it. Each function runs inside
``MemoryStore.transact`` (a ``Tx``), like the seed's write path (``writer.remember_in``), so
the read it decides on and the events it appends commit together. Most write nothing when
nothing would change (a corroboration without independent provenance, a note verified again,
an insight resurfaced at its cap, a status already set): the journal records changes only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from baton.memory import confidence as conf
from baton.memory.errors import InvalidRecordError
from baton.memory.gate import independent
from baton.memory.journal import NewEvent
from baton.memory.model import Provenance, Record, RecordDraft
from baton.memory.projection import stream_of
from baton.memory.schema import FORGOTTEN
from baton.memory.writer import WriteResult, remember_in, subject_records

if TYPE_CHECKING:
    from baton.memory.store import Tx

INSIGHT_STEPS = {"resurfaced": conf.resurfaced, "dismissed": conf.dismissed}


def corroborate_in(tx: Tx, record_id: str, provenance: Provenance) -> Record:
    rec = tx.load(record_id)
    if not rec.is_active or not independent(rec.provenance, provenance):
        return rec
    return tx.record_event(rec, "record.corroborated", {"confidence": conf.corroborated(rec.kind, rec.confidence)}, provenance)


def verify_note_in(tx: Tx, record_id: str, provenance: Provenance) -> Record:
    rec = tx.load(record_id)
    if rec.kind != "note":
        raise InvalidRecordError("only session notes are verified")
    if rec.verified:
        return rec
    return tx.record_event(rec, "record.verified", {"confidence": conf.verified("note", rec.confidence)}, provenance)


def adjust_in(tx: Tx, rec: Record, how: str, provenance: Provenance | None) -> Record:
    """An active insight resurfaced or dismissed (``how``, a key of ``INSIGHT_STEPS``)."""
    if rec.kind != "insight" or not rec.is_active:
        raise InvalidRecordError("only active insights are resurfaced or dismissed")
    value = INSIGHT_STEPS[how](rec.confidence)
    return tx.record_event(rec, "record.adjusted", {"confidence": value, "status": conf.status_for("insight", value),
                                                    "reason": how}, provenance)


def remember_insight_in(tx: Tx, draft: RecordDraft) -> WriteResult:
    known = subject_records(tx.conn, tx.store.tables, tx.workspace, draft)
    if not known:
        return remember_in(tx, draft)
    best = max(known, key=lambda r: (r.confidence, r.id))
    if best.is_active and best.kind == "insight" and conf.resurfaced(best.confidence) == best.confidence:
        return WriteResult("unchanged", best)  # already at the cap: an event would change nothing
    rec = adjust_in(tx, best, "resurfaced", draft.provenance)
    return WriteResult("resurfaced", rec, seq=tx.events[-1].seq)


def mark_applied_in(tx: Tx, record_ids: list[str]) -> None:
    loaded = tx.store.projector.load(tx.conn, tx.workspace, record_ids)
    tx.append([NewEvent(stream_of(rid), "record.applied", {}, rec.version) for rid, rec in loaded.items()], loaded)


def flag_stale_in(tx: Tx, record_id: str, reason: str) -> Record:
    rec = tx.load(record_id)
    return rec if rec.stale else tx.record_event(rec, "record.flagged", {"stale": True, "reason": reason})


def set_status_in(tx: Tx, record_id: str, status: str, reason: str) -> Record:
    rec = tx.load(record_id)
    return rec if rec.status == status else tx.record_event(rec, "record.status", {"status": status, "reason": reason})


def forget_in(tx: Tx, record_id: str, reason: str, provenance: Provenance | None, expected_version: int | None) -> int:
    """The tombstone appended and every payload of the record's stream erased (their count)."""
    rec = tx.load(record_id)
    version = rec.version if expected_version is None else expected_version
    tx.append([NewEvent(stream_of(record_id), FORGOTTEN, {"reason": reason}, version, provenance)], {rec.id: rec})
    return tx.store.journal.erase_stream(tx.conn, tx.workspace, stream_of(record_id))
