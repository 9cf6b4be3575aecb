"""Knowledge that crosses a boundary: sibling connections, the global scope, other
workspaces (seed 002 "Cross-Resource Learning Transfer", "Workspace-scale memory").

- ``sibling_learnings``: learnings of the OTHER connections of the caller's workspace (the
  workspace is the seed's project), only ``schema_gotcha`` and ``performance_hint`` (the
  universally applicable categories), confidence >= 0.6, lessons not already known (the
  caller's ``exclude_hashes`` plus every lesson active on the target connection), at most
  8, most confident first; ``sibling_line`` formats "- [from sibling] {lesson} [NN%]".
- ``global_patterns``: the promoted (``global``-scope) learnings, at most 5;
  ``global_line`` formats "- [global, seen on N DBs] {lesson}".
- ``export_artifact`` / ``import_artifact``: the ONLY way between workspaces. An artifact
  is a plain JSON-able dict: format, version, source workspace, revision (the source
  journal sequence), records, and a sha256 digest over all of it; ``import_artifact``
  refuses anything whose digest or shape is wrong, then feeds each record through the
  target workspace's own gate with ``import`` provenance (so imports corroborate, coexist
  or supersede like any other evidence; they never overwrite).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

from sqlalchemy import select

from baton.memory.access import WorkspaceScope
from baton.memory.errors import ArtifactError, InvalidRecordError
from baton.memory.journal import canonical
from baton.memory.model import GLOBAL_SCOPE, Provenance, Record, RecordDraft, Validity
from baton.memory.projection import from_row
from baton.memory.store import MemoryStore
from baton.memory.writer import WriteResult, remember_in

TRANSFERABLE = ("schema_gotcha", "performance_hint")
TRANSFER_MIN_CONFIDENCE = 0.6
TRANSFER_LIMIT = 8
GLOBAL_LIMIT = 5
ARTIFACT_FORMAT = "baton-memory-artifact"
ARTIFACT_VERSION = 1


def pct(confidence: float) -> int:
    return int(round(confidence * 100))


def sibling_line(rec: Record) -> str:
    return f"- [from sibling] {rec.text} [{pct(rec.confidence)}%]"


def global_line(rec: Record) -> str:
    connections = (rec.data.get("promotion") or {}).get("connections") or []
    return f"- [global, seen on {len(connections)} DBs] {rec.text}"


def sibling_learnings(scope: WorkspaceScope, connection_id: str, exclude_hashes: Iterable[str] = ()) -> list[Record]:
    store = MemoryStore.of(scope)
    r = store.tables.records
    with store.reading(scope) as (conn, ws):
        known = set(exclude_hashes) | set(conn.execute(select(r.c.lesson_hash).where(
            r.c.workspace == ws, r.c.kind == "learning", r.c.is_active.is_(True), r.c.connection_id == connection_id)).scalars())
        rows = conn.execute(select(r).where(
            r.c.workspace == ws, r.c.kind == "learning", r.c.is_active.is_(True), r.c.category.in_(TRANSFERABLE),
            r.c.confidence >= TRANSFER_MIN_CONFIDENCE, r.c.connection_id.is_not(None), r.c.connection_id != connection_id,
            r.c.scope != GLOBAL_SCOPE).order_by(r.c.confidence.desc(), r.c.id).limit(TRANSFER_LIMIT * 8))
        out: list[Record] = []
        for rec in map(from_row, rows):
            if rec.lesson_hash not in known:
                known.add(rec.lesson_hash)
                out.append(rec)
            if len(out) == TRANSFER_LIMIT:
                break
        return out


def global_patterns(scope: WorkspaceScope, exclude_hashes: Iterable[str] = ()) -> list[Record]:
    store = MemoryStore.of(scope)
    r = store.tables.records
    excluded = set(exclude_hashes)
    with store.reading(scope) as (conn, ws):
        rows = conn.execute(select(r).where(r.c.workspace == ws, r.c.kind == "learning", r.c.is_active.is_(True),
                                            r.c.scope == GLOBAL_SCOPE).order_by(r.c.confidence.desc(), r.c.id))
        return [rec for rec in map(from_row, rows) if rec.lesson_hash not in excluded][:GLOBAL_LIMIT]


# --- workspace-to-workspace artifacts ---------------------------------------------------------

_EXPORTED = ("kind", "text", "entity", "attribute", "scope", "value", "category", "connection_id", "confidence",
             "observed_at", "volatile", "freshness_s", "data")


def _digest(body: dict[str, Any]) -> str:
    return hashlib.sha256(canonical(body).encode()).hexdigest()


def export_artifact(scope: WorkspaceScope, *, kinds: Iterable[str] = ("learning", "note", "benchmark", "insight"),
                    min_confidence: float = 0.0, record_ids: Iterable[str] | None = None) -> dict[str, Any]:
    """A revisioned, digest-sealed copy of active records, for ``import_artifact`` elsewhere."""
    store = MemoryStore.of(scope)
    r = store.tables.records
    with store.reading(scope) as (conn, ws):
        revision = store.journal.last_seq(conn, ws)
        q = select(r).where(r.c.workspace == ws, r.c.is_active.is_(True), r.c.kind.in_(list(kinds)),
                            r.c.confidence >= min_confidence).order_by(r.c.id)
        if record_ids is not None:
            q = q.where(r.c.id.in_(list(record_ids)))
        records = [from_row(row) for row in conn.execute(q)]
    body = {"format": ARTIFACT_FORMAT, "version": ARTIFACT_VERSION, "source_workspace": ws, "revision": revision,
            "exported_at": store.clock(),
            "records": [{"source_id": rec.id, "content_hash": rec.content_hash, **{k: getattr(rec, k) for k in _EXPORTED}}
                        for rec in records]}
    return {**body, "digest": _digest(body)}


def import_artifact(scope: WorkspaceScope, artifact: dict[str, Any], *, now: Any = None) -> list[WriteResult]:
    """Feed an artifact's records through this workspace's gate, all in one transaction."""
    if not isinstance(artifact, dict) or artifact.get("format") != ARTIFACT_FORMAT:
        raise ArtifactError("not a baton memory artifact")
    if artifact.get("version") != ARTIFACT_VERSION:
        raise ArtifactError(f"unsupported artifact version {artifact.get('version')!r}")
    body = {k: v for k, v in artifact.items() if k != "digest"}
    if _digest(body) != artifact.get("digest"):
        raise ArtifactError("artifact digest does not match its content (altered or truncated)")
    drafts = []
    for item in artifact.get("records", []):
        try:
            drafts.append(RecordDraft(
                item["kind"], item["text"], entity=item["entity"], attribute=item["attribute"], scope=item["scope"],
                value=item["value"], category=item["category"], connection_id=item["connection_id"],
                validity=Validity(item["observed_at"], bool(item["volatile"]), item["freshness_s"]),
                provenance=Provenance("import", outcome_id=f"artifact:{artifact['digest'][:16]}:{item['source_id']}"),
                data={**item["data"], "imported_from": {"workspace": artifact["source_workspace"],
                                                        "revision": artifact["revision"], "record": item["source_id"]}},
            ).validated())
        except (KeyError, TypeError, InvalidRecordError) as exc:
            raise ArtifactError(f"malformed artifact record: {exc}") from None
    store = MemoryStore.of(scope)
    return store.transact(scope, lambda tx: [remember_in(tx, d) for d in drafts], now=now)
