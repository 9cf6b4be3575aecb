"""Source-code chunking.

Python is split along its top-level ``def``/``class`` statements using ``ast`` (decorators
and the comment block right above a definition belong to it; a class too big for one chunk
is split per method, each chunk's path naming the class and the method). Code between
definitions (imports, constants, the module docstring) forms "module" sections. A file that
does not parse, and every other language, is split into blank-line-separated blocks.
"""

from __future__ import annotations

import ast

from baton.specialists.knowledge.chunks import Chunk, ChunkingOptions, Document, Section, make_chunks

_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def chunk_code(document: Document, options: ChunkingOptions) -> list[Chunk]:
    lines = document.text.splitlines()
    sections = None
    if document.metadata.get("language") == "python":
        sections = _python_sections(document, lines, options)
    if sections is None:
        numbered = [(i + 1, line) for i, line in enumerate(lines)]
        sections = [Section((document.title,), numbered)]
    return make_chunks(document.source, document.format, sections, options)


def _python_sections(document: Document, lines: list[str], options: ChunkingOptions) -> list[Section] | None:
    try:
        tree = ast.parse(document.text)
    except (SyntaxError, ValueError):
        return None
    base = (document.title,)
    sections: list[Section] = []
    cursor = 1  # next line not yet assigned to a section

    def numbered(start: int, end: int) -> list[tuple[int, str]]:
        return [(n, lines[n - 1]) for n in range(start, end + 1)]

    for node in tree.body:
        if not isinstance(node, _DEFINITIONS):
            continue
        start = _definition_start(node, lines, floor=cursor)
        if start > cursor:
            sections.append(Section(base + ("module",), numbered(cursor, start - 1)))
        end = node.end_lineno or node.lineno
        label = _label(node)
        body_size = sum(len(lines[n - 1]) + 1 for n in range(start, end + 1))
        if isinstance(node, ast.ClassDef) and body_size > options.max_chars:
            sections.extend(_class_sections(node, lines, base + (label,), start, end, numbered))
        else:
            sections.append(Section(base + (label,), numbered(start, end)))
        cursor = end + 1
    if cursor <= len(lines):
        sections.append(Section(base + ("module",), numbered(cursor, len(lines))))
    return sections


def _class_sections(node: ast.ClassDef, lines, path, start, end, numbered) -> list[Section]:
    sections: list[Section] = []
    cursor = start
    for child in node.body:
        if not isinstance(child, _DEFINITIONS):
            continue
        child_start = _definition_start(child, lines, floor=cursor)
        if child_start > cursor:
            sections.append(Section(path, numbered(cursor, child_start - 1)))
        child_end = child.end_lineno or child.lineno
        sections.append(Section(path + (_label(child),), numbered(child_start, child_end)))
        cursor = child_end + 1
    if cursor <= end:
        sections.append(Section(path, numbered(cursor, end)))
    return sections


def _definition_start(node, lines: list[str], *, floor: int) -> int:
    start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", ())])
    while start - 1 >= floor and lines[start - 2].lstrip().startswith("#"):
        start -= 1
    return start


def _label(node) -> str:
    if isinstance(node, ast.ClassDef):
        return f"class {node.name}"
    prefix = "async def" if isinstance(node, ast.AsyncFunctionDef) else "def"
    return f"{prefix} {node.name}"
