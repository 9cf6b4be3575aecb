"""Heading-aware sectioning shared by the Markdown and HTML chunkers.

A heading opens a section whose path is the chain of enclosing headings, prefixed by the
document's title (unless the top heading *is* the title), so every chunk says where it
sits: ``("Travel policy", "Meals", "Per diem")``.
"""

from __future__ import annotations

from baton.specialists.knowledge.chunks import Section


class SectionBuilder:
    def __init__(self, document_title: str) -> None:
        self._title = document_title.strip()
        self._stack: list[tuple[int, str]] = []  # (level, heading text)
        self._sections: list[Section] = []
        self._current = Section(self._path(), [])
        self._has_body = False

    def heading(self, level: int, text: str, line_number: int, line_text: str) -> None:
        """Close the current section and open one under ``text`` at ``level`` (1-6)."""
        self._close()
        while self._stack and self._stack[-1][0] >= level:
            self._stack.pop()
        self._stack.append((level, " ".join(text.split())))
        self._current = Section(self._path(), [(line_number, line_text)])
        self._has_body = False

    def line(self, line_number: int, text: str) -> None:
        self._current.lines.append((line_number, text))
        self._has_body = self._has_body or bool(text.strip())

    def pop_last_line(self) -> tuple[int, str] | None:
        """Take back the last line (a Setext heading's text, seen before its underline)."""
        return self._current.lines.pop() if self._current.lines else None  # (rest unaffected)

    def finish(self) -> list[Section]:
        self._close()
        return self._sections

    def _path(self) -> tuple[str, ...]:
        headings = [text for _, text in self._stack if text]
        if self._title and (not headings or headings[0].casefold() != self._title.casefold()):
            headings.insert(0, self._title)
        return tuple(headings)

    def _close(self) -> None:
        """Keep the section unless it is empty or a bare heading (its title lives on in
        the paths of the sections below it)."""
        if self._has_body:
            self._sections.append(self._current)
