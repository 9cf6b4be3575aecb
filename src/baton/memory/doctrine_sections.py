"""Doctrine Markdown split into sections: the unit a doctrine record holds.

A section is a heading and the text under it; text before the first heading is the section
"(preamble)". A section over ``MAX_SECTION_CHARS`` is split at paragraph breaks into
numbered parts (attribute ``slug#2``, ``slug#3``, ...). Decisions:
- A paragraph longer than a part is split at line breaks, and a line longer than a part at
  the last space before the limit (else hard): no text is dropped. (Before, such a paragraph
  was cut at 3,500 characters and the rest silently lost.)
- Headings are parsed without a regular expression: ``#``..``######``, whitespace, text,
  optional closing ``#``s; the old pattern backtracked quadratically on a heading line of a
  million spaces.
- The attribute is the heading's slug, cut at ``MAX_SLUG_CHARS`` (the records' attribute
  column holds 300). The second and later sections with the same slug in one file get
  ``~2``, ``~3``... so two "## Notes" sections are two records; before, they superseded each
  other on every start.
Everything is linear in the file's length.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from baton.memory.model import normalize_key

MAX_SECTION_CHARS = 3500
MAX_SLUG_CHARS = 200
_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")
_NOT_SLUG = re.compile(r"[^\w\s-]")


@dataclass(frozen=True)
class Section:
    path: str
    heading: str
    part: int
    text: str
    occurrence: int = 1  # the n-th section of this file with the same slug

    @property
    def slug(self) -> str:
        return normalize_key(_NOT_SLUG.sub("", self.heading))[:MAX_SLUG_CHARS].strip("-") or "section"

    @property
    def attribute(self) -> str:
        base = self.slug if self.occurrence == 1 else f"{self.slug}~{self.occurrence}"
        return base if self.part == 1 else f"{base}#{self.part}"


def heading_of(line: str) -> str | None:
    """The heading text of an ATX heading line (``"(untitled)"`` when empty), else None."""
    hashes = len(line) - len(line.lstrip("#"))
    if not 1 <= hashes <= 6 or len(line) == hashes or not line[hashes].isspace():
        return None
    return line[hashes:].strip().rstrip("#").rstrip() or "(untitled)"


def split_sections(path: str, markdown: str) -> list[Section]:
    sections: list[Section] = []
    occurrences: dict[str, int] = {}
    heading = "(preamble)"
    lines: list[str] = []

    def flush() -> None:
        body = "\n".join(lines).strip()
        if not body:
            return
        chunks, current = [], ""
        for para in _PARAGRAPH_BREAK.split(body):
            for piece in _pieces(para):
                if current and len(current) + len(piece) + 2 > MAX_SECTION_CHARS:
                    chunks.append(current)
                    current = ""
                current = f"{current}\n\n{piece}" if current else piece
        chunks.append(current)
        chunks = [chunk for chunk in chunks if chunk.strip()]
        probe = Section(path, heading, 1, "")
        n = occurrences[probe.slug] = occurrences.get(probe.slug, 0) + 1
        sections.extend(Section(path, heading, i + 1, chunk, n) for i, chunk in enumerate(chunks))

    for line in markdown.splitlines():
        found = heading_of(line)
        if found is not None:
            flush()
            heading, lines = found, []
        else:
            lines.append(line)
    flush()
    return sections


def _pieces(para: str) -> list[str]:
    """``para`` itself when it fits in a part, else pieces that do (lines kept whole when
    they fit)."""
    if len(para) <= MAX_SECTION_CHARS:
        return [para]
    pieces, current = [], ""
    for line in para.split("\n"):
        while len(line) > MAX_SECTION_CHARS:
            cut = line.rfind(" ", MAX_SECTION_CHARS // 2, MAX_SECTION_CHARS)
            cut = cut if cut > 0 else MAX_SECTION_CHARS
            if current:
                pieces.append(current)
                current = ""
            pieces.append(line[:cut])
            line = line[cut:].lstrip(" ")
        if current and len(current) + len(line) + 1 > MAX_SECTION_CHARS:
            pieces.append(current)
            current = ""
        current = f"{current}\n{line}" if current else line
    if current:
        pieces.append(current)
    return [p for p in pieces if p.strip()]
