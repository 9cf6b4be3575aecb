"""The append-only event journal: the one canonical store of memory.

Every memory write is an event appended here; every register anyone reads is a projection
of these events (``projection.py``). Each event has a global ``seq``, a ``stream`` and
``version`` (optimistic concurrency: appending with a stale ``expected_version`` raises
``StaleVersionError``), its workspace, type, payload, provenance and time, and a link in
its workspace's hash chain.

Erasure without breaking the chain: the chain covers ``payload_hash`` =
sha256(salt || canonical payload), and payload bodies live in their own table with that
salt. ``erase_stream`` deletes the bodies (and salts) of a forgotten record's events; the
chain still verifies, and without the salt the remaining hash cannot even confirm a guess
of the erased text.

The journal never opens transactions itself: callers (the store) pass a ``Connection``
inside one, so a supersession (two events) and its projection updates commit or vanish
together. On PostgreSQL ``lock_workspace`` takes a transaction-scoped advisory lock so
concurrent writers of one workspace queue instead of racing for the next chain position;
on SQLite the store's ``BEGIN IMMEDIATE`` already serializes writers.

What the chain cannot see: deletion of the NEWEST events. Anyone able to drop the
append-only triggers can delete the tail of a workspace's chain and what remains still
links from genesis, so ``verify`` alone passes. Only a head kept outside the database
catches it: a saved answer's bundle lock (``journal_seq`` + ``head_hash``), an operator's
note of ``baton memory verify``'s output. ``verify(..., anchor=(seq, hash))`` reports when
that event is no longer in the chain at its sequence (``anchor_of`` reads a lock, a
``(seq, hash)`` pair or a bare hash).
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import and_, delete, func, insert, select
from sqlalchemy.engine import Connection

from baton.memory.errors import InvalidRecordError, StaleVersionError
from baton.memory.model import Provenance
from baton.memory.schema import FORGOTTEN, Tables
from baton.store_backends import backend_of

GENESIS = "0" * 64


def canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def payload_digest(salt: str, body: str) -> str:
    return hashlib.sha256(f"{salt}\n{body}".encode()).hexdigest()


def chain_hash(prev_hash: str, *, event_id: str, workspace: str, position: int, stream: str, version: int,
               type: str, payload_hash: str, provenance: str, recorded_at: float) -> str:
    body = canonical([event_id, workspace, position, stream, version, type, payload_hash, provenance, recorded_at])
    return hashlib.sha256(f"{prev_hash}\n{body}".encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class NewEvent:
    """An event to append. ``expected_version``: the stream version the caller last saw
    (0 for a new stream), or ``None`` to append without a concurrency check."""

    stream: str
    type: str
    payload: Mapping[str, Any]
    expected_version: int | None = None
    provenance: Provenance | None = None


@dataclass(frozen=True, slots=True)
class StoredEvent:
    seq: int
    event_id: str
    workspace: str
    position: int
    stream: str
    version: int
    type: str
    payload: dict[str, Any] | None  # None once erased
    provenance: dict[str, Any]
    recorded_at: float
    payload_hash: str
    prev_hash: str
    hash: str

    @property
    def erased(self) -> bool:
        return self.payload is None


@dataclass
class ChainReport:
    workspace: str
    events: int = 0
    erased_payloads: int = 0
    head_hash: str = GENESIS
    last_seq: int = 0  # seq of the head event: "last_seq:head_hash" is the anchor to note down
    problems: list[str] = field(default_factory=list)
    anchored: bool | None = None  # None: no anchor given; else whether the anchored head is still in the chain

    @property
    def ok(self) -> bool:
        return not self.problems


Anchor = tuple[int | None, str]  # (seq or None, hash) of an event known to have been the head


def anchor_of(value: Any) -> Anchor:
    """Read an external head anchor: a bundle lock (object or ``to_dict()``), a
    ``(seq, hash)`` pair, ``"seq:hash"`` or a bare hash. Malformed input is an
    ``InvalidRecordError``."""
    seq: Any = None
    if hasattr(value, "head_hash") and hasattr(value, "journal_seq"):
        seq, value = value.journal_seq, value.head_hash
    elif isinstance(value, Mapping):
        if "head_hash" not in value:
            raise InvalidRecordError("the lock has no head_hash (compiled before heads were anchored)")
        seq, value = value.get("journal_seq"), value["head_hash"]
    elif isinstance(value, (tuple, list)) and len(value) == 2:
        seq, value = value
    elif isinstance(value, str) and ":" in value:
        seq, value = value.split(":", 1)
    if seq is not None:
        try:
            seq = int(seq)
        except (TypeError, ValueError):
            raise InvalidRecordError(f"an anchor's sequence must be an integer, not {seq!r}") from None
        if seq < 0:
            raise InvalidRecordError("an anchor's sequence cannot be negative")
    digest = value.strip().lower() if isinstance(value, str) else ""
    if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
        raise InvalidRecordError(f"an anchor's hash must be 64 hex digits, not {value!r}")
    return seq, digest


class Journal:
    def __init__(self, tables: Tables):
        self.t = tables

    # --- writing ----------------------------------------------------------------------
    def lock_workspace(self, conn: Connection, workspace: str) -> None:
        backend_of(conn).transaction_lock(conn, "baton-mem:" + workspace)

    def head(self, conn: Connection, workspace: str) -> tuple[int, str]:
        ev = self.t.events
        row = conn.execute(select(ev.c.position, ev.c.hash).where(ev.c.workspace == workspace)
                           .order_by(ev.c.position.desc()).limit(1)).first()
        return (row[0], row[1]) if row else (0, GENESIS)

    def stream_version(self, conn: Connection, workspace: str, stream: str) -> int:
        ev = self.t.events
        return conn.execute(select(func.coalesce(func.max(ev.c.version), 0))
                            .where(and_(ev.c.workspace == workspace, ev.c.stream == stream))).scalar_one()

    def append(self, conn: Connection, workspace: str, events: Sequence[NewEvent], *, now: float,
               known_versions: Mapping[str, int] | None = None) -> list[StoredEvent]:
        """Append ``events`` in order inside the caller's transaction.

        ``known_versions`` lets a caller that just read a stream's version (or created the
        stream) skip re-reading it; the unique (workspace, stream, version) constraint
        still guards against a racing writer."""
        if not events:
            return []
        position, prev = self.head(conn, workspace)
        versions: dict[str, int] = dict(known_versions or {})
        event_rows, payload_rows, stored = [], [], []
        for new in events:
            if not new.stream or not new.type:
                raise InvalidRecordError("an event needs a stream and a type")
            current = versions.get(new.stream)
            if current is None:
                current = self.stream_version(conn, workspace, new.stream)
            if new.expected_version is not None and new.expected_version != current:
                raise StaleVersionError(new.stream, new.expected_version, current)
            version = versions[new.stream] = current + 1
            position += 1
            body = canonical(dict(new.payload))
            salt = os.urandom(16).hex()
            event_id = uuid.uuid4().hex
            prov = canonical((new.provenance or Provenance()).to_dict())
            p_hash = payload_digest(salt, body)
            h = chain_hash(prev, event_id=event_id, workspace=workspace, position=position, stream=new.stream,
                           version=version, type=new.type, payload_hash=p_hash, provenance=prov, recorded_at=now)
            event_rows.append(dict(event_id=event_id, workspace=workspace, position=position, stream=new.stream,
                                   version=version, type=new.type, payload_hash=p_hash, provenance=prov,
                                   recorded_at=now, prev_hash=prev, hash=h))
            payload_rows.append(dict(event_id=event_id, workspace=workspace, stream=new.stream, salt=salt, body=body))
            stored.append((event_id, position, new, version, prov, p_hash, prev, h, body))
            prev = h
        ev = self.t.events
        seqs = conn.execute(insert(ev).returning(ev.c.seq, sort_by_parameter_order=True), event_rows).scalars().all()
        conn.execute(insert(self.t.payloads), payload_rows)
        return [StoredEvent(seq, eid, workspace, pos, new.stream, version, new.type, json.loads(body),
                            json.loads(prov), now, p_hash, prev_h, h)
                for seq, (eid, pos, new, version, prov, p_hash, prev_h, h, body) in zip(seqs, stored)]

    def erase_stream(self, conn: Connection, workspace: str, stream: str) -> int:
        """Delete the payload bodies of one stream (allowed by the database only after its
        tombstone was appended); the tombstone keeps its own (content-free) payload.
        Returns how many bodies were deleted."""
        pl, ev = self.t.payloads, self.t.events
        doomed = select(ev.c.event_id).where(ev.c.workspace == workspace, ev.c.stream == stream, ev.c.type != FORGOTTEN)
        return conn.execute(delete(pl).where(and_(pl.c.workspace == workspace, pl.c.event_id.in_(doomed)))).rowcount

    # --- reading ----------------------------------------------------------------------
    def last_event(self, conn: Connection, workspace: str) -> tuple[int, str]:
        """(seq, hash) of the workspace's newest event; (0, GENESIS) while it has none."""
        ev = self.t.events
        row = conn.execute(select(ev.c.seq, ev.c.hash).where(ev.c.workspace == workspace)
                           .order_by(ev.c.position.desc()).limit(1)).first()
        return (row[0], row[1]) if row else (0, GENESIS)

    def last_seq(self, conn: Connection, workspace: str) -> int:
        ev = self.t.events
        return conn.execute(select(func.coalesce(func.max(ev.c.seq), 0)).where(ev.c.workspace == workspace)).scalar_one()

    def workspaces(self, conn: Connection) -> list[str]:
        ev = self.t.events
        return list(conn.execute(select(ev.c.workspace).distinct().order_by(ev.c.workspace)).scalars())

    def read(self, conn: Connection, workspace: str, *, stream: str | None = None, after_seq: int = 0,
             batch: int = 5000) -> Iterator[StoredEvent]:
        """Events of one workspace (optionally one stream) in chain order, with payloads."""
        ev, pl = self.t.events, self.t.payloads
        query = (select(ev.c.seq, ev.c.event_id, ev.c.workspace, ev.c.position, ev.c.stream, ev.c.version, ev.c.type,
                        pl.c.body, pl.c.salt, ev.c.provenance, ev.c.recorded_at, ev.c.payload_hash, ev.c.prev_hash,
                        ev.c.hash)
                 .select_from(ev.outerjoin(pl, pl.c.event_id == ev.c.event_id))
                 .where(ev.c.workspace == workspace, ev.c.seq > after_seq).order_by(ev.c.position))
        if stream is not None:
            query = query.where(ev.c.stream == stream)
        result = conn.execute(query, execution_options={"stream_results": True, "yield_per": batch})
        for row in result:
            yield StoredEvent(row.seq, row.event_id, row.workspace, row.position, row.stream, row.version, row.type,
                              None if row.body is None else json.loads(row.body), json.loads(row.provenance),
                              row.recorded_at, row.payload_hash, row.prev_hash, row.hash)

    def verify(self, conn: Connection, workspace: str, *, anchor: Anchor | None = None) -> ChainReport:
        """Recompute the workspace's chain and every surviving payload hash; with
        ``anchor`` (see ``anchor_of``), also check that event is still in the chain (at
        its sequence, when the anchor has one)."""
        ev, pl = self.t.events, self.t.payloads
        report = ChainReport(workspace)
        tombstoned = set(conn.execute(select(ev.c.stream).where(ev.c.workspace == workspace, ev.c.type == FORGOTTEN)).scalars())
        query = (select(ev, pl.c.body, pl.c.salt).select_from(ev.outerjoin(pl, pl.c.event_id == ev.c.event_id))
                 .where(ev.c.workspace == workspace).order_by(ev.c.position))
        anchor_seq, anchor_hash = anchor if anchor else (None, GENESIS)
        found: str | None = None  # the hash at the anchored seq, or the anchored hash once seen
        prev, expected_position = GENESIS, 1
        for row in conn.execute(query, execution_options={"stream_results": True, "yield_per": 5000}):
            report.events += 1
            where = f"position {row.position} (seq {row.seq}, {row.type})"
            if row.position != expected_position:
                report.problems.append(f"{where}: expected position {expected_position}")
            if row.prev_hash != prev:
                report.problems.append(f"{where}: prev_hash does not link to the previous event")
            recomputed = chain_hash(row.prev_hash, event_id=row.event_id, workspace=row.workspace, position=row.position,
                                    stream=row.stream, version=row.version, type=row.type, payload_hash=row.payload_hash,
                                    provenance=row.provenance, recorded_at=row.recorded_at)
            if recomputed != row.hash:
                report.problems.append(f"{where}: event hash mismatch")
            if row.body is None:
                report.erased_payloads += 1
                if row.stream not in tombstoned:
                    report.problems.append(f"{where}: payload missing without a tombstone")
            elif payload_digest(row.salt, row.body) != row.payload_hash:
                report.problems.append(f"{where}: payload hash mismatch")
            if (row.seq == anchor_seq) if anchor_seq is not None else (row.hash == anchor_hash):
                found = row.hash
            prev, expected_position, report.last_seq = row.hash, row.position + 1, row.seq
        report.head_hash = prev
        if anchor is not None and anchor_hash != GENESIS:  # a genesis anchor (empty workspace) pins nothing
            label = f"anchored head {'' if anchor_seq is None else f'seq {anchor_seq} '}({anchor_hash[:16]})"
            if found is None:
                report.problems.append(f"{label} is no longer in the chain: events were deleted (or it is not of this workspace)")
            elif found != anchor_hash:
                report.problems.append(f"{label}: a different event ({found[:16]}) now holds that sequence")
            report.anchored = found == anchor_hash
        return report
