"""The record projection: every register readers use, derived from the journal alone.

``apply_event`` is the one reducer. The store runs it on the events it just appended
(inside the same transaction, so the projection can never lag the journal), and
``rebuild`` runs it over the whole journal into a fresh projection; ``diff`` compares the
two without changing anything. Events carry their results (the new confidence, the new
status), never instructions to recompute, so a replay reproduces history exactly even
after a policy constant is tuned.

Event types (payload keys; every record event lives in stream ``record:<id>``):
``record.created`` {record}, ``record.superseded`` {by}, ``record.corroborated``
{confidence} (+ event provenance), ``record.verified`` {confidence}, ``record.adjusted``
{confidence, status, reason}, ``record.decayed`` {confidence, status, as_of},
``record.applied`` {}, ``record.flagged`` {stale, reason}, ``record.status`` {status,
reason}, ``record.forgotten`` {reason}. Other types (feedback, analysis) do not touch
records. An erased event (payload ``None``) is skipped: its stream always ends in a
tombstone, which deletes the record.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from sqlalchemy import and_, delete, insert, select, update
from sqlalchemy.engine import Connection

from baton.memory.journal import StoredEvent
from baton.memory.model import Provenance, Record
from baton.memory.schema import FORGOTTEN, Tables

STREAM_PREFIX = "record:"
_CONTENT_FIELDS = ("id", "kind", "text", "entity", "attribute", "scope", "value", "category", "connection_id",
                   "confidence", "base_confidence", "anchor_at", "observed_at", "volatile", "freshness_s",
                   "verified", "supersedes", "data")


def stream_of(record_id: str) -> str:
    return STREAM_PREFIX + record_id


def record_payload(record: Record) -> dict[str, Any]:
    body = {name: getattr(record, name) for name in _CONTENT_FIELDS}
    body["provenance"] = [p.to_dict() for p in record.provenance]
    return body


def apply_event(records: dict[str, Record], event: StoredEvent) -> str | None:
    """Apply one event to ``records`` (id -> Record) in place; returns the touched id."""
    if not event.stream.startswith(STREAM_PREFIX):
        return None
    rid = event.stream[len(STREAM_PREFIX):]
    if event.type == FORGOTTEN:
        records.pop(rid, None)
        return rid
    p = event.payload
    if p is None:
        return None
    if event.type == "record.created":
        body = dict(p["record"])
        body["provenance"] = [Provenance.from_dict(x) for x in body.get("provenance", [])]
        body["supersedes"] = list(body.get("supersedes", []))
        created = Record(workspace=event.workspace, **body)
        created.created_at = event.recorded_at
        records[rid] = created
    else:
        rec = records.get(rid)
        if rec is None:
            return None
        kind = event.type
        if kind == "record.superseded":
            rec.status, rec.superseded_by = "superseded", p["by"]
        elif kind == "record.corroborated":
            rec.confidence = rec.base_confidence = p["confidence"]
            rec.anchor_at = event.recorded_at
            rec.provenance.append(Provenance.from_dict(event.provenance))
        elif kind == "record.verified":
            rec.confidence = rec.base_confidence = p["confidence"]
            rec.anchor_at, rec.verified = event.recorded_at, True
            rec.provenance.append(Provenance.from_dict(event.provenance))
        elif kind == "record.adjusted":
            rec.confidence = rec.base_confidence = p["confidence"]
            rec.anchor_at, rec.status = event.recorded_at, p["status"]
        elif kind == "record.decayed":
            rec.confidence, rec.status = p["confidence"], p["status"]
        elif kind == "record.applied":
            rec.times_applied += 1
        elif kind == "record.flagged":
            rec.stale = bool(p["stale"])
        elif kind == "record.status":
            rec.status = p["status"]
        else:
            return None
    rec = records[rid]
    rec.version, rec.updated_at, rec.updated_seq = event.version, event.recorded_at, event.seq
    return rid


def to_row(rec: Record) -> dict[str, Any]:
    return dict(
        id=rec.id, workspace=rec.workspace, kind=rec.kind, status=rec.status, is_active=rec.is_active,
        category=rec.category, connection_id=rec.connection_id, entity=rec.entity, attribute=rec.attribute,
        scope=rec.scope, value=rec.value, text=rec.text, lesson_hash=rec.lesson_hash, confidence=rec.confidence,
        base_confidence=rec.base_confidence, anchor_at=rec.anchor_at, observed_at=rec.observed_at,
        volatile=rec.volatile, freshness_s=rec.freshness_s, verified=rec.verified, stale=rec.stale,
        superseded_by=rec.superseded_by, supersedes=json.dumps(rec.supersedes),
        provenance=json.dumps([p.to_dict() for p in rec.provenance], sort_keys=True),
        times_applied=rec.times_applied, data=json.dumps(rec.data, sort_keys=True), version=rec.version,
        created_at=rec.created_at, updated_at=rec.updated_at, updated_seq=rec.updated_seq)


def from_row(row: Any) -> Record:
    m = row._mapping
    return Record(
        id=m["id"], workspace=m["workspace"], kind=m["kind"], text=m["text"], entity=m["entity"],
        attribute=m["attribute"], scope=m["scope"], value=m["value"], category=m["category"],
        connection_id=m["connection_id"], confidence=m["confidence"], base_confidence=m["base_confidence"],
        anchor_at=m["anchor_at"], observed_at=m["observed_at"], volatile=bool(m["volatile"]),
        freshness_s=m["freshness_s"], verified=bool(m["verified"]), stale=bool(m["stale"]), status=m["status"],
        superseded_by=m["superseded_by"], supersedes=json.loads(m["supersedes"]),
        provenance=[Provenance.from_dict(x) for x in json.loads(m["provenance"])],
        times_applied=m["times_applied"], data=json.loads(m["data"]), version=m["version"],
        created_at=m["created_at"], updated_at=m["updated_at"], updated_seq=m["updated_seq"])


class Projector:
    def __init__(self, tables: Tables):
        self.t = tables

    def load(self, conn: Connection, workspace: str, ids: Iterable[str]) -> dict[str, Record]:
        ids = list(set(ids))
        r = self.t.records
        out: dict[str, Record] = {}
        for i in range(0, len(ids), 500):
            rows = conn.execute(select(r).where(r.c.workspace == workspace, r.c.id.in_(ids[i:i + 500])))
            out.update((row.id, from_row(row)) for row in rows)
        return out

    def apply(self, conn: Connection, workspace: str, events: list[StoredEvent],
              loaded: dict[str, Record] | None = None) -> dict[str, Record]:
        """Apply freshly appended events to the live projection. ``loaded`` may hold the
        current state of touched records (the store usually just read them)."""
        touched = {e.stream[len(STREAM_PREFIX):] for e in events if e.stream.startswith(STREAM_PREFIX)}
        state = dict(loaded or {})
        missing = [rid for rid in touched if rid not in state]
        if missing:
            state.update(self.load(conn, workspace, missing))
        existed = {rid for rid in touched if rid in state}
        for event in events:
            apply_event(state, event)
        r = self.t.records
        inserts = [to_row(state[rid]) for rid in touched if rid in state and rid not in existed]
        if inserts:
            conn.execute(insert(r), inserts)
        for rid in touched & existed:
            if rid in state:
                row = to_row(state[rid])
                del row["id"], row["workspace"]
                conn.execute(update(r).where(and_(r.c.workspace == workspace, r.c.id == rid)).values(**row))
            else:
                conn.execute(delete(r).where(and_(r.c.workspace == workspace, r.c.id == rid)))
        return {rid: state[rid] for rid in touched if rid in state}

    # --- rebuild ----------------------------------------------------------------------
    @staticmethod
    def fold(events: Iterable[StoredEvent]) -> dict[str, Record]:
        records: dict[str, Record] = {}
        for event in events:
            apply_event(records, event)
        return records

    def rebuild(self, conn: Connection, workspace: str, records: dict[str, Record], batch: int = 5000) -> int:
        """Replace the workspace's projection with ``records`` (a fold of its journal)."""
        r = self.t.records
        conn.execute(delete(r).where(r.c.workspace == workspace))
        rows = [to_row(rec) for rec in records.values()]
        for i in range(0, len(rows), batch):
            conn.execute(insert(r), rows[i:i + batch])
        return len(rows)

    def diff(self, conn: Connection, workspace: str, records: dict[str, Record], limit: int = 20) -> list[str]:
        """Differences between the live projection and ``records``; empty when equal."""
        r = self.t.records
        live = {row.id: row for row in conn.execute(select(r).where(r.c.workspace == workspace))}
        problems = []
        for rid in sorted(set(live) | set(records)):
            if rid not in records:
                problems.append(f"{rid}: in the live projection but not in the journal")
            elif rid not in live:
                problems.append(f"{rid}: in the journal but missing from the live projection")
            else:
                expected, actual = to_row(records[rid]), dict(live[rid]._mapping)
                bad = sorted(k for k in expected if _norm(expected[k]) != _norm(actual.get(k)))
                if bad:
                    problems.append(f"{rid}: differs in {', '.join(bad)}")
            if len(problems) >= limit:
                break
        return problems


def _norm(value: Any) -> Any:
    return bool(value) if isinstance(value, bool) else value
