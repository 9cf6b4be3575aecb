"""Doctrine: the operator's Markdown (metric definitions, business rules), indexed into
memory and always eligible for the bundle.

The operator keeps a folder of ``*.md`` files versioned with the workspace's
configuration; ``index_doctrine(scope, folder)`` mirrors it into ``doctrine`` records, one
per section (a heading and the text under it; text before the first heading is the
section "(preamble)"; a section over ~3,500 characters is split at paragraph breaks into
numbered parts). Each section is a statement about entity ``doctrine:<relative path>``,
attribute ``<heading slug>[#part]``, whose value is the hash of its text, so:
- an unchanged section re-indexed is self-repetition: nothing is written;
- an edited section contradicts its previous version: one atomic supersession, history kept;
- a removed section (or file) is retired (status ``retired``), never deleted.
Indexing is idempotent and runs in one transaction.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import select

from baton.memory.access import WorkspaceScope
from baton.memory.errors import InvalidRecordError
from baton.memory.journal import NewEvent
from baton.memory.model import Provenance, RecordDraft, normalize_key
from baton.memory.projection import from_row, stream_of
from baton.memory.writer import remember_in

MAX_SECTION_CHARS = 3500
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


@dataclass
class DoctrineReport:
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    retired: list[str] = field(default_factory=list)
    unchanged: int = 0


@dataclass(frozen=True)
class Section:
    path: str
    heading: str
    part: int
    text: str

    @property
    def attribute(self) -> str:
        slug = normalize_key(re.sub(r"[^\w\s-]", "", self.heading)) or "section"
        return slug if self.part == 1 else f"{slug}#{self.part}"


def split_sections(path: str, markdown: str) -> list[Section]:
    sections: list[Section] = []
    heading, lines = "(preamble)", []

    def flush() -> None:
        body = "\n".join(lines).strip()
        if not body:
            return
        chunks, current = [], ""
        for para in re.split(r"\n\s*\n", body):
            if current and len(current) + len(para) + 2 > MAX_SECTION_CHARS:
                chunks.append(current)
                current = ""
            current = f"{current}\n\n{para}" if current else para[:MAX_SECTION_CHARS]
        chunks.append(current)
        sections.extend(Section(path, heading, i + 1, chunk) for i, chunk in enumerate(chunks))

    for line in markdown.splitlines():
        match = _HEADING.match(line)
        if match:
            flush()
            heading, lines = match.group(2) or "(untitled)", []
        else:
            lines.append(line)
    flush()
    return sections


def read_folder(folder: str | Path) -> list[Section]:
    root = Path(folder)
    if not root.is_dir():
        raise InvalidRecordError(f"doctrine folder {str(root)!r} does not exist")
    sections: list[Section] = []
    for file in sorted(root.rglob("*.md")):
        sections.extend(split_sections(file.relative_to(root).as_posix(), file.read_text(encoding="utf-8")))
    return sections


def index_doctrine(scope: WorkspaceScope, folder: str | Path, *, now: Any = None) -> DoctrineReport:
    store = scope._issuer
    store._ws(scope)
    sections = read_folder(folder)
    r = store.tables.records
    report = DoctrineReport()

    def op(tx: Any) -> DoctrineReport:
        seen: set[tuple[str, str]] = set()
        for sec in sections:
            digest = hashlib.sha256(sec.text.encode()).hexdigest()[:16]
            draft = RecordDraft("doctrine", sec.text, entity=f"doctrine:{sec.path}", attribute=sec.attribute,
                                value=digest, category="doctrine",
                                provenance=Provenance("doctrine", outcome_id=f"doctrine:{sec.path}:{sec.attribute}:{digest}"),
                                data={"path": sec.path, "heading": sec.heading, "part": sec.part}).validated()
            seen.add((draft.entity, draft.attribute))
            result = remember_in(tx, draft)
            if result.action == "created":
                report.added.append(result.record.id)
            elif result.action == "superseded":
                report.updated.append(result.record.id)
            else:
                report.unchanged += 1
        active = [from_row(row) for row in tx.conn.execute(
            select(r).where(r.c.workspace == tx.workspace, r.c.kind == "doctrine", r.c.is_active.is_(True)))]
        gone = [rec for rec in active if (rec.entity, rec.attribute) not in seen]
        if gone:
            tx.append([NewEvent(stream_of(rec.id), "record.status", {"status": "retired", "reason": "removed from doctrine"},
                                rec.version) for rec in gone], {rec.id: rec for rec in gone})
            report.retired.extend(rec.id for rec in gone)
        return report

    return store._write(scope, op, now=now)
