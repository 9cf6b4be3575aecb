"""What doctrine indexing remembers between starts, so unchanged files are not read again.

Decision: the manifest lives in memory's own journal, as a ``doctrine.manifest`` event in
the workspace's stream ``doctrine:manifest`` (not a record stream: the projection ignores
it), appended in the same transaction as the record events it describes. So it is exactly
as durable and as shared as the doctrine records (SQLite or PostgreSQL, one replica or
many), needs no new table or sidecar file, and can never disagree with the records after a
crash. Only paths and numbers are in it, never text. It is written only when something
changed, so a start with nothing changed writes nothing.

Per file (keyed by its path relative to the folder): ``size``, ``mtime_ns``, ``ctime_ns``
(the fingerprint a start compares without reading), the SHA-256 of the bytes read, and the
file's sections as ``{attribute: value digest}``; a file refused for its content (not
UTF-8, binary) is kept with its reason, so it is reported again without being read again
until it changes. The folder's real path is kept too: a
manifest of another folder is not trusted.

A file is read again when its fingerprint changed, when the manifest comes from another
folder, or when the active doctrine records of its entity no longer match the sections the
manifest lists (a record forgotten, retired by hand or rebuilt differently): the folder
stays the source of truth, as before the manifest existed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Connection

from baton.files import SkipReason
from baton.memory.journal import NewEvent
from baton.memory.schema import Tables

MANIFEST_STREAM = "doctrine:manifest"
MANIFEST_EVENT = "doctrine.manifest"


@dataclass(frozen=True)
class FileState:
    fingerprint: tuple[int, int, int]  # size, mtime_ns, ctime_ns
    sha256: str
    sections: dict[str, str]  # attribute -> value digest
    refused: str | None = None  # a SkipReason value, for a file refused for its content (not UTF-8, binary)
    detail: str = ""

    def to_json(self) -> list[Any]:
        tail = [self.refused, self.detail] if self.refused else []
        return [*self.fingerprint, self.sha256, self.sections, *tail]

    @classmethod
    def from_json(cls, raw: list[Any]) -> FileState:
        size, mtime_ns, ctime_ns, sha, sections, *tail = raw
        refused, detail = (SkipReason(tail[0]).value, str(tail[1])) if len(tail) == 2 else (None, "")
        return cls((int(size), int(mtime_ns), int(ctime_ns)), str(sha), {str(k): str(v) for k, v in sections.items()},
                   refused, detail)


@dataclass
class Manifest:
    root: str = ""
    files: dict[str, FileState] = field(default_factory=dict)
    version: int = 0  # the stream version it was read at (0: none yet)

    def payload(self) -> dict[str, Any]:
        return {"format": 1, "root": self.root, "files": {path: state.to_json() for path, state in sorted(self.files.items())}}

    def event(self, new_files: dict[str, FileState], root: str) -> NewEvent | None:
        """The event that records ``new_files`` (None when nothing changed)."""
        if root == self.root and new_files == self.files:
            return None
        return NewEvent(MANIFEST_STREAM, MANIFEST_EVENT, Manifest(root, new_files).payload(), self.version)


def load_manifest(conn: Connection, tables: Tables, workspace: str) -> Manifest:
    """The workspace's latest manifest (one indexed lookup); an empty one when there is none
    or when it cannot be read (erased, or from an unknown format): then every file is read."""
    ev, pl = tables.events, tables.payloads
    row = conn.execute(
        select(ev.c.version, pl.c.body).select_from(ev.outerjoin(pl, pl.c.event_id == ev.c.event_id))
        .where(ev.c.workspace == workspace, ev.c.stream == MANIFEST_STREAM).order_by(ev.c.version.desc()).limit(1)
    ).first()
    if row is None:
        return Manifest()
    try:
        body = json.loads(row.body) if row.body is not None else {}
        if body.get("format") != 1:
            return Manifest(version=row.version)
        files = {str(path): FileState.from_json(raw) for path, raw in body["files"].items()}
        return Manifest(str(body["root"]), files, row.version)
    except (ValueError, KeyError, TypeError, AttributeError):
        return Manifest(version=row.version)
