"""Doctrine: the operator's Markdown (metric definitions, business rules), indexed into
memory and always eligible for the bundle.

The operator keeps a folder of ``*.md`` files versioned with the workspace's
configuration; ``index_doctrine(scope, folder)`` mirrors it into ``doctrine`` records, one
per section (``doctrine_sections``). Each section is a statement about entity
``doctrine:<relative path>``, attribute ``<heading slug>[~n][#part]``, whose value is the
hash of its text, so:
- an unchanged section re-indexed is self-repetition: nothing is written;
- an edited section contradicts its previous version: one atomic supersession, history kept;
- a removed section (or file) is retired (status ``retired``), never deleted.
Indexing is idempotent and writes in one transaction.

**What is read.** The folder is walked under ``baton.files``' rules, the same as the
knowledge loader's: only regular ``*.md`` files whose real path is inside the folder; links
out (``/proc/self/environ``, ``/etc/passwd``, a sibling folder), FIFOs, sockets, devices,
hidden files and folders (``.git/``), files over ``DOCTRINE_LIMITS`` (8 MB each, 64 MB in
all, 10,000 files, 32 folders deep), names with control characters and files that are not
UTF-8 are skipped, never read, and listed in ``DoctrineReport.skipped`` with a typed
``SkipReason``; ``index_doctrine`` logs each (warning; debug for hidden/excluded), so
callers need not. A path whose entity would not fit the records' column (300 characters)
or that spells the same entity as another file (``A.md`` and ``a.md``) is ``bad_name``.
Decision: a file that is skipped counts as absent, so sections it held before are retired
(a rules file replaced by a link to ``/etc/passwd`` must not keep its stale rules in every
prompt, silently). The folder itself missing or not a folder is ``InvalidRecordError``.

**Cost.** Linear in the number of sections: one query for the workspace's active doctrine
(ids, keys and values, no text), the contradiction gate run per section against the one
record with the same entity and attribute (doctrine needs no fuzzy candidate search:
structure decides), one batched append for every event and one projection update. Before,
every section queried its file's records and compared its text with each of them
(``SequenceMatcher``): quadratic, 60 s for 400 sections in one file. (Doctrine is
confidence 1.0 with no corroboration step, so a same-value record with other provenance
is simply unchanged, not corroborated.)

**Incremental.** ``doctrine_manifest`` keeps each file's size, mtime, ctime, content hash and
section digests in memory's journal. A start reads only files whose fingerprint changed
(or whose records no longer match the manifest); with nothing changed it reads no file
and writes nothing. Files are read before the write transaction opens; inside it the
state is read again, and a file that a concurrent indexer made stale meanwhile is read then.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Connection

from baton.files import FileEntry, FileRefusedError, FolderLimits, Skipped, SkipReason, decode_utf8, read_file, walk_folder
from baton.memory.access import WorkspaceScope
from baton.memory.doctrine_manifest import FileState, Manifest, load_manifest
from baton.memory.doctrine_sections import MAX_SECTION_CHARS, Section, split_sections
from baton.memory.errors import InvalidRecordError
from baton.memory.gate import Verdict, contradiction_gate
from baton.memory.journal import NewEvent
from baton.memory.model import FIELD_LIMITS, Provenance, RecordDraft, normalize_key
from baton.memory.projection import record_payload, stream_of
from baton.memory.schema import Tables
from baton.memory.store import MemoryStore
from baton.memory.writer import new_record

__all__ = ["DOCTRINE_LIMITS", "DoctrineReport", "MAX_SECTION_CHARS", "Reader", "Section", "index_doctrine",
           "read_folder", "split_sections"]

log = logging.getLogger(__name__)
DOCTRINE_LIMITS = FolderLimits(max_file_bytes=8 * 1024 * 1024, max_total_bytes=64 * 1024 * 1024, max_files=10_000,
                               max_depth=32)
Reader = Callable[..., tuple[bytes, os.stat_result]]  # read_file's signature: (root, relative, *, max_bytes)


@dataclass
class DoctrineReport:
    added: list[str] = field(default_factory=list)  # record ids
    updated: list[str] = field(default_factory=list)
    retired: list[str] = field(default_factory=list)
    unchanged: int = 0  # sections
    skipped: list[Skipped] = field(default_factory=list)  # files and folders not read, with typed reasons
    read: list[str] = field(default_factory=list)  # files whose contents were read this time
    files: int = 0  # files indexed (read now or unchanged)

    @property
    def refused(self) -> list[Skipped]:
        """The skips worth a warning (everything but hidden and excluded folders)."""
        return [s for s in self.skipped if not s.reason.quiet]


@dataclass(frozen=True)
class _Parsed:
    fingerprint: tuple[int, int, int]
    sha256: str
    drafts: tuple[RecordDraft, ...]


@dataclass(frozen=True)
class _Active:
    """The columns of an active doctrine record the decisions need (no text)."""

    id: str
    entity: str
    attribute: str
    scope: str
    value: Any


def entity_of(relative: str) -> str:
    return normalize_key(f"doctrine:{relative}")


def index_doctrine(scope: WorkspaceScope, folder: str | Path, *, now: Any = None,
                   limits: FolderLimits = DOCTRINE_LIMITS, reader: Reader = read_file) -> DoctrineReport:
    """Mirror ``folder`` into the workspace's doctrine records (see the module docstring).
    ``reader`` reads one file (``baton.files.read_file`` by default; tests count calls)."""
    store = MemoryStore.of(scope)
    try:
        listing = walk_folder(folder, accept=lambda name: name.endswith(".md"), limits=limits)
    except FileRefusedError as exc:
        raise InvalidRecordError(f"doctrine folder {str(folder)!r} {exc.detail}") from exc
    skipped = list(listing.skipped)
    files = _named(listing.files, skipped)
    root = str(listing.root)
    contents: dict[str, _Parsed | FileRefusedError] = {}
    refused_at: dict[str, tuple[int, int, int]] = {}  # read, then refused for its content (not UTF-8, binary)

    def parse(entry: FileEntry) -> _Parsed | FileRefusedError:
        if entry.relative not in contents:
            try:
                raw, info = reader(listing.root, entry.relative, max_bytes=limits.max_file_bytes)
            except FileRefusedError as exc:
                contents[entry.relative] = exc
                return exc
            fingerprint = (info.st_size, info.st_mtime_ns, info.st_ctime_ns)
            try:
                text = decode_utf8(raw, entry.relative)
            except FileRefusedError as exc:
                contents[entry.relative], refused_at[entry.relative] = exc, fingerprint
                return exc
            drafts = tuple(_draft(sec) for sec in split_sections(entry.relative, text))
            contents[entry.relative] = _Parsed(fingerprint, hashlib.sha256(raw).hexdigest(), drafts)
        return contents[entry.relative]

    with store.reading(scope) as (conn, ws):  # read what changed before taking the write lock
        manifest, active = load_manifest(conn, store.tables, ws), _active(conn, store.tables, ws)
    values = _values_by_entity(active)
    for entry in files:
        if _stale(entry, manifest, root, values):
            parse(entry)

    def op(tx: Any) -> DoctrineReport:
        manifest, active = load_manifest(tx.conn, store.tables, tx.workspace), _active(tx.conn, store.tables, tx.workspace)
        report = DoctrineReport(skipped=list(skipped))
        values = _values_by_entity(active)
        by_key: dict[tuple[str, str], list[_Active]] = {}
        for rec in active:
            by_key.setdefault((rec.entity, rec.attribute), []).append(rec)
        kept: set[str] = set()
        new_files: dict[str, FileState] = {}
        superseding: list[tuple[RecordDraft, list[_Active], str | None]] = []  # (draft, old ones, kept record id)
        created: list[RecordDraft] = []
        refused_entities: dict[str, str] = {}
        for entry in files:
            entity = entity_of(entry.relative)
            if entry.relative not in contents and not _stale(entry, manifest, root, values):
                state = manifest.files[entry.relative]
                new_files[entry.relative] = state
                if state.refused:  # refused before and unchanged since: reported again, not read again
                    report.skipped.append(Skipped(entry.relative, SkipReason(state.refused), state.detail))
                    refused_entities[entity] = state.refused
                    continue
                kept.update(rec.id for a in state.sections for rec in by_key.get((entity, a), []))
                report.unchanged += len(state.sections)
                report.files += 1
                continue
            parsed = parse(entry)
            if isinstance(parsed, FileRefusedError):
                report.skipped.append(parsed.skipped())
                refused_entities[entity] = parsed.reason.value
                if entry.relative in refused_at:
                    new_files[entry.relative] = FileState(refused_at[entry.relative], "", {}, parsed.reason.value,
                                                          parsed.detail)
                continue
            report.read.append(entry.relative)
            report.files += 1
            new_files[entry.relative] = FileState(parsed.fingerprint, parsed.sha256,
                                                  {d.attribute: d.value for d in parsed.drafts})
            for draft in parsed.drafts:
                verdicts = [(old, contradiction_gate(old, draft)) for old in by_key.get((draft.entity, draft.attribute), [])]
                same = [old for old, v in verdicts if v is Verdict.CORROBORATES]
                stale = [old for old, v in verdicts if v is Verdict.CONTRADICTS]
                kept.update(old.id for old, v in verdicts if v is not Verdict.CONTRADICTS)
                if same:
                    report.unchanged += 1
                if stale:  # edited; or, next to a matching record, a duplicate an older version left
                    superseding.append((draft, stale, same[0].id if same else None))
                elif not same:
                    created.append(draft)
        replaced = {old.id for _, olds, _ in superseding for old in olds}
        gone = [rec for rec in active if rec.id not in kept and rec.id not in replaced]
        events, loaded = _events(tx, superseding, created, gone, refused_entities, report)
        marker = manifest.event(new_files, root)
        if marker is not None:
            events.append(marker)
        if events:
            tx.append(events, loaded)
        return report

    report = store.transact(scope, op, now=now)
    for item in report.skipped:
        (log.debug if item.reason.quiet else log.warning)("doctrine %s skipped (%s): %s", item.path, item.reason.value,
                                                          item.detail)
    return report


def read_folder(folder: str | Path, *, limits: FolderLimits = DOCTRINE_LIMITS) -> list[Section]:
    """Every section of the folder's Markdown, read under the same rules (skips dropped)."""
    try:
        listing = walk_folder(folder, accept=lambda name: name.endswith(".md"), limits=limits)
    except FileRefusedError as exc:
        raise InvalidRecordError(f"doctrine folder {str(folder)!r} {exc.detail}") from exc
    sections: list[Section] = []
    for entry in _named(listing.files, []):
        try:
            raw, _ = read_file(listing.root, entry.relative, max_bytes=limits.max_file_bytes)
            sections.extend(split_sections(entry.relative, decode_utf8(raw, entry.relative)))
        except FileRefusedError:
            continue
    return sections


def _draft(sec: Section) -> RecordDraft:
    digest = hashlib.sha256(sec.text.encode()).hexdigest()[:16]
    return RecordDraft("doctrine", sec.text, entity=f"doctrine:{sec.path}", attribute=sec.attribute, value=digest,
                       category="doctrine",
                       provenance=Provenance("doctrine", outcome_id=f"doctrine:{sec.path}:{sec.attribute}:{digest}"),
                       data={"path": sec.path, "heading": sec.heading, "part": sec.part}).validated()


def _named(entries: list[FileEntry], skipped: list[Skipped]) -> list[FileEntry]:
    """Files whose entity fits the column and is not another file's (``A.md``/``a.md``)."""
    out: list[FileEntry] = []
    owners: dict[str, str] = {}  # doctrine entity -> the file that names it
    for entry in entries:
        entity = entity_of(entry.relative)
        if len(entity) > FIELD_LIMITS["entity"]:
            skipped.append(Skipped(entry.relative, SkipReason.BAD_NAME,
                                   f"a path over {FIELD_LIMITS['entity'] - len('doctrine:')} characters; not read"))
        elif entity in owners:
            skipped.append(Skipped(entry.relative, SkipReason.BAD_NAME,
                                   f"names the same doctrine entity as {owners[entity]}; not read"))
        else:
            owners[entity] = entry.relative
            out.append(entry)
    return out


def _active(conn: Connection, tables: Tables, workspace: str) -> list[_Active]:
    r = tables.records
    rows = conn.execute(select(r.c.id, r.c.entity, r.c.attribute, r.c.scope, r.c.value)
                        .where(r.c.workspace == workspace, r.c.kind == "doctrine", r.c.is_active.is_(True)))
    return [_Active(row.id, row.entity, row.attribute, row.scope, row.value) for row in rows]


def _values_by_entity(active: list[_Active]) -> dict[str, dict[str, list[Any]]]:
    out: dict[str, dict[str, list[Any]]] = {}
    for rec in active:
        out.setdefault(rec.entity, {}).setdefault(rec.attribute, []).append(rec.value)
    return out


def _stale(entry: FileEntry, manifest: Manifest, root: str, values: dict[str, dict[str, list[Any]]]) -> bool:
    """Whether ``entry`` must be read: new, changed, or its records differ from the manifest."""
    state = manifest.files.get(entry.relative) if manifest.root == root else None
    if state is None or state.fingerprint != entry.fingerprint:
        return True
    have = values.get(entity_of(entry.relative), {})
    return have != {attribute: [value] for attribute, value in state.sections.items()}


def _events(tx: Any, superseding: list[tuple[RecordDraft, list[_Active], str | None]], created: list[RecordDraft],
            gone: list[_Active], refused: dict[str, str], report: DoctrineReport) -> tuple[list[NewEvent], dict[str, Any]]:
    """The events of one index run, and the current state of every record they touch."""
    touched = [old.id for _, olds, _ in superseding for old in olds] + [rec.id for rec in gone]
    loaded = tx.store.projector.load(tx.conn, tx.workspace, touched) if touched else {}
    events: list[NewEvent] = []
    for draft, olds, kept_id in superseding:
        target = None if kept_id else new_record(tx, draft, supersedes=[old.id for old in olds])
        by_id = target.id if target is not None else kept_id
        events.extend(NewEvent(stream_of(old.id), "record.superseded", {"by": by_id}, loaded[old.id].version,
                               draft.provenance) for old in olds)
        if target is not None:
            events.append(NewEvent(stream_of(target.id), "record.created", {"record": record_payload(target)}, 0,
                                   draft.provenance))
            report.updated.append(target.id)
    for draft in created:
        new = new_record(tx, draft)
        events.append(NewEvent(stream_of(new.id), "record.created", {"record": record_payload(new)}, 0, draft.provenance))
        report.added.append(new.id)
    for rec in gone:
        reason = f"skipped from doctrine ({refused[rec.entity]})" if rec.entity in refused else "removed from doctrine"
        events.append(NewEvent(stream_of(rec.id), "record.status", {"status": "retired", "reason": reason},
                               loaded[rec.id].version))
        report.retired.append(rec.id)
    return events, loaded
