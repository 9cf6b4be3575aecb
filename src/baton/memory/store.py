"""``MemoryStore``: the one door into memory.

It owns the engine, the journal and the projection, and every method takes the caller's
``WorkspaceScope`` (see ``access.py``). Writes run in one transaction each: read the
current state, decide, append events, update the projection, commit. On SQLite the
transaction is ``BEGIN IMMEDIATE`` (writers queue, readers keep reading the WAL snapshot);
on PostgreSQL a per-workspace advisory lock does the same. Writes of one workspace that
arrive together share a transaction (``group_commit.py``: one savepoint each, in
submission order), so the lock is taken once per group, not once per write. ``remember`` is the write path
of the seed: indexed candidate lookup -> ``find_candidates`` -> ``contradiction_gate`` ->
``apply_verdict``; a supersession appends both events in one transaction.

SQLite is opened with ``secure_delete=ON`` and WAL; ``forget`` checkpoints the WAL
afterwards (``TRUNCATE``), so erased text leaves the database file and its ``-wal``. A
reader holding an older snapshot blocks that checkpoint: ``forget`` retries briefly, and
if a reader still holds on, the store keeps the erasure pending (``erasure_pending``) and
checkpoints again after every later write and on ``close`` until it succeeds. (On PostgreSQL deleted tuples stay
on disk until VACUUM; run ``VACUUM`` on the payload and record tables for physical
erasure.)
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

from sqlalchemy import select
from sqlalchemy.engine import Connection, Engine

from baton.memory import record_events
from baton.memory.access import Authenticator, Principal, TokenAuthenticator, WorkspaceScope
from baton.memory.engine import BUSY_TIMEOUT_MS, make_engine
from baton.memory.errors import InvalidRecordError, RecordNotFoundError, WorkspaceAccessError
from baton.memory.group_commit import GroupCommit
from baton.memory.journal import ChainReport, Journal, NewEvent, StoredEvent, anchor_of
from baton.memory.model import Provenance, Record, RecordDraft, to_epoch
from baton.memory.projection import Projector, from_row, stream_of
from baton.memory.schema import build_tables, install
from baton.memory.writer import CandidateVerdict, WriteResult, judge, remember_in, subject_records
from baton.store_backends import backend_of

T = TypeVar("T")
DEFAULT_URL = "sqlite:///.baton/memory.db"


@dataclass
class RebuildReport:
    workspace: str
    events: int
    records: int
    seconds: float
    differences_before: list[str]


class Tx:
    """One write transaction of one workspace (package-internal)."""

    def __init__(self, store: MemoryStore, conn: Connection, workspace: str, now: float):
        self.store, self.conn, self.workspace, self.now = store, conn, workspace, now
        self.events: list[StoredEvent] = []

    def load(self, record_id: str) -> Record:
        found = self.store.projector.load(self.conn, self.workspace, [record_id])
        if record_id not in found:
            raise RecordNotFoundError(f"no memory record {record_id!r} in this workspace")
        return found[record_id]

    def append(self, events: list[NewEvent], loaded: dict[str, Record] | None = None) -> dict[str, Record]:
        known = {stream_of(rid): rec.version for rid, rec in (loaded or {}).items()}
        known.update({e.stream: 0 for e in events if e.type == "record.created"})
        stored = self.store.journal.append(self.conn, self.workspace, events, now=self.now, known_versions=known)
        self.events.extend(stored)
        return self.store.projector.apply(self.conn, self.workspace, stored, loaded)

    def record_event(self, rec: Record, type: str, payload: dict[str, Any], provenance: Provenance | None = None) -> Record:
        return self.append([NewEvent(stream_of(rec.id), type, payload, rec.version, provenance)], {rec.id: rec})[rec.id]


class MemoryStore:
    """The memory of every workspace in one database (module docstring).

    ``journal`` and ``projector`` are the store's two halves, and ``of`` / ``workspace_of``
    / ``reading`` / ``transact`` / ``epoch`` the primitives the memory cycles
    (``bundle``, ``feedback``, ``lifecycle``, ``transfer``, ``validation``, ``doctrine``)
    are written with: public so those modules use documented names, but part of the memory
    package's own machinery, not of the API an agent or a surface calls.
    """

    def __init__(self, url: str | Engine = DEFAULT_URL, *, authenticator: Authenticator | None = None,
                 prefix: str = "baton_mem_", schema: str | None = None, clock: Callable[[], float] = time.time,
                 create: bool = True):
        self.engine = url if isinstance(url, Engine) else make_engine(url)
        self.tables = build_tables(prefix, schema)
        self.journal = Journal(self.tables)
        self.projector = Projector(self.tables)
        self._auth: Authenticator = authenticator or TokenAuthenticator({})
        self.clock = clock
        self._erasure_pending = False
        self._group = GroupCommit(self._group_transaction)
        if create:  # the write lock (SQLite) or an advisory lock (PostgreSQL): safe when processes start together
            with self.engine.connect().execution_options(baton_write=True) as conn, conn.begin():
                install(conn, self.tables)

    def close(self) -> None:
        if self._erasure_pending:
            self._checkpoint()
        self.engine.dispose()

    @property
    def erasure_pending(self) -> bool:
        """True while erased text may still sit in SQLite's WAL (a reader blocked the
        checkpoint); the next write or ``close`` retries it."""
        return self._erasure_pending

    def _checkpoint(self, retries: tuple[float, ...] = ()) -> bool:
        """Fold the WAL into the database file and truncate it; True when complete."""
        if not backend_of(self.engine).write_ahead_log:
            return True
        for delay in (0.0, *retries):
            time.sleep(delay)
            with self.engine.connect() as conn:  # without the 30 s busy wait: the retries pace it
                conn.exec_driver_sql("PRAGMA busy_timeout=0")
                try:
                    busy, log, done = conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)").one()
                finally:
                    conn.exec_driver_sql(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            if not busy and log == done:
                self._erasure_pending = False
                return True
        self._erasure_pending = True
        return False

    # --- access -----------------------------------------------------------------------
    def open(self, credential: Any) -> WorkspaceScope:
        """Authenticate ``credential`` and return the scope every other method needs."""
        principal = self._auth.authenticate(credential)
        if not isinstance(principal, Principal):
            raise WorkspaceAccessError("the authenticator did not return a Principal")
        return WorkspaceScope.issue(principal, self)

    @staticmethod
    def of(scope: WorkspaceScope) -> MemoryStore:
        """The store that issued ``scope``: how a cycle written as a function of a scope
        reaches its store. ``WorkspaceAccessError`` for anything that is not a scope
        issued by a ``MemoryStore``."""
        issuer = scope.issuer if isinstance(scope, WorkspaceScope) else None
        if not isinstance(issuer, MemoryStore):
            raise WorkspaceAccessError("this scope was not issued by a memory store")
        return issuer

    def workspace_of(self, scope: WorkspaceScope) -> str:
        """The workspace ``scope`` grants, after checking this store issued it."""
        if not isinstance(scope, WorkspaceScope) or scope.issuer is not self:
            raise WorkspaceAccessError("this scope was not issued by this memory store")
        return scope.workspace

    def epoch(self, now: Any = None) -> float:
        """``now`` (None, a datetime or seconds) as epoch seconds on this store's clock."""
        return to_epoch(now, self.clock())

    @contextmanager
    def reading(self, scope: WorkspaceScope) -> Iterator[tuple[Connection, str]]:
        """A read connection (one snapshot on PostgreSQL) and the scope's workspace."""
        workspace = self.workspace_of(scope)
        with self.engine.connect() as conn:
            yield backend_of(conn).snapshot(conn), workspace  # one snapshot per read (a bundle's lock must match its records)

    def transact(self, scope: WorkspaceScope, fn: Callable[[Tx], T], *, now: Any = None) -> T:
        """Run ``fn`` in the next group transaction of the scope's workspace (its lock held;
        ``group_commit.py``): after the writes submitted before it, in a savepoint of its
        own, re-run when a racing writer took the journal position; ``MemoryUnavailableError``
        when the database cannot be written."""
        workspace = self.workspace_of(scope)
        at = self.epoch(now)
        result: T = self._group.run(workspace, lambda conn: fn(Tx(self, conn, workspace, at)))
        if self._erasure_pending:
            self._checkpoint()
        return result

    @contextmanager
    def _group_transaction(self, workspace: str) -> Iterator[Connection]:
        with self.engine.connect().execution_options(baton_write=True) as conn, conn.begin():
            self.journal.lock_workspace(conn, workspace)
            yield conn

    @property
    def write_totals(self) -> dict[str, int]:
        """Group transactions committed, and writes committed / failed with their group."""
        return dict(self._group.totals)

    # --- the write path of the seed ----------------------------------------------------
    def remember(self, scope: WorkspaceScope, draft: RecordDraft, *, now: Any = None,
                 initial: float | None = None) -> WriteResult:
        """Dedup, gate and apply one statement: indexed lookup of active records about the
        same entity -> ``find_candidates`` -> ``contradiction_gate`` -> ``apply_verdict``.
        ``initial`` overrides the kind's initial confidence (promotion carries its own)."""
        draft = draft.validated()
        return self.transact(scope, lambda tx: remember_in(tx, draft, initial=initial), now=now)

    # --- single-record events (what each appends: record_events.py) -------------------
    def corroborate(self, scope: WorkspaceScope, record_id: str, provenance: Provenance, *, now: Any = None) -> Record:
        """Independent evidence for an existing record: +step (capped); a repeat of
        provenance already on the record changes nothing."""
        return self.transact(scope, lambda tx: record_events.corroborate_in(tx, record_id, provenance), now=now)

    def verify_note(self, scope: WorkspaceScope, record_id: str, provenance: Provenance, *, now: Any = None) -> Record:
        """A note verified against data: +0.15 once, exempt from decay from then on."""
        return self.transact(scope, lambda tx: record_events.verify_note_in(tx, record_id, provenance), now=now)

    def adjust_insight(self, scope: WorkspaceScope, record_id: str, how: str, provenance: Provenance | None = None,
                       *, now: Any = None) -> Record:
        """``how``: ``resurfaced`` (+0.05) or ``dismissed`` (-0.2, expiring under 0.15)."""
        if how not in record_events.INSIGHT_STEPS:
            raise InvalidRecordError("adjust_insight takes 'resurfaced' or 'dismissed'")
        return self.transact(scope, lambda tx: record_events.adjust_in(tx, tx.load(record_id), how, provenance), now=now)

    def remember_insight(self, scope: WorkspaceScope, draft: RecordDraft, *, now: Any = None) -> WriteResult:
        """Store an insight, or resurface (+0.05) the active insight already about the
        draft's entity (``action`` ``resurfaced``; ``unchanged``, with no journal event, when
        it is already at the cap: the journal records changes only). Lookup and write share
        one write transaction, so concurrent callers with the same insight make one record."""
        draft = draft.validated()
        if draft.kind != "insight":
            raise InvalidRecordError("remember_insight takes insight drafts")
        return self.transact(scope, lambda tx: record_events.remember_insight_in(tx, draft), now=now)

    def mark_applied(self, scope: WorkspaceScope, record_ids: list[str], *, now: Any = None) -> None:
        """Count a use (a usage statistic; confidence does not move)."""
        self.transact(scope, lambda tx: record_events.mark_applied_in(tx, record_ids), now=now)

    def flag_stale(self, scope: WorkspaceScope, record_id: str, reason: str, *, now: Any = None) -> Record:
        return self.transact(scope, lambda tx: record_events.flag_stale_in(tx, record_id, reason), now=now)

    def set_status(self, scope: WorkspaceScope, record_id: str, status: str, reason: str = "", *, now: Any = None) -> Record:
        """Retire, expire or reinstate (``active``) a record; history keeps every state."""
        if status not in ("active", "retired", "expired", "deactivated"):
            raise InvalidRecordError(f"cannot set status {status!r}")
        return self.transact(scope, lambda tx: record_events.set_status_in(tx, record_id, status, reason), now=now)

    def forget(self, scope: WorkspaceScope, record_id: str, *, reason: str = "", provenance: Provenance | None = None,
               expected_version: int | None = None, now: Any = None) -> int:
        """Erase a record: tombstone in the journal, content gone from the projection and
        from every payload of its stream. Returns the number of payloads erased."""
        erased = self.transact(scope, lambda tx: record_events.forget_in(tx, record_id, reason, provenance, expected_version),
                               now=now)
        self._checkpoint(retries=(0.02, 0.05, 0.1, 0.2, 0.4))
        return erased

    def append_events(self, scope: WorkspaceScope, events: list[NewEvent], *, now: Any = None) -> list[StoredEvent]:
        """Append raw events (feedback, analysis markers) to this workspace's journal.
        Honors ``expected_version`` (``StaleVersionError`` when stale). Record streams are
        reserved to the methods above."""
        if any(e.stream.startswith("record:") for e in events):
            raise InvalidRecordError("record streams are written through the record methods")

        def op(tx: Tx) -> list[StoredEvent]:
            tx.append(list(events))
            return tx.events
        return self.transact(scope, op, now=now)

    # --- reading ----------------------------------------------------------------------
    def get(self, scope: WorkspaceScope, record_id: str) -> Record:
        with self.reading(scope) as (conn, ws):
            found = self.projector.load(conn, ws, [record_id])
        if record_id not in found:
            raise RecordNotFoundError(f"no memory record {record_id!r} in this workspace")
        return found[record_id]

    def list_records(self, scope: WorkspaceScope, *, kind: str | None = None, active_only: bool = True,
                     connection_id: str | None = None, limit: int = 100) -> list[Record]:
        r = self.tables.records
        with self.reading(scope) as (conn, ws):
            q = select(r).where(r.c.workspace == ws)
            if kind:
                q = q.where(r.c.kind == kind)
            if active_only:
                q = q.where(r.c.is_active.is_(True))
            if connection_id is not None:
                q = q.where(r.c.connection_id == connection_id)
            q = q.order_by(r.c.confidence.desc(), r.c.created_at.desc(), r.c.id).limit(limit)
            return [from_row(row) for row in conn.execute(q)]

    def about(self, scope: WorkspaceScope, kind: str, entity: str) -> list[Record]:
        """Active records of ``kind`` about ``entity`` (an indexed lookup, not a scan)."""
        probe = RecordDraft(kind, "lookup", entity=entity, attribute="lookup").validated()
        with self.reading(scope) as (conn, ws):
            return subject_records(conn, self.tables, ws, probe)

    def find_candidates(self, scope: WorkspaceScope, draft: RecordDraft) -> list[CandidateVerdict]:
        """What the gate would see for ``draft``, and its verdicts; writes nothing."""
        draft = draft.validated()
        with self.reading(scope) as (conn, ws):
            return [v for _, v in judge(subject_records(conn, self.tables, ws, draft), draft)]

    def resolve_id(self, scope: WorkspaceScope, prefix: str) -> list[str]:
        """Record ids (live or forgotten) of this workspace starting with ``prefix``."""
        ev = self.tables.events
        if not prefix or not prefix.isalnum():
            return []
        with self.reading(scope) as (conn, ws):
            streams = conn.execute(select(ev.c.stream).where(ev.c.workspace == ws, ev.c.type == "record.created",
                                                             ev.c.stream.like(stream_of(prefix) + "%")).limit(2)).scalars()
            return [s[len(stream_of("")):] for s in streams]

    def history(self, scope: WorkspaceScope, record_id: str) -> list[StoredEvent]:
        with self.reading(scope) as (conn, ws):
            events = list(self.journal.read(conn, ws, stream=stream_of(record_id)))
        if not events:
            raise RecordNotFoundError(f"no memory record {record_id!r} in this workspace")
        return events

    def events(self, scope: WorkspaceScope, *, after_seq: int = 0) -> list[StoredEvent]:
        with self.reading(scope) as (conn, ws):
            return list(self.journal.read(conn, ws, after_seq=after_seq))

    def head_seq(self, scope: WorkspaceScope) -> int:
        with self.reading(scope) as (conn, ws):
            return self.journal.last_seq(conn, ws)

    # --- integrity ----------------------------------------------------------------------
    def verify(self, scope: WorkspaceScope, *, expected_head: Any = None) -> ChainReport:
        """Recompute the hash chain. ``expected_head`` (a saved ``BundleLock`` or its
        ``to_dict()``, ``(seq, hash)``, ``"seq:hash"`` or a hash) anchors it from outside:
        the report fails when that event is no longer in the chain, which is how deletion
        of the newest events shows (the chain alone cannot see it)."""
        anchor = None if expected_head is None else anchor_of(expected_head)
        with self.reading(scope) as (conn, ws):
            return self.journal.verify(conn, ws, anchor=anchor)

    def check_projection(self, scope: WorkspaceScope) -> list[str]:
        """Differences between the live projection and a fold of the journal (empty: equal)."""
        with self.reading(scope) as (conn, ws):
            return self.projector.diff(conn, ws, self.projector.fold(self.journal.read(conn, ws)))

    def rebuild(self, scope: WorkspaceScope, *, compare: bool = True) -> RebuildReport:
        """Recreate the workspace's projection from the journal alone; with ``compare``,
        first record how the live projection differed from the replay (the CLI shows it)."""
        started = time.perf_counter()

        def op(tx: Tx) -> RebuildReport:
            events = 0

            def counted() -> Iterator[StoredEvent]:
                nonlocal events
                for e in self.journal.read(tx.conn, tx.workspace):
                    events += 1
                    yield e
            records = self.projector.fold(counted())
            before = self.projector.diff(tx.conn, tx.workspace, records) if compare else []
            n = self.projector.rebuild(tx.conn, tx.workspace, records)
            return RebuildReport(tx.workspace, events, n, 0.0, before)
        report = self.transact(scope, op)
        report.seconds = time.perf_counter() - started
        return report

    def list_workspaces(self) -> list[str]:
        """Operator API (CLI): the workspaces present in the journal."""
        with self.engine.connect() as conn:
            return self.journal.workspaces(conn)
