"""Markdown and plain-text chunking.

Markdown is split by ATX (``## Title``) and Setext (underlined) headings, ignoring
``#`` lines inside fenced code blocks; YAML front matter is dropped from the text and its
``title:`` becomes the document title. Plain text is split by paragraphs only.
"""

from __future__ import annotations

import re

from baton.specialists.knowledge.chunks import Chunk, ChunkingOptions, Document, Section, make_chunks
from baton.specialists.knowledge.sections import SectionBuilder

_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_FRONT_TITLE = re.compile(r"^title:\s*(.+?)\s*$", re.IGNORECASE)


def markdown_title(text: str, fallback: str) -> str:
    """The front-matter title, else the first H1, else ``fallback``."""
    lines = text.splitlines()
    front_end = _front_matter_end(lines)
    for line in lines[1:front_end]:
        match = _FRONT_TITLE.match(line)
        if match:
            return match.group(1).strip("\"'")
    in_fence = False
    for line in lines[front_end:]:
        if _FENCE.match(line):
            in_fence = not in_fence
        elif not in_fence:
            match = _ATX.match(line)
            if match and len(match.group(1)) == 1 and match.group(2):
                return match.group(2).strip()
    return fallback


def chunk_markdown(document: Document, options: ChunkingOptions) -> list[Chunk]:
    lines = document.text.splitlines()
    builder = SectionBuilder(document.title)
    fence: str | None = None
    previous_blank = True
    for index in range(_front_matter_end(lines), len(lines)):
        line, number = lines[index], index + 1
        fence_match = _FENCE.match(line)
        if fence is not None:
            if fence_match and fence_match.group(1)[0] == fence[0] and len(fence_match.group(1)) >= len(fence):
                fence = None
            builder.line(number, line)
            previous_blank = False
            continue
        if fence_match:
            fence = fence_match.group(1)
            builder.line(number, line)
            previous_blank = False
            continue
        atx = _ATX.match(line)
        if atx:
            builder.heading(len(atx.group(1)), atx.group(2) or "", number, line)
            previous_blank = False
            continue
        setext = _SETEXT.match(line)
        if setext and not previous_blank and index > 0 and _is_single_line_paragraph(lines, index - 1):
            taken = builder.pop_last_line()
            if taken is not None:
                level = 1 if setext.group(1).startswith("=") else 2
                builder.heading(level, taken[1], taken[0], taken[1] + "\n" + line)
                previous_blank = False
                continue
        builder.line(number, line)
        previous_blank = not line.strip()
    return make_chunks(document.source, document.format, builder.finish(), options)


def chunk_plain_text(document: Document, options: ChunkingOptions) -> list[Chunk]:
    lines = [(i + 1, line) for i, line in enumerate(document.text.splitlines())]
    path = (document.title,) if document.title else ()
    return make_chunks(document.source, document.format, [Section(path, lines)], options)


def _front_matter_end(lines: list[str]) -> int:
    """Index of the first line after a leading ``---`` YAML block (0 when there is none)."""
    if not lines or lines[0].strip() != "---":
        return 0
    for index in range(1, min(len(lines), 200)):
        if lines[index].strip() in ("---", "..."):
            return index + 1
    return 0


def _is_single_line_paragraph(lines: list[str], index: int) -> bool:
    if not lines[index].strip() or _ATX.match(lines[index]) or _FENCE.match(lines[index]):
        return False
    return index == 0 or not lines[index - 1].strip()
