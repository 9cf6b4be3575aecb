"""Reading files into ``Document``s and dispatching each format to its chunker.

Formats are chosen by file extension (or named explicitly). Decisions: text is decoded as
UTF-8 (a BOM is dropped); a file that is not valid UTF-8 is read as Latin-1 rather than
refused, and the fallback is recorded in ``metadata["encoding"]``; a file containing NUL
bytes is binary and refused; files over ``max_bytes`` (20 MB by default) are refused
instead of silently truncated. Directory walks skip hidden folders and the usual build and
dependency folders.

Confinement: with ``root`` (always, for ``add_directory``) a file is read only when its
real path — symlinks resolved — lies inside ``root``'s real path; a link pointing out of the
folder (``leak.txt -> /etc/passwd``) is refused with ``DocumentLoadError`` and reported,
never read. Only regular files are read: a FIFO or device named ``*.txt`` would otherwise
block a worker thread (and the index's write lock) forever.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Callable, Iterator

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
_SKIPPED_DIRS = frozenset({"node_modules", "__pycache__", "venv", "site-packages", "dist", "build", "target"})

DEFAULT_MAX_BYTES = 20 * 1024 * 1024

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
    if root is not None and not path.resolve().is_relative_to(Path(root).resolve()):
        raise DocumentLoadError(f"{source}: resolves to a path outside the indexed folder; not read", source=source)
    try:
        info = path.stat()
    except OSError as exc:
        raise DocumentLoadError(f"{source}: cannot read: {exc.strerror or exc}", source=source) from exc
    if not stat.S_ISREG(info.st_mode):
        raise DocumentLoadError(f"{source}: not a regular file (a FIFO, device or socket); not read", source=source)
    size = info.st_size
    if size > max_bytes:
        raise DocumentLoadError(f"{source}: {size} bytes is over the {max_bytes}-byte limit", source=source)
    if fmt == "pdf":
        return read_pdf(path, source)
    raw = path.read_bytes()
    if b"\0" in raw[:8192]:
        raise DocumentLoadError(f"{source}: looks binary (NUL bytes); not indexed", source=source)
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


def iter_document_files(directory: str | Path) -> Iterator[Path]:
    """Supported files under ``directory``, in a stable (sorted) order."""
    directory = Path(directory)
    if not directory.is_dir():
        raise DocumentLoadError(f"{directory}: not a directory", source=str(directory))
    for current, dirs, files in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIPPED_DIRS)
        for name in sorted(files):
            if not name.startswith(".") and detect_format(name) is not None:
                yield Path(current) / name


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
