"""Documents, chunks, and the size-bounded packing every format's chunker shares.

A chunk is the unit of retrieval and citation. Its id is stable and readable —
``"<source>#<ordinal>-<hash8>"`` — so a citation names the file and the piece, and the id
changes exactly when the chunk's position or content does. ``content_hash`` covers what is
embedded (heading path + text): vectors are keyed by it, so re-indexing a file whose
chunks did not change embeds nothing again.

Decision (the issue is silent on overlap): chunks do not overlap. They break at paragraph
boundaries (then lines, then whitespace for a giant line), and every chunk carries its
heading path, so a section split in two still says where each half belongs. Overlap would
make the same sentence cite two chunks and skew recall numbers.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class ChunkingOptions:
    """``max_chars`` bounds a chunk's text; ``min_chars`` lets a tiny trailing piece join its
    predecessor (when the result still fits in ``max_chars * 1.25``)."""

    max_chars: int = 1200
    min_chars: int = 80

    def __post_init__(self) -> None:
        if self.max_chars < 50:
            raise ValueError("max_chars must be at least 50")
        if not 0 <= self.min_chars < self.max_chars:
            raise ValueError("min_chars must be >= 0 and below max_chars")


@dataclass(frozen=True, slots=True)
class Document:
    """A loaded document before chunking. ``source`` is how citations name it (a path
    relative to the indexed root, or any label). ``pages`` is set for PDFs (one text per
    page)."""

    source: str
    text: str
    format: str
    title: str = ""
    pages: tuple[str, ...] | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)

    @property
    def content_hash(self) -> str:
        return text_hash(self.format + "\0" + self.text)


@dataclass(frozen=True, slots=True)
class Chunk:
    """One retrievable piece of a document. Lines are 1-based and inclusive, counted in the
    document's text (for PDFs, in the page's extracted text; ``metadata["page"]`` says
    which page)."""

    id: str
    source: str
    ordinal: int
    heading_path: tuple[str, ...]
    start_line: int
    end_line: int
    text: str
    content_hash: str
    format: str
    metadata: Mapping[str, Any] = field(default_factory=dict)

    @property
    def title(self) -> str:
        """The heading path joined with " > " (empty for unstructured text)."""
        return " > ".join(self.heading_path)

    @property
    def embed_text(self) -> str:
        """What an embedding model sees: the heading path, then the text."""
        return f"{self.title}\n\n{self.text}" if self.heading_path else self.text


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(slots=True)
class Section:
    """A run of lines under one heading path, before size-splitting."""

    heading_path: tuple[str, ...]
    lines: list[tuple[int, str]]  # (1-based line number, text)
    metadata: dict[str, Any] = field(default_factory=dict)


def make_chunks(source: str, fmt: str, sections: Iterable[Section], options: ChunkingOptions) -> list[Chunk]:
    """Split each section into size-bounded pieces and number them across the document."""
    chunks: list[Chunk] = []
    for section in sections:
        for start, end, text in pack_lines(section.lines, options):
            heading_path = section.heading_path
            content_hash = text_hash(" > ".join(heading_path) + "\n\n" + text)
            ordinal = len(chunks)
            chunks.append(
                Chunk(
                    id=f"{source}#{ordinal}-{content_hash[:8]}",
                    source=source,
                    ordinal=ordinal,
                    heading_path=heading_path,
                    start_line=start,
                    end_line=end,
                    text=text,
                    content_hash=content_hash,
                    format=fmt,
                    metadata=dict(section.metadata),
                )
            )
    return chunks


def pack_lines(lines: Sequence[tuple[int, str]], options: ChunkingOptions) -> list[tuple[int, int, str]]:
    """Pack numbered lines into ``(start_line, end_line, text)`` pieces of at most
    ``options.max_chars``, breaking preferably between paragraphs, then between lines, and
    splitting only a single over-long line inside itself."""
    pieces: list[tuple[int, int, str]] = []
    current: list[tuple[int, str]] = []
    size = 0

    def flush() -> None:
        nonlocal current, size
        text = "\n".join(t for _, t in current).strip("\n")
        if text.strip():
            pieces.append((current[0][0], current[-1][0], text))
        current, size = [], 0

    for block in _paragraphs(lines):
        block_size = sum(len(t) + 1 for _, t in block)
        if current and size + block_size > options.max_chars:
            flush()
        if block_size <= options.max_chars:
            if current:  # keep the blank line between paragraphs
                current.append((block[0][0] - 1, ""))
            current.extend(block)
            size += block_size
            continue
        for number, text in block:  # an over-long paragraph: fall back to lines
            for part in _split_long_line(text, options.max_chars):
                if current and size + len(part) + 1 > options.max_chars:
                    flush()
                current.append((number, part))
                size += len(part) + 1
    flush()
    return _merge_small_tail(pieces, options)


def _paragraphs(lines: Sequence[tuple[int, str]]) -> Iterator[list[tuple[int, str]]]:
    block: list[tuple[int, str]] = []
    for number, text in lines:
        if text.strip():
            block.append((number, text.rstrip()))
        elif block:
            yield block
            block = []
    if block:
        yield block


def _split_long_line(text: str, limit: int) -> Iterator[str]:
    while len(text) > limit:
        cut = text.rfind(" ", limit // 2, limit)
        cut = cut if cut > 0 else limit
        yield text[:cut].rstrip()
        text = text[cut:].lstrip()
    if text:
        yield text


def _merge_small_tail(pieces: list[tuple[int, int, str]], options: ChunkingOptions) -> list[tuple[int, int, str]]:
    if len(pieces) >= 2:
        start, end, text = pieces[-1]
        p_start, _, p_text = pieces[-2]
        if len(text) < options.min_chars and len(p_text) + len(text) + 2 <= options.max_chars * 1.25:
            pieces[-2:] = [(p_start, end, p_text + "\n\n" + text)]
    return pieces
