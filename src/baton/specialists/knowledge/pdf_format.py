"""PDF text: extraction with ``pypdf`` and per-page chunking.

Only the text layer is read. A scanned PDF without one yields no text and is reported as a
``DocumentLoadError`` (it needs OCR, which Baton does not do) rather than indexed as empty.
Text already extracted elsewhere (one string per page) goes through
:func:`pdf_document_from_pages`, so the rest of the pipeline is the same either way.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

from baton.specialists.knowledge.chunks import Chunk, ChunkingOptions, Document, Section, make_chunks
from baton.specialists.knowledge.errors import DocumentLoadError


def pdf_document_from_pages(source: str, pages: Sequence[str], *, title: str = "") -> Document:
    """A PDF document from pre-extracted page texts (page 1 first)."""
    pages = tuple(str(page) for page in pages)
    return Document(source=source, text="\n\f\n".join(pages), format="pdf", title=title or Path(source).stem, pages=pages)


def read_pdf(path: Path | BinaryIO, source: str) -> Document:
    """Extract the text layer of the PDF at ``path`` (or in a binary stream: the loader
    passes the bytes it read under the folder rules) with pypdf."""
    try:
        from pypdf import PdfReader
        from pypdf.errors import PyPdfError
    except ImportError as exc:  # pragma: no cover - pypdf is a dependency
        raise DocumentLoadError(
            "reading PDF files needs the 'pypdf' package; install it or pass pre-extracted page "
            "texts to pdf_document_from_pages()",
            source=source,
        ) from exc
    try:
        reader = PdfReader(path if hasattr(path, "read") else str(path))
        if reader.is_encrypted and not reader.decrypt(""):
            raise DocumentLoadError(f"{source}: the PDF is encrypted with a password", source=source)
        pages = [page.extract_text() or "" for page in reader.pages]
        title = ""
        if reader.metadata is not None and reader.metadata.title:
            title = str(reader.metadata.title).strip()
    except DocumentLoadError:
        raise
    except (PyPdfError, ValueError, KeyError, TypeError, OSError) as exc:
        raise DocumentLoadError(f"{source}: cannot read PDF: {exc}", source=source) from exc
    if not any(page.strip() for page in pages):
        raise DocumentLoadError(
            f"{source}: the PDF has no text layer (a scanned document needs OCR first)", source=source
        )
    return pdf_document_from_pages(source, pages, title=title)


def chunk_pdf(document: Document, options: ChunkingOptions) -> list[Chunk]:
    pages = document.pages if document.pages is not None else tuple(document.text.split("\f"))
    sections = []
    for number, page in enumerate(pages, start=1):
        lines = [(i + 1, line) for i, line in enumerate(page.splitlines())]
        sections.append(Section((document.title, f"page {number}"), lines, {"page": number}))
    return make_chunks(document.source, document.format, sections, options)
