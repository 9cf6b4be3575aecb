"""HTML to sectioned text with the standard library's ``html.parser``.

Scripts, styles, templates, inline SVG, ``<head>`` (except ``<title>``) and navigation
(``<nav>``) are dropped: they are code or boilerplate, and a script's text in an index is
both noise and an injection vector. Block elements become line breaks, ``<h1>``-``<h6>``
open sections, ``<pre>`` keeps its whitespace, entities are decoded. Line numbers are the
source lines where each piece of text started, so citations point into the HTML file.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

from baton.specialists.knowledge.chunks import Chunk, ChunkingOptions, Document, make_chunks
from baton.specialists.knowledge.sections import SectionBuilder

_SKIP = frozenset({"script", "style", "noscript", "template", "svg", "head", "nav", "iframe", "object", "canvas", "math"})
_BLOCK = frozenset(
    {
        "p", "div", "section", "article", "main", "header", "footer", "aside", "blockquote",
        "ul", "ol", "li", "dl", "dt", "dd", "table", "thead", "tbody", "tr", "figure",
        "figcaption", "form", "fieldset", "details", "summary", "address", "pre", "hr", "br",
    }
)  # fmt: skip
_CELL = frozenset({"td", "th"})
_HEADING = {f"h{n}": n for n in range(1, 7)}
_SPACES = re.compile(r"\s+")


class _TextExtractor(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.items: list[tuple] = []  # ("line", number, text) | ("break",) | ("heading", level, text, number)
        self.title = ""
        self._skip_depth = 0
        self._in_title = False
        self._pre_depth = 0
        self._heading: tuple[int, int, list[str]] | None = None  # (level, line, parts)
        self._line: list[str] = []
        self._line_start = 1

    # -- parser callbacks
    def handle_starttag(self, tag: str, attrs) -> None:
        if tag == "title":
            self._in_title = True
            return
        if tag == "body":  # a document that never closed <head>
            self._skip_depth = 0
            return
        if tag in _SKIP:
            self._skip_depth += 1
            return
        if self._skip_depth:
            return
        if tag in _HEADING:
            self._flush(paragraph=True)
            self._heading = (_HEADING[tag], self.getpos()[0], [])
        elif tag in _BLOCK:
            self._flush(paragraph=tag not in ("br", "li", "tr", "dt", "dd"))
            if tag == "pre":
                self._pre_depth += 1
        elif tag in _CELL:
            self._append(" | " if self._line else "")

    def handle_startendtag(self, tag: str, attrs) -> None:
        if not self._skip_depth and tag in ("br", "hr"):
            self._flush(paragraph=tag == "hr")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
            return
        if self._skip_depth:
            if tag in _SKIP:
                self._skip_depth -= 1
            return
        if tag in _HEADING and self._heading is not None:
            level, line, parts = self._heading
            self._heading = None
            text = _SPACES.sub(" ", "".join(parts)).strip()
            if text:
                self.items.append(("heading", level, text, line))
        elif tag in _BLOCK:
            self._flush(paragraph=tag not in ("li", "tr", "dt", "dd"))
            if tag == "pre":
                self._pre_depth = max(0, self._pre_depth - 1)

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
            return
        if self._skip_depth:
            return
        if self._heading is not None:
            self._heading[2].append(data)
            return
        if self._pre_depth:
            line = self.getpos()[0]
            first, *rest = data.split("\n")
            self._append(first, line)
            for offset, part in enumerate(rest, start=1):
                self._flush(paragraph=False)
                self._append(part, line + offset)
            return
        self._append(_SPACES.sub(" ", data))

    def close(self) -> None:
        super().close()
        self._flush(paragraph=True)

    # -- helpers
    def _append(self, text: str, line: int | None = None) -> None:
        if not text:
            return
        if not self._line:
            if not self._pre_depth:
                text = text.lstrip()
                if not text:
                    return
            self._line_start = line or self.getpos()[0]
        self._line.append(text)

    def _flush(self, *, paragraph: bool) -> None:
        text = "".join(self._line)
        text = text.rstrip() if self._pre_depth else text.strip()
        if text:
            self.items.append(("line", self._line_start, text))
        self._line = []
        if paragraph and self.items and self.items[-1][0] != "break":
            self.items.append(("break",))


def html_title(text: str, fallback: str) -> str:
    parser = _TextExtractor()
    parser.feed(text)
    parser.close()
    title = _SPACES.sub(" ", parser.title).strip()
    if title:
        return title
    for item in parser.items:
        if item[0] == "heading" and item[1] == 1:
            return item[2]
    return fallback


def chunk_html(document: Document, options: ChunkingOptions) -> list[Chunk]:
    parser = _TextExtractor()
    parser.feed(document.text)
    parser.close()
    builder = SectionBuilder(document.title)
    last_line = 0
    for item in parser.items:
        if item[0] == "heading":
            _, level, text, number = item
            builder.heading(level, text, number, text)
            last_line = number
        elif item[0] == "line":
            _, number, text = item
            # several output lines may start on one source line; keep numbers monotonic
            last_line = max(last_line, number)
            builder.line(last_line, text)
        else:
            builder.line(last_line, "")
    return make_chunks(document.source, document.format, builder.finish(), options)
