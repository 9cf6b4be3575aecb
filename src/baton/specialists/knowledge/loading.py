"""Reading files into ``Document``s and dispatching each format to its chunker.

Formats are chosen by file extension (or named explicitly). Decisions: text is decoded as
UTF-8 (a BOM is dropped); a file that is not valid UTF-8 is read as Latin-1 rather than
refused, and the fallback is recorded in ``metadata["encoding"]``; a file containing NUL
bytes is binary and refused; files over ``max_bytes`` (20 MB by default) are refused
instead of silently truncated.

Folders and files are read under ``baton.files``' rules, the ones doctrine uses too: with
``root`` (always, for ``add_directory``) a file is read only when its real path — links
resolved — lies inside ``root``'s real path, opened without following a link that appears
meanwhile; a link pointing out of the folder (``leak.txt -> /etc/passwd``) is refused with
``DocumentLoadError`` (``reason`` ``outside_folder``) and reported, never read. Only regular
files are read, never opened otherwise: a FIFO or device named ``*.txt`` would block a
worker thread (and the index's write lock) forever. Walks skip hidden files and folders and
the usual build and dependency folders, do not follow links to folders, stop at the folder
caps (``FolderLimits``), and report every refusal with its typed ``SkipReason``
(``document_listing``). A file named without ``root`` is the operator's explicit choice
(links followed), still regular files only and capped.
"""

from __future__ import annotations

import dataclasses
import io
import os
from collections.abc import Callable, Iterator
from pathlib import Path

from baton.files import FileRefusedError, FolderLimits, FolderListing, SkipReason, read_file, read_named_file, walk_folder
from baton.specialists.knowledge.chunks import Chunk, ChunkingOptions, Document
from baton.specialists.knowledge.code_format import chunk_code
from baton.specialists.knowledge.errors import DocumentLoadError
from baton.specialists.knowledge.html_format import chunk_html, html_title
from baton.specialists.knowledge.pdf_format import chunk_pdf, read_pdf
from baton.specialists.knowledge.text_formats import chunk_markdown, chunk_plain_text, markdown_title

FORMATS = ("markdown", "text", "html", "pdf", "code")

_EXTENSIONS = {
    ".md": "markdown", ".markdown": "markdown", ".mdx": "markdown",
    ".txt": "text", ".text": "text", ".rst": "text", ".log": "text",
    ".html": "html", ".htm": "html", ".xhtml": "html",
    ".pdf": "pdf",
}  # fmt: skip
_CODE_LANGUAGES = {
    ".py": "python", ".pyi": "python", ".js": "javascript", ".mjs": "javascript", ".jsx": "javascript",
    ".ts": "typescript", ".tsx": "typescript", ".go": "go", ".rs": "rust", ".java": "java",
    ".kt": "kotlin", ".scala": "scala", ".c": "c", ".h": "c", ".cc": "cpp", ".cpp": "cpp",
    ".hpp": "cpp", ".cs": "csharp", ".rb": "ruby", ".php": "php", ".swift": "swift",
    ".sql": "sql", ".sh": "shell", ".bash": "shell", ".r": "r", ".lua": "lua", ".jl": "julia",
    ".yaml": "yaml", ".yml": "yaml", ".toml": "toml",
}  # fmt: skip
DEFAULT_MAX_BYTES = 20 * 1024 * 1024
DEFAULT_LIMITS = FolderLimits(max_file_bytes=DEFAULT_MAX_BYTES)

_CHUNKERS: dict[str, Callable[[Document, ChunkingOptions], list[Chunk]]] = {
    "markdown": chunk_markdown,
    "text": chunk_plain_text,
    "html": chunk_html,
    "pdf": chunk_pdf,
    "code": chunk_code,
}


def detect_format(path: str | Path) -> str | None:
    """The format for a file name by its extension, or None when it is not supported."""
    suffix = Path(path).suffix.lower()
    if suffix in _EXTENSIONS:
        return _EXTENSIONS[suffix]
    return "code" if suffix in _CODE_LANGUAGES else None


def document_from_text(text: str, *, source: str, format: str | None = None, title: str | None = None) -> Document:
    """A document from text in memory. ``format`` defaults to the one ``source``'s extension
    implies, else plain text. (For PDFs, pass page texts to ``pdf_document_from_pages``.)"""
    fmt = format or detect_format(source) or "text"
    if fmt not in FORMATS:
        raise DocumentLoadError(f"unknown document format {fmt!r}; expected one of {FORMATS}", source=source)
    stem = Path(source).stem or source
    metadata: dict[str, object] = {}
    if fmt == "code":
        metadata["language"] = _CODE_LANGUAGES.get(Path(source).suffix.lower(), "")
    if title is None:
        if fmt == "markdown":
            title = markdown_title(text, stem)
        elif fmt == "html":
            title = html_title(text, stem)
        elif fmt == "code":
            title = source
        else:
            title = stem.replace("_", " ").replace("-", " ")
    return Document(source=source, text=text, format=fmt, title=title, metadata=metadata)


def load_document(
    path: str | Path, *, root: str | Path | None = None, format: str | None = None, max_bytes: int = DEFAULT_MAX_BYTES
) -> Document:
    """Read one file. ``source`` becomes its path relative to ``root`` (POSIX separators)
    when given, else the path as passed."""
    path = Path(path)
    source = _source_name(path, root)
    fmt = format or detect_format(path)
    if fmt is None:
        raise DocumentLoadError(f"{source}: unsupported file type {path.suffix or '(none)'!r}", source=source)
    try:
        if root is not None:
            relative = os.path.relpath(os.path.abspath(path), os.path.abspath(root))
            raw, _ = read_file(root, relative, max_bytes=max_bytes)
        else:
            raw, _ = read_named_file(path, max_bytes=max_bytes)
    except FileRefusedError as exc:
        raise DocumentLoadError(f"{source}: {exc.detail}", source=source, reason=exc.reason) from exc
    if fmt == "pdf":
        return read_pdf(io.BytesIO(raw), source)
    if b"\0" in raw[:8192]:
        raise DocumentLoadError(f"{source}: looks binary (NUL bytes); not indexed", source=source, reason=SkipReason.BINARY)
    try:
        text, encoding = raw.decode("utf-8-sig"), "utf-8"
    except UnicodeDecodeError:
        text, encoding = raw.decode("latin-1"), "latin-1"
    document = document_from_text(text, source=source, format=fmt)
    if encoding != "utf-8":
        document = Document(
            document.source, document.text, document.format, document.title, None,
            {**document.metadata, "encoding": encoding},
        )  # fmt: skip
    return document


def chunk_document(document: Document, options: ChunkingOptions | None = None) -> list[Chunk]:
    """Split a document into chunks with its format's chunker."""
    chunker = _CHUNKERS.get(document.format)
    if chunker is None:
        raise DocumentLoadError(f"unknown document format {document.format!r}", source=document.source)
    return chunker(document, options or ChunkingOptions())


def document_listing(directory: str | Path, *, max_bytes: int = DEFAULT_MAX_BYTES,
                     limits: FolderLimits = DEFAULT_LIMITS) -> FolderListing:
    """The supported files under ``directory`` that may be read (``files``, in path order),
    and what was skipped and why (``skipped``); reads no content."""
    try:
        return walk_folder(directory, accept=lambda name: detect_format(name) is not None,
                           limits=dataclasses.replace(limits, max_file_bytes=max_bytes))
    except FileRefusedError as exc:
        raise DocumentLoadError(f"{directory}: {exc.detail}", source=str(directory), reason=exc.reason) from exc


def iter_document_files(directory: str | Path) -> Iterator[Path]:
    """Supported files under ``directory`` that may be read, in a stable (sorted) order
    (``document_listing`` also says what was skipped)."""
    for entry in document_listing(directory).files:
        yield Path(directory) / entry.relative


def _source_name(path: Path, root: str | Path | None) -> str:
    """The path relative to ``root`` as the folder shows it (a link keeps its own name), else
    as resolved, else the path as passed."""
    if root is not None:
        for relative in (
            lambda: Path(os.path.abspath(path)).relative_to(os.path.abspath(root)),
            lambda: path.resolve().relative_to(Path(root).resolve()),
        ):
            try:
                return relative().as_posix()
            except ValueError:
                pass
    return path.as_posix()
